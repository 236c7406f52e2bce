// Bundles the CUDA test suite and benchmark into .gpu/ as single ES modules: the GPU machine has Node (carried) but
// no node_modules. vitest is replaced by test/gpu/vitest-shim.ts (node:test underneath).
import { build } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const common = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  alias: { vitest: join(root, 'test', 'gpu', 'vitest-shim.ts') },
  // Bundled CommonJS dependencies call require(); an ES module has none of its own.
  banner: { js: "import { createRequire as __quorumCreateRequire } from 'node:module'; const require = __quorumCreateRequire(import.meta.url);" },
  logLevel: 'warning',
};
await build({ ...common, entryPoints: [join(root, 'test', 'cuda.test.ts')], outfile: join(root, '.gpu', 'cuda.test.mjs') });
await build({ ...common, entryPoints: [join(root, 'bench', 'cuda.ts')], outfile: join(root, '.gpu', 'bench-cuda.mjs') });
console.log('bundle-gpu: .gpu/cuda.test.mjs and .gpu/bench-cuda.mjs written');
