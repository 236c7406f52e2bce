// Run by `npm pack` (prepack) and `npm publish` (prepublishOnly): a package without the core's prebuilt binary would
// make every install compile it (README: the core ships prebuilt), so packing refuses instead of writing such a
// tarball silently. `npm run build:prebuild` makes prebuilds/<platform>-<arch>/.
'use strict';
const { existsSync, readdirSync } = require('node:fs');
const { join } = require('node:path');

const dir = join(__dirname, '..', 'prebuilds');
const found = existsSync(dir)
  ? readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .flatMap((d) => readdirSync(join(dir, d.name)).filter((f) => f.endsWith('.node')).map((f) => `${d.name}/${f}`))
  : [];
if (found.length === 0) {
  console.error('quorum: no prebuilt binary in prebuilds/: run `npm run build:prebuild` (on each platform to ship) before npm pack or npm publish');
  process.exit(1);
}
console.log(`quorum: packing with prebuilt ${found.join(', ')}`);
