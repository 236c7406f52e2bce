// The native boundary has one shape (docs/building.md, Bindings): each N-API file that registers exports has one
// TypeScript module of the same name in lib/bindings/ that types every name it registers, those modules are the only
// callers of the module loaders, and lib/native.ts (loading and capability checks) names no method.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { packageRoot } from '../lib/native.js';

const napi = join(packageRoot, 'native', 'napi');
const bindings = join(packageRoot, 'lib', 'bindings');
const read = (...p: string[]) => readFileSync(join(...p), 'utf8');
const libFiles = (dir: string): string[] =>
  readdirSync(join(packageRoot, dir), { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? libFiles(join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : []));

describe('native bindings', () => {
  it('every N-API file that registers exports has its binding module, which types each name it registers', () => {
    const missing: string[] = [];
    for (const file of readdirSync(napi).filter((f) => f.endsWith('.cc'))) {
      const names = [...read(napi, file).matchAll(/exports\.Set\("(\w+)"/g)].map((m) => m[1]!);
      if (names.length === 0) continue;
      // addon_core.cc registers the tensor constructor that tensor_object.cc defines.
      const stem = file === 'addon_core.cc' ? 'tensor_object' : file.slice(0, -3);
      let ts: string;
      try {
        ts = read(bindings, `${stem}.ts`);
      } catch {
        missing.push(`lib/bindings/${stem}.ts (for ${file})`);
        continue;
      }
      // A member of its interface, or (the CUDA module's kernels) a name picked from the core's binding types.
      for (const n of names) if (!new RegExp(`^\\s+${n}[(:]|'${n}'`, 'm').test(ts)) missing.push(`${stem}.ts: ${n} (registered by ${file})`);
    }
    expect(missing).toEqual([]);
    // And no binding module without its N-API file.
    for (const f of readdirSync(bindings)) expect(readdirSync(napi), f).toContain(f.replace(/[.]ts$/, '.cc'));
  });

  it('only lib/bindings/ calls the module loaders', () => {
    const callers = libFiles('lib')
      .filter((f) => !f.startsWith(join('lib', 'bindings')) && f !== join('lib', 'native.ts'))
      .filter((f) => /\b(coreAddon|torchAddon|faissAddon|loadedFaissAddon|loadedTorchAddon|optionalCudaAddon|loadAddon)\(/.test(read(packageRoot, f)));
    expect(callers).toEqual([]);
  });

  it("lib/native.ts names no method (DPR-MUF, CAME, ROM): its code is loading and capability checks", () => {
    const code = read(packageRoot, 'lib', 'native.ts').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
    expect(code.match(/\b(muf|came|rom|MlpEnsemble|Retriever)\w*/gi) ?? []).toEqual([]);
  });
});
