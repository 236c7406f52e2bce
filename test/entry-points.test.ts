// The public surface (docs/migration.md): a small root export for servers, every subpath loadable from the sources,
// the ES modules and the CommonJS build in dist/, and every name of the package listed in the migration page.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import ts from 'typescript';
import { describe, expect, it } from 'vitest';

import { packageRoot } from '../lib/native.js';
import { entryPoints } from './entries.js';

function exportedNames(source: string): string[] {
  const parsed = ts.parseJsonConfigFileContent(ts.readConfigFile(join(packageRoot, 'tsconfig.json'), ts.sys.readFile).config, ts.sys, packageRoot);
  const program = ts.createProgram([source], parsed.options);
  const checker = program.getTypeChecker();
  return checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(source)!)!).map((s) => s.name);
}

describe('entry points', () => {
  it('the root export holds at most about 80 names (values and types)', () => {
    const root = entryPoints.find((e) => e.specifier === 'quorum-retrieval')!;
    const names = exportedNames(root.source);
    expect(names.length).toBeGreaterThan(40);
    expect(names.length).toBeLessThanOrEqual(80);
  }, 60_000);

  it('every subpath is listed with its names in docs/migration.md', () => {
    const page = readFileSync(join(packageRoot, 'docs', 'migration.md'), 'utf8');
    const missing: string[] = [];
    for (const e of entryPoints) {
      expect(page, e.specifier).toContain(e.specifier);
      for (const n of exportedNames(e.source)) if (!page.includes('`' + n + '`')) missing.push(`${e.specifier}: ${n}`);
    }
    expect(missing).toEqual([]);
  }, 60_000);

  it('every entry point loads from the sources, and from dist/ as ES module and CommonJS with the same names', async () => {
    const require = createRequire(import.meta.url);
    for (const e of entryPoints) {
      const src = Object.keys(await import(pathToFileURL(e.source).href)).sort();
      expect(src.length, e.specifier).toBeGreaterThan(0);
      const esm = e.source.replace(join(packageRoot, 'lib'), join(packageRoot, 'dist', 'lib')).replace(/\.ts$/, '.js');
      const cjs = e.source.replace(join(packageRoot, 'lib'), join(packageRoot, 'dist', 'cjs')).replace(/\.ts$/, '.js');
      if (!existsSync(esm) || !existsSync(cjs)) continue; // dist/ is built by npm run build:ts (scripts/run.sh does)
      expect(Object.keys(await import(pathToFileURL(esm).href)).sort(), `${e.specifier} (ESM)`).toEqual(src);
      expect(Object.keys(require(cjs) as object).filter((k) => k !== '__esModule').sort(), `${e.specifier} (CommonJS)`).toEqual(src);
    }
  }, 60_000);
});
