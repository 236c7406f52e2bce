// The package's entry points, read from package.json's "exports" (the one list): each subpath with the source file
// its ES-module build comes from, so tests can reach every public name.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { packageRoot } from '../lib/native.js';

export interface EntryPoint {
  /** The specifier a user imports: 'quorum-retrieval' or 'quorum-retrieval/<subpath>'. */
  specifier: string;
  /** The TypeScript source under lib/. */
  source: string;
}

type Conditions = { import: { default: string } };

export const entryPoints: EntryPoint[] = Object.entries(
  (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { exports: Record<string, Conditions | string> }).exports,
)
  .filter((e): e is [string, Conditions] => typeof e[1] === 'object')
  .map(([sub, c]) => ({
    specifier: sub === '.' ? 'quorum-retrieval' : `quorum-retrieval/${sub.slice(2)}`,
    source: join(packageRoot, c.import.default.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts')),
  }));

/** Every public name with its value, from every entry point (a name exported twice appears once). */
export async function publicNames(): Promise<Map<string, { value: unknown; specifier: string }>> {
  const out = new Map<string, { value: unknown; specifier: string }>();
  for (const e of entryPoints) {
    const m = (await import(e.source)) as Record<string, unknown>;
    for (const [name, value] of Object.entries(m)) if (!out.has(name)) out.set(name, { value, specifier: e.specifier });
  }
  return out;
}
