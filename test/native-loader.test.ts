// The native modules' loader: the package root, and the command a missing module's error names.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { buildCommand, packageRoot } from '../lib/native.js';

describe('native module loading', () => {
  it('finds the package root by its name', () => {
    expect(spawnSync('node', ['-p', `require(${JSON.stringify(join(packageRoot, 'package.json'))}).name`]).stdout.toString().trim()).toBe('quorum-retrieval');
  });

  it('names the Debian packages and the build of each missing module in an installed package', () => {
    const where = { root: '/srv/app/node_modules/quorum-retrieval', checkout: false };
    expect(buildCommand('quorum_faiss', where)).toBe(
      'sudo apt-get install -y --no-install-recommends build-essential cmake python3 libfaiss-dev libopenblas-dev && cd /srv/app/node_modules/quorum-retrieval && npx --yes cmake-js@8 compile --out build',
    );
    expect(buildCommand('quorum_torch', where)).toContain('libtorch-dev && cd /srv/app/node_modules/quorum-retrieval && npx --yes cmake-js@8');
    expect(buildCommand('quorum_core', where)).toMatch(/build-essential python3 && cd \S+ && npx --yes node-gyp rebuild$/);
    // The CUDA module's hint names its own toolchain (nvcc) and the option that turns it on, not libtorch.
    const cuda = buildCommand('quorum_cuda', where);
    expect(cuda).toContain('nvidia-cuda-toolkit');
    expect(cuda).not.toContain('libtorch');
    expect(cuda).toMatch(/cmake-js@8 configure --out build --CDQUORUM_CUDA=ON && npx --yes cmake-js@8 build --out build$/);
  });

  it('a QUORUM_ISA or QUORUM_THREADS the core cannot use gives one process warning each, and the defaults', () => {
    const run = (env: Record<string, string>) =>
      spawnSync(process.execPath, ['--import', 'tsx', '-e', `import('${join(packageRoot, 'lib', 'index.ts')}').then((q) => console.log(JSON.stringify(q.capabilities())))`], {
        cwd: packageRoot,
        encoding: 'utf8',
        env: { ...process.env, QUORUM_ISA: '', QUORUM_THREADS: '', ...env },
      });
    const base = JSON.parse(run({ QUORUM_ISA: 'scalar', QUORUM_THREADS: '1' }).stdout) as { isa: string; threads: number; availableIsas: string[] };
    expect([base.isa, base.threads]).toEqual(['scalar', 1]);
    const bad = run({ QUORUM_ISA: 'avx1024', QUORUM_THREADS: 'two' });
    const caps = JSON.parse(bad.stdout) as { isa: string; threads: number };
    expect(caps.isa).toBe(base.availableIsas[0]);
    expect(bad.stderr).toContain(`QUORUM_ISA=avx1024 is not a kernel variant this CPU runs (available: ${base.availableIsas.join(', ')}); using ${caps.isa}`);
    expect(bad.stderr).toContain(`QUORUM_THREADS=two is not a positive integer; using ${caps.threads} threads`);
    expect(run({ QUORUM_ISA: 'scalar', QUORUM_THREADS: '1' }).stderr).not.toContain('QUORUM_ENV');
    expect(run({}).stderr).not.toContain('QUORUM_ENV'); // set but empty: unset
  });

  it('in a source checkout, the full native build', () => {
    expect(buildCommand('quorum_torch', { root: '/src/quorum', checkout: true })).toBe('cd /src/quorum && bash scripts/bootstrap.sh && npm run build:native');
  });

  it('in a source checkout, the build that makes a module the default build leaves out', () => {
    const checkout = { root: '/src/quorum', checkout: true };
    expect(buildCommand('quorum_cuda', checkout)).toBe('cd /src/quorum && bash scripts/bootstrap.sh && npm run build:cuda');
    expect(buildCommand('quorum_baselines', checkout)).toMatch(/npm run build:bench$/);
    expect(buildCommand('quorum_torch_baselines', checkout)).toMatch(/npm run build:bench$/);
    expect(buildCommand('quorum_torch_test', checkout)).toMatch(/npm run build:test$/);
  });

  it('a module that is missing is ERR_BACKEND_UNAVAILABLE with that command, and the process goes on', () => {
    // A child whose torch module path points nowhere and whose package root has no build of it.
    const script = `
      import('${join(packageRoot, 'lib', 'native.ts')}').then((n) => {
        try { n.loadAddon('quorum_missing', 'QUORUM_MISSING_PATH'); console.log('loaded'); }
        catch (e) { console.log(e.code + ' | ' + e.message); }
      });`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { cwd: packageRoot, env: { ...process.env, QUORUM_MISSING_PATH: '/nonexistent/x.node' } });
    const out = r.stdout.toString();
    expect(out).toContain('ERR_BACKEND_UNAVAILABLE | native module quorum_missing.node not found (tried /nonexistent/x.node');
    expect(out).toContain('Build it with: cd ');
    expect(r.status).toBe(0);
  });
});

describe('packing', () => {
  it('npm pack (prepack) refuses a package without the prebuilt core and faiss module, naming the command that makes it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'quorum-pack-'));
    try {
      mkdirSync(join(dir, 'scripts'));
      copyFileSync(join(packageRoot, 'scripts', 'check-prebuilds.cjs'), join(dir, 'scripts', 'check-prebuilds.cjs'));
      const check = () => spawnSync(process.execPath, [join(dir, 'scripts', 'check-prebuilds.cjs')], { encoding: 'utf8' });
      const without = check();
      expect([without.status, without.stderr.trim()]).toEqual([1, expect.stringMatching(/^quorum: no prebuilt binary in prebuilds\/: run `npm run build:prebuild`.*before npm pack/)]);
      mkdirSync(join(dir, 'prebuilds', 'linux-x64'), { recursive: true });
      writeFileSync(join(dir, 'prebuilds', 'linux-x64', 'quorum_core.node'), '');
      // The core alone is not enough: DenseIndex ships prebuilt too.
      const coreOnly = check();
      expect([coreOnly.status, coreOnly.stderr.trim()]).toEqual([1, expect.stringMatching(/^quorum: prebuilds\/ lacks linux-x64\/quorum_faiss\.node: run `npm run build:prebuild`/)]);
      writeFileSync(join(dir, 'prebuilds', 'linux-x64', 'quorum_faiss.node'), '');
      const withIt = check();
      expect([withIt.status, withIt.stdout.trim()]).toEqual([0, 'quorum: packing with prebuilt linux-x64/quorum_core.node, linux-x64/quorum_faiss.node']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.prepack).toMatch(/^node scripts\/check-prebuilds\.cjs && /);
  });
});

