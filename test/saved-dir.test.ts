// The one reader of saved directories (lib/io/saved-dir.ts) that the retriever, MUF, CAME and ROM loaders share.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { readSavedCard, savedFile, writeSavedCard, type SavedFormat } from '../lib/io/saved-dir.js';
import { code as codeOf } from './helpers.js';

const root = mkdtempSync(join(tmpdir(), 'quorum-saved-dir-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const kind: SavedFormat = { card: 'thing.json', format: 'quorum-thing', version: 3, what: 'a thing directory' };

function dirWith(name: string, text: string): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'thing.json'), text);
  return dir;
}

describe('saved directories', () => {
  it('writes the card with format and version first, and reads it back', () => {
    const dir = join(root, 'ok');
    writeSavedCard(dir, kind, { weights: 'w.safetensors', n: 2 });
    const text = readFileSync(join(dir, 'thing.json'), 'utf8');
    expect(Object.keys(JSON.parse(text))).toEqual(['format', 'version', 'weights', 'n']);
    expect(text.endsWith('\n')).toBe(true);
    const { card, path } = readSavedCard<{ weights: string; n: number }>(dir, kind);
    expect(card).toEqual({ format: 'quorum-thing', version: 3, weights: 'w.safetensors', n: 2 });
    expect(path).toBe(join(dir, 'thing.json'));
    writeSavedCard(join(root, 'compact'), kind, { ids: ['a'] }, 0);
    expect(readFileSync(join(root, 'compact', 'thing.json'), 'utf8')).toBe('{"format":"quorum-thing","version":3,"ids":["a"]}\n');
  });

  it('refuses what is not this kind of directory, in the same words for every kind', () => {
    expect(codeOf(() => readSavedCard(join(root, 'absent'), kind))).toBe('ERR_IO');
    expect(codeOf(() => readSavedCard('', kind))).toBe('ERR_IO');
    expect(codeOf(() => readSavedCard(5 as never, kind))).toBe('ERR_ARG');
    expect(() => readSavedCard(join(root, 'absent'), kind)).toThrow(/is not a thing directory \(no thing\.json\)/);
    expect(codeOf(() => readSavedCard(dirWith('other', '{"format":"quorum-other","version":3}'), kind))).toBe('ERR_FORMAT');
    expect(() => readSavedCard(dirWith('other2', '{"format":"quorum-other","version":3}'), kind)).toThrow(/is not a thing directory \(format "quorum-other"\)/);
    expect(() => readSavedCard(dirWith('v2', '{"format":"quorum-thing","version":2}'), kind)).toThrow(/has format version 2; this Quorum reads version 3/);
    for (const [name, text] of [['null', 'null'], ['array', '[1]'], ['number', '7'], ['broken', '{"format":']] as const) {
      expect(codeOf(() => readSavedCard(dirWith(name, text), kind)), name).toBe('ERR_FORMAT');
    }
  });

  it('takes only plain file names from a card', () => {
    expect(savedFile('/d', 'w.safetensors', '/d/c.json', 'weights')).toBe(join('/d', 'w.safetensors'));
    for (const bad of ['', '..', '.', '../w', 'a/b', 'a\\b', 7, null, undefined]) {
      expect(codeOf(() => savedFile('/d', bad, '/d/c.json', 'weights')), String(bad)).toBe('ERR_FORMAT');
    }
    expect(() => savedFile('/d', '../x', '/d/c.json', 'weights')).toThrow('/d/c.json: missing or malformed weights entry');
  });
});
