// The layout map in docs/building.md stays true: its first code block must give every lib/ folder and every native/
// folder a line of its own ("  methods/muf/   ..."), name every top-level lib/*.ts module, and give every kernel
// family (native/kernels/<family>.h, bodies aside) a line of its own under kernels/ ("    dense_dot   ...");
// and nothing it names that way may be gone from the tree. Exits 1 listing every mismatch.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const doc = readFileSync(join(root, 'docs/building.md'), 'utf8');
const block = /```\n([\s\S]*?)```/.exec(doc)?.[1];
if (!block) throw new Error('docs/building.md has no layout block');

// The block's sections: a line at column 0 opens one ("lib/ ...", "native/ ..."); indented lines belong to it.
const sections = new Map();
let current = '';
for (const line of block.split('\n')) {
  if (/^\S/.test(line)) current = line.split(/\s/)[0];
  else (sections.get(current) ?? sections.set(current, []).get(current)).push(line);
}
const lines = (name) => sections.get(name) ?? [];
const entries = (name, indent) =>
  new Set(lines(name).flatMap((l) => (l.startsWith(' '.repeat(indent)) && l[indent] !== ' ' ? [l.slice(indent).split(/\s/)[0]] : [])));

const dirsUnder = (dir, deep) =>
  readdirSync(join(root, dir)).flatMap((n) => {
    const rel = join(dir, n);
    if (!statSync(join(root, rel)).isDirectory()) return [];
    return [rel, ...(deep ? dirsUnder(rel, deep) : [])];
  });

const problems = [];
const libEntries = entries('lib/', 2);
const libDirs = dirsUnder('lib', true).map((d) => d.slice('lib/'.length) + '/');
for (const d of libDirs) if (!libEntries.has(d)) problems.push(`lib/${d} has no line of its own`);
for (const e of libEntries) if (e.endsWith('/') && !libDirs.includes(e)) problems.push(`the map names lib/${e}, which is gone`);
const libText = lines('lib/').join('\n');
const modules = readdirSync(join(root, 'lib')).filter((n) => n.endsWith('.ts'));
for (const m of modules) if (!new RegExp(`(^|\\s)${m.replace('.', '[.]')}(\\s|$)`, 'm').test(libText)) problems.push(`lib/${m} is not named`);
// The lines that list top-level modules start with one ("  tensor.ts dense.ts ..."): each .ts name on them must exist.
for (const l of lines('lib/').filter((x) => /^  [\w-]+[.]ts\s/.test(x)))
  for (const m of l.match(/(?<=^|\s)[\w-]+[.]ts(?=\s|$)/g) ?? []) if (!modules.includes(m)) problems.push(`the map names lib/${m}, which is gone`);

const nativeEntries = entries('native/', 2);
const nativeDirs = dirsUnder('native', false).map((d) => d.slice('native/'.length) + '/');
for (const d of nativeDirs) if (!nativeEntries.has(d)) problems.push(`native/${d} has no line of its own`);
for (const e of nativeEntries) if (e.endsWith('/') && !nativeDirs.includes(e)) problems.push(`the map names native/${e}, which is gone`);
const families = readdirSync(join(root, 'native/kernels'))
  .filter((n) => n.endsWith('.h') && !n.endsWith('_body.h'))
  .map((n) => n.slice(0, -2));
const familyLines = entries('native/', 4);
for (const f of families) if (!familyLines.has(f)) problems.push(`kernel family ${f} (native/kernels/${f}.h) has no line of its own`);
for (const f of familyLines) if (/^\w+$/.test(f) && !families.includes(f)) problems.push(`the map names kernel family ${f}, which is gone`);

if (problems.length) {
  console.error(`check-layout-map: docs/building.md's layout map is out of date:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(`layout map: ${libDirs.length} lib/ folders, ${modules.length} lib/ modules, ${nativeDirs.length} native/ folders, ${families.length} kernel families, all named`);
