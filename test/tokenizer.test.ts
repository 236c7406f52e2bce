import { describe, expect, it } from 'vitest';

import { code } from './basics.js';
import { normalizeBert, normalizeSettings, normalizeUnicode, normalizeWith } from '../lib/text/normalize.js';
import { WordPieceTokenizer, extendVocabulary } from '../lib/text/tokenizer.js';
import { readTokenizerFiles, writeTokenizerFiles } from '../lib/text/tokenizer-files.js';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A hand-made vocabulary: ids are positions.
const VOCAB = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[unused0]', 'un', '##aff', '##a', '##able', 'a', 'b', '##b', 'ß', 'c', ',', '!', 'cafe'];
const id = (t: string) => VOCAB.indexOf(t);


describe('normalizeBert', () => {
  it('lower-cases, strips accents and splits punctuation', () => {
    expect(normalizeBert('Héllo, WORLD!')).toBe('hello , world !');
    expect(normalizeBert('Café   naïve\tcoöperate')).toBe('cafe naive cooperate');
  });
  it('treats the ASCII symbols BERT counts as punctuation as punctuation', () => {
    expect(normalizeBert('a$b+c<d=e>f^g`h|i~j')).toBe('a $ b + c < d = e > f ^ g ` h | i ~ j');
  });
  it('drops control characters and U+FFFD but keeps tab and newline as spaces', () => {
    expect(normalizeBert('a\u0000b\u0007c\uFFFDd\u200Be\nf\r\ng')).toBe('abcde f g');
  });
  it('makes every CJK ideograph a word', () => {
    expect(normalizeBert('ab北京cd')).toBe('ab 北 京 cd');
  });
  it('does not parse special tokens inside text', () => {
    expect(normalizeBert('[SEP]')).toBe('[ sep ]');
  });
  it('folds compatibility characters only with nfkc: ligatures, full-width forms, superscripts', () => {
    // BERT alone keeps the ligature character inside the word.
    expect(normalizeBert('Inﬂuenza ﬁrst')).toBe('inﬂuenza ﬁrst');
    expect(normalizeBert('Inﬂuenza ﬁrst', { nfkc: true })).toBe('influenza first');
    // Full-width letters and punctuation become ASCII (then split as punctuation); x² becomes x2.
    expect(normalizeBert('ＡＢＣ！x²', { nfkc: true })).toBe('abc ! x2');
    // Accents are still stripped after the fold (NFKC composes, BERT's NFD step decomposes again).
    expect(normalizeBert('Café ﬁancé', { nfkc: true })).toBe('cafe fiance');
    // Every character NFKC leaves alone gives what BERT gives.
    const plain = 'Héllo, WORLD! a$b 北京 [SEP]\tx';
    expect(normalizeBert(plain, { nfkc: true })).toBe(normalizeBert(plain));
  });
  it('takes a plain-ASCII text through the short path to what every step gives', () => {
    // Random printable ASCII with tabs, newlines and runs of spaces, under every setting: the short path
    // (normalizeWith) equals the full one (normalizeUnicode), and a text with one character outside it takes the full one.
    let x = 7;
    const next = () => (x = (x * 1103515245 + 12345) >>> 0) / 2 ** 32;
    const alphabet = ' \t\n\r' + Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).join('');
    const texts = Array.from({ length: 300 }, () => Array.from({ length: Math.floor(next() * 40) }, () => alphabet[Math.floor(next() * alphabet.length)]).join(''));
    texts.push('', '   ', 'A.B', '\t\tX\n', 'e.g. U.S.A. $5,000 -- "quoted" [SEP] (x)');
    let checked = 0;
    for (let flags = 0; flags < 32; flags++) {
      const o = normalizeSettings({ nfkc: !!(flags & 1), lowercase: !(flags & 2), stripAccents: !!(flags & 4), chineseChars: !(flags & 8), cleanText: !(flags & 16) });
      for (const t of texts) {
        expect(normalizeWith(t, o)).toBe(normalizeUnicode(t, o));
        checked++;
      }
    }
    expect(checked).toBe(32 * 305);
    expect(normalizeWith('A\u00e9, B', normalizeSettings())).toBe('ae , b');
    expect(() => new WordPieceTokenizer(VOCAB).normalize(3 as never)).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
  });
});

describe('WordPieceTokenizer segmentation', () => {
  const tok = new WordPieceTokenizer(VOCAB);

  it('takes the longest matching piece first', () => {
    // "unaffable": "un", then "##aff" (longer than "##a"), then "##able".
    expect(tok.tokenize('unaffable')).toEqual(['un', '##aff', '##able']);
    expect(tok.tokenize('Unaffable, ab!')).toEqual(['un', '##aff', '##able', ',', 'a', '##b', '!']);
  });
  it('maps a word that cannot be segmented completely to one [UNK]', () => {
    // "unx": "un" matches but "##x" does not, so the whole word is [UNK] (not "un [UNK]").
    expect(tok.tokenize('unx b')).toEqual(['[UNK]', 'b']);
  });
  it('never splits a multi-byte character', () => {
    expect(tok.tokenize('ßb')).toEqual(['ß', '##b']);
    // "ßz": no piece for "##z"; the loop must step back whole code points and give [UNK].
    expect(tok.tokenize('ßz')).toEqual(['[UNK]']);
  });
  it('maps words longer than maxWordChars code points to [UNK]', () => {
    const short = new WordPieceTokenizer(VOCAB, { maxWordChars: 3 });
    expect(short.tokenize('abb')).toEqual(['a', '##b', '##b']);
    expect(short.tokenize('abbb')).toEqual(['[UNK]']);
    expect(short.tokenize('ßßß')).toEqual(['[UNK]']); // 3 code points (6 bytes) fit, but "##ß" is not a piece
  });
  it('decodes back to normalized words', () => {
    expect(tok.decode(tok.ids('Unaffable, ab'))).toBe('unaffable , ab');
  });
  it('reads a ligature-broken word whole only with nfkc, in tokenize, encode and encodeAsync alike', async () => {
    const v = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', 'in', '##f', '##l', 'influenza', '##uenza', 'first'];
    const bert = new WordPieceTokenizer(v);
    const folded = new WordPieceTokenizer(v, { nfkc: true });
    expect(bert.nfkc).toBe(false);
    expect(folded.nfkc).toBe(true);
    // Without the fold "inﬂuenza" has no segmentation ("##ﬂ" is no piece): one [UNK].
    expect(bert.tokenize('Inﬂuenza ﬁrst')).toEqual(['[UNK]', '[UNK]']);
    expect(folded.tokenize('Inﬂuenza ﬁrst')).toEqual(['influenza', 'first']);
    const ids = Array.from(folded.encode(['Inﬂuenza'], { pairs: ['ﬁrst'] }).ids);
    expect(ids).toEqual([2, 7, 3, 9, 3]);
    expect(Array.from((await folded.encodeAsync(['Inﬂuenza'], { pairs: ['ﬁrst'] })).ids)).toEqual(ids);
    expect(folded.normalize('Inﬂuenza')).toBe('influenza');
  });
  it('refuses an nfkc option that is not a boolean', () => {
    expect(code(() => new WordPieceTokenizer(VOCAB, { nfkc: 1 as unknown as boolean }))).toBe('ERR_ARG');
    expect(code(() => new WordPieceTokenizer(VOCAB, null as unknown as object))).toBe('ERR_ARG');
  });
});

describe('WordPieceTokenizer framing', () => {
  const tok = new WordPieceTokenizer(VOCAB);
  const [CLS, SEP, PAD] = [id('[CLS]'), id('[SEP]'), id('[PAD]')];

  it('frames single texts and pads to the longest row', () => {
    const e = tok.encode(['a b', 'c']);
    expect(e.rows).toBe(2);
    expect(e.seqLen).toBe(4);
    expect(Array.from(e.ids)).toEqual([CLS, id('a'), id('b'), SEP, CLS, id('c'), SEP, PAD]);
    expect(Array.from(e.lengths)).toEqual([4, 3]);
    expect(Array.from(e.typeIds)).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
  });
  it('frames pairs with segment ids and places the marker after [CLS]', () => {
    const e = tok.encode(['a'], { pairs: ['b c'], marker: id('[unused0]') });
    expect(Array.from(e.ids)).toEqual([CLS, id('[unused0]'), id('a'), SEP, id('b'), id('c'), SEP]);
    expect(Array.from(e.typeIds)).toEqual([0, 0, 0, 0, 1, 1, 1]);
  });
  it('truncates the longer segment first, the second one on a tie', () => {
    // budget = 7 - 3 = 4 text tokens for a = [a b a b a] (5) and b = [c c] (2): a loses 3 -> [a b], 2 vs 2.
    let e = tok.encode(['a b a b a'], { pairs: ['c c'], maxLength: 7 });
    expect(Array.from(e.ids)).toEqual([CLS, id('a'), id('b'), SEP, id('c'), id('c'), SEP]);
    // budget 3 for [a b] and [c c]: the tie costs the second segment a piece.
    e = tok.encode(['a b'], { pairs: ['c c'], maxLength: 6 });
    expect(Array.from(e.ids)).toEqual([CLS, id('a'), id('b'), SEP, id('c'), SEP]);
    // single texts keep their first maxLength - 2 pieces
    e = tok.encode(['unaffable b'], { maxLength: 4 });
    expect(Array.from(e.ids)).toEqual([CLS, id('un'), id('##aff'), SEP]);
  });
  it('pads to maxLength on request', () => {
    const e = tok.encode(['a'], { maxLength: 5, padToMax: true });
    expect(Array.from(e.ids)).toEqual([CLS, id('a'), SEP, PAD, PAD]);
    expect(e.seqLen).toBe(5);
  });
  it('gives the same result off the main thread', async () => {
    const texts = ['unaffable b', 'ßb c, a', ''];
    const sync = tok.encode(texts, { pairs: ['a', 'b', 'c'], maxLength: 6 });
    const async = await tok.encodeAsync(texts, { pairs: ['a', 'b', 'c'], maxLength: 6 });
    expect(async).toEqual(sync);
  });
});

describe('WordPieceTokenizer errors', () => {
  const tok = new WordPieceTokenizer(VOCAB);
  it('rejects bad vocabularies and arguments with codes', () => {
    expect(code(() => new WordPieceTokenizer(['[PAD]', '[CLS]', '[SEP]']))).toBe('ERR_ARG');
    expect(code(() => new WordPieceTokenizer([...VOCAB, 'a']))).toBe('ERR_ARG');
    expect(code(() => tok.encode(['a'], { maxLength: 2 }))).toBe('ERR_RANGE');
    expect(code(() => tok.encode(['a'], { pairs: ['a'], maxLength: 3 }))).toBe('ERR_RANGE');
    expect(code(() => tok.encode(['a', 'b'], { pairs: ['a'] }))).toBe('ERR_SHAPE');
    expect(code(() => tok.encode([3 as unknown as string]))).toBe('ERR_ARG');
    expect(code(() => tok.encode(['a'], { marker: 99 }))).toBe('ERR_RANGE');
    expect(code(() => tok.markerId(5))).toBe('ERR_RANGE');
    expect(code(() => tok.decode([99]))).toBe('ERR_RANGE');
  });
  it('rejects async with the same codes', async () => {
    await expect(tok.encodeAsync(['a'], { maxLength: 1 })).rejects.toMatchObject({ code: 'ERR_RANGE' });
  });
});

describe('bert-base-uncased vocabulary', async () => {
  const tok = await WordPieceTokenizer.load();
  it('has the canonical special ids', () => {
    expect(tok.size).toBe(30522);
    expect([tok.padId, tok.unkId, tok.clsId, tok.sepId]).toEqual([0, 100, 101, 102]);
    expect(tok.markerId(1)).toBe(2);
  });
  it('segments known examples', () => {
    expect(tok.tokenize('UNwant\u00E9d,running')).toEqual(['unwanted', ',', 'running']);
    expect(tok.tokenize('Unaffable')).toEqual(['una', '##ffa', '##ble']);
  });
});

describe('extendVocabulary', () => {
  const base = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', 'the', 'corona', '##virus', 'a'];
  it('appends whole words, most frequent first, that keep accepts; the tokenizer then reads them whole', () => {
    const v = extendVocabulary(base, ['The coronavirus, the CORONAVIRUS!', 'zeta beta beta coronavirus'], { keep: (w) => w !== 'zeta' });
    expect(v.slice(0, base.length)).toEqual(base);
    expect(v.slice(base.length)).toEqual(['coronavirus', 'beta']);
    expect(new WordPieceTokenizer(base).tokenize('coronavirus')).toEqual(['corona', '##virus']);
    expect(new WordPieceTokenizer(v).tokenize('Coronavirus beta')).toEqual(['coronavirus', 'beta']);
  });

  it('minCount, maxWords (ties in code-point order) and punctuation', () => {
    const texts = ['b b a2 a1 c !', 'a1 a2 c'];
    expect(extendVocabulary(base, texts).slice(base.length)).toEqual(['a1', 'a2', 'b', 'c']);
    expect(extendVocabulary(base, texts, { minCount: 2, maxWords: 2 }).slice(base.length)).toEqual(['a1', 'a2']);
    expect(extendVocabulary(base, []).length).toBe(base.length);
  });

  it('with nfkc, counts a ligature-broken word as the word it spells', () => {
    const texts = ['Inﬂuenza and inﬂuenza', 'influenza'];
    expect(extendVocabulary(base, texts, { nfkc: true }).slice(base.length)).toEqual(['influenza', 'and']);
    // Without it, the ligature spelling is a word of its own.
    expect(extendVocabulary(base, texts).slice(base.length)).toEqual(['inﬂuenza', 'and', 'influenza']);
  });
});

describe('tokenizer files', () => {
  it('round-trip the vocabulary and the normalization; refuse bad arguments and a directory without vocab.txt', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'quorum-tok-'));
    try {
      for (const nfkc of [true, false]) {
        writeTokenizerFiles(dir, new WordPieceTokenizer(VOCAB, { nfkc }));
        expect(JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8'))).toEqual({ nfkc });
        const back = await readTokenizerFiles(dir);
        expect(back.vocabulary).toEqual(VOCAB);
        expect(back.nfkc).toBe(nfkc);
      }
      expect(code(() => writeTokenizerFiles(dir, {} as WordPieceTokenizer))).toBe('ERR_ARG');
      expect(code(() => writeTokenizerFiles(3 as unknown as string, new WordPieceTokenizer(VOCAB)))).toBe('ERR_ARG');
      await expect(readTokenizerFiles(null as unknown as string)).rejects.toMatchObject({ code: 'ERR_ARG' });
      rmSync(join(dir, 'vocab.txt'));
      await expect(readTokenizerFiles(dir)).rejects.toMatchObject({ code: 'ERR_FORMAT' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
