// Run by `npm pack` (prepack) and `npm publish` (prepublishOnly): a package without the prebuilt binaries would make
// every install compile the core and leave DenseIndex to a compile against faiss (README: they ship prebuilt), so
// packing refuses instead of writing such a tarball silently. `npm run build:prebuild` makes
// prebuilds/<platform>-<arch>/quorum_core.node and quorum_faiss.node.
'use strict';
const { existsSync, readdirSync } = require('node:fs');
const { join } = require('node:path');

const dir = join(__dirname, '..', 'prebuilds');
const found = existsSync(dir)
  ? readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .flatMap((d) => readdirSync(join(dir, d.name)).filter((f) => f.endsWith('.node')).map((f) => `${d.name}/${f}`))
      .sort()
  : [];
const shipped = ['quorum_core.node', 'quorum_faiss.node'];
const platforms = [...new Set(found.map((f) => f.split('/')[0]))];
const incomplete = platforms.flatMap((p) => shipped.filter((m) => !found.includes(`${p}/${m}`)).map((m) => `${p}/${m}`));
if (found.length === 0 || incomplete.length > 0) {
  const what = found.length === 0 ? 'no prebuilt binary in prebuilds/' : `prebuilds/ lacks ${incomplete.join(', ')}`;
  console.error(`quorum: ${what}: run \`npm run build:prebuild\` (on each platform to ship) before npm pack or npm publish`);
  process.exit(1);
}
console.log(`quorum: packing with prebuilt ${found.join(', ')}`);
