// npm's install step. The published package loads its core (and DenseIndex's faiss module) from prebuilds/ and needs
// nothing here; where no prebuilt core matches this platform, node-gyp-build compiles the core from native/ (a C++
// toolchain and python3 needed). A source
// checkout (it has bench/, which the package leaves out) builds everything with `npm run build` instead.
'use strict';
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const { spawnSync } = require('node:child_process');

const root = join(__dirname, '..');
if (existsSync(join(root, 'bench'))) process.exit(0);
const platform = `${process.platform}-${process.arch}`;
if (existsSync(join(root, 'prebuilds', platform, 'quorum_core.node'))) process.exit(0);
const needs = 'a C++17 compiler, make and python3 (Debian / Ubuntu: sudo apt-get install build-essential python3)';
// One line on the platforms that never ship prebuilt: what DenseIndex needs there (docs/building.md#other-platforms).
const faiss = {
  darwin: 'DenseIndex then needs faiss from Homebrew (brew install faiss) and a cmake-js build',
  win32: 'DenseIndex then needs faiss from vcpkg (vcpkg install faiss) and a cmake-js build',
}[process.platform];
console.error(
  `quorum: no prebuilt core for ${platform} (prebuilt: linux-x64, linux-arm64); compiling it from native/, which needs ${needs}` +
    (faiss ? `; ${faiss}` : ''),
);
// Build from source outright: node-gyp-build would otherwise take any .node it finds as the prebuild.
const env = { ...process.env, npm_config_build_from_source: 'true' };
const result = spawnSync(process.execPath, [require.resolve('node-gyp-build/bin.js')], { cwd: root, stdio: 'inherit', env });
if (result.status !== 0) console.error(`quorum: building the core for ${platform} failed; it needs ${needs}. The rest of the install is unaffected.`);
process.exit(result.status ?? 1);
