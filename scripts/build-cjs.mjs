// The CommonJS form of the package, next to tsc's ES modules in dist/lib: every module of lib/ transpiled to CommonJS
// one for one (esbuild, no bundling: the entry points share one copy of each module, so a Tensor made through one
// subpath is the same class in every other) and the declaration tree copied beside it. dist/cjs/package.json says
// "type": "commonjs", so Node runs the bundle as CommonJS and TypeScript reads the copied .d.ts files as CommonJS
// declarations (a require() of the package type-checks against them).
import { build } from 'esbuild';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const esm = join(root, 'dist', 'lib');
const out = join(root, 'dist', 'cjs');
if (!existsSync(join(esm, 'index.d.ts'))) {
  console.error('build-cjs: dist/lib/index.d.ts is missing; run tsc first (npm run build:ts)');
  process.exit(1);
}
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const sources = readdirSync(join(root, 'lib'), { recursive: true, withFileTypes: true })
  .filter((e) => e.isFile() && e.name.endsWith('.ts'))
  .map((e) => join(e.parentPath, e.name));
await build({
  entryPoints: sources,
  outdir: out,
  outbase: join(root, 'lib'),
  bundle: false,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  sourcemap: true,
  // The sources locate the package root and load addons from import.meta.url: in CommonJS, the module's own file.
  define: { 'import.meta.url': '__quorumModuleUrl' },
  banner: { js: "const __quorumModuleUrl = require('node:url').pathToFileURL(__filename).href;" },
  logLevel: 'warning',
});

cpSync(esm, out, { recursive: true, filter: (src) => !/\.js(\.map)?$/.test(src) });
writeFileSync(join(out, 'package.json'), JSON.stringify({ type: 'commonjs' }, null, 2) + '\n');
console.log(`build-cjs: ${sources.length} CommonJS modules and their declarations written to dist/cjs`);
