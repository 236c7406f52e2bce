// The brief's "public API documented with TSDoc": every symbol an entry point exports (package.json "exports"), every public member of an
// exported class and every field of an exported interface carries a doc comment. Read with the TypeScript compiler,
// so a re-export or an alias counts where it is declared.
import { join } from 'node:path';

import ts from 'typescript';
import { expect, it } from 'vitest';

import { packageRoot } from '../lib/native.js';
import { entryPoints } from './entries.js';

interface Audit {
  checked: number;
  undocumented: string[];
}

function auditExports(): Audit {
  const parsed = ts.parseJsonConfigFileContent(ts.readConfigFile(join(packageRoot, 'tsconfig.json'), ts.sys.readFile).config, ts.sys, packageRoot);
  const program = ts.createProgram(entryPoints.map((e) => e.source), parsed.options);
  const checker = program.getTypeChecker();
  const out: Audit = { checked: 0, undocumented: [] };
  const seen = new Set<ts.Symbol>();
  const where = (d: ts.Node) => `${d.getSourceFile().fileName.slice(packageRoot.length + 1)}:${d.getSourceFile().getLineAndCharacterOfPosition(d.getStart()).line + 1}`;
  const check = (symbol: ts.Symbol | undefined, label: string, node: ts.Node) => {
    if (!symbol || seen.has(symbol)) return;
    seen.add(symbol);
    out.checked++;
    const internal = symbol.getJsDocTags(checker).some((t) => t.name === 'internal');
    if (!internal && !ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim()) out.undocumented.push(`${where(node)} ${label}`);
  };
  const exports = entryPoints.flatMap((e) => checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(e.source)!)!));
  for (const exported of exports) {
    const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    const decl = symbol.declarations?.[0];
    if (!decl) continue;
    check(symbol, exported.name, decl);
    if (ts.isClassDeclaration(decl)) {
      for (const m of decl.members) {
        if (!m.name || ts.isPrivateIdentifier(m.name)) continue;
        if (ts.getCombinedModifierFlags(m) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) continue;
        check(checker.getSymbolAtLocation(m.name), `${exported.name}.${m.name.getText()}`, m);
      }
    } else if (ts.isInterfaceDeclaration(decl)) {
      for (const m of decl.members) if (m.name) check(checker.getSymbolAtLocation(m.name), `${exported.name}.${m.name.getText()}`, m);
    }
  }
  return out;
}

it('every export, public class member and interface field of every entry point has a doc comment', () => {
  const { checked, undocumented } = auditExports();
  expect(checked).toBeGreaterThan(1000);
  expect(undocumented).toEqual([]);
}, 60_000);
