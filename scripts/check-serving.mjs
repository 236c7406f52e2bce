// The serving classes as a server gets them: the import closure of each, computed from the built package (dist/lib,
// as `npm pack` ships it) by esbuild's bundler, must hold no training, tools, libtorch-model, process-group or lab
// module (the patterns of scripts/layers.cjs, which the source-level layer check uses too). Prints each closure's
// size; exits 1 naming the first chain that reaches a forbidden module. Run after `npm run build:ts`.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { serving, training, tools, libtorchSide } = createRequire(import.meta.url)('./layers.cjs');
const forbidden = [training, tools, libtorchSide].map((p) => new RegExp(p));
const servers = {
  MufServer: 'lib/methods/muf/serve.ts',
  CameServer: 'lib/methods/came/serve.ts',
  RomServer: 'lib/methods/rom/serve.ts',
  ServingEncoder: 'lib/models/serving-encoder.ts',
};
for (const source of Object.values(servers))
  if (!new RegExp(serving).test(source)) throw new Error(`${source} is not a serving module in scripts/layers.cjs`);

const built = (source) => join(root, 'dist', source.replace(/[.]ts$/, '.js'));
const asSource = (file) => relative(join(root, 'dist'), join(root, file)).replace(/[.]js$/, '.ts');
let failed = false;
for (const [name, source] of Object.entries(servers)) {
  const entry = built(source);
  if (!existsSync(entry)) {
    console.error(`check-serving: ${relative(root, entry)} is missing (run npm run build:ts)`);
    process.exit(1);
  }
  // Only the package's own modules are followed: npm packages and native addons stay outside the closure.
  const { metafile } = await build({ entryPoints: [entry], bundle: true, write: false, metafile: true, platform: 'node', format: 'esm', packages: 'external', external: ['*.node'], logLevel: 'silent', absWorkingDir: root });
  const modules = Object.keys(metafile.inputs).map(asSource);
  const bad = modules.filter((m) => forbidden.some((re) => re.test(m)));
  // The chain from the server to the first forbidden module, for the message.
  const chain = (target) => {
    const by = new Map(Object.entries(metafile.inputs).map(([f, v]) => [asSource(f), v.imports.map((i) => asSource(i.path))]));
    const prev = new Map([[source, null]]);
    const queue = [source];
    while (queue.length) {
      const m = queue.shift();
      if (m === target) break;
      for (const n of by.get(m) ?? []) if (!prev.has(n)) prev.set(n, m), queue.push(n);
    }
    const path = [];
    for (let m = target; m; m = prev.get(m)) path.unshift(m);
    return path.join(' -> ');
  };
  if (bad.length) {
    failed = true;
    console.error(`check-serving: ${name} (${source}) reaches ${bad.length} forbidden module(s): ${chain(bad[0])}`);
  } else console.log(`${name}: ${modules.length} modules of the package, none of training, tools, libtorch models or the lab`);
}
process.exit(failed ? 1 : 0);
