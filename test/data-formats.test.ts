import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { type BeirDataset, type DprExample, formatTrecTopics, loadBeir, parseTrecTopics, readBeir, readDpr, readJsonArray, readQrels, readRun, readSquad, streamDpr, writeBeir, writeDpr, writeQrels, writeRun, writeSquad } from '../lib/entries/data.js';
import { asyncCode, code } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'quorum-data-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

const dataset: BeirDataset = {
  corpus: [
    { id: 'p1', title: 'Lincoln', text: 'Abraham Lincoln was the 16th president.' },
    { id: 'p2', title: 'Lincoln', text: 'He was born in Kentucky.' },
    { id: 'p3', title: 'Mecca', text: 'Mecca is a city in Saudi Arabia.' },
  ],
  queries: [
    { id: 'q1', text: 'Who was the 16th president?', answers: ['Abraham Lincoln'], task: 'wiki' },
    { id: 'q2', text: 'Where is Mecca?', answers: ['Saudi Arabia'] },
  ],
  qrels: new Map([
    ['q1', new Map([['p1', 1]])],
    ['q2', new Map([['p3', 1]])],
  ]),
};

describe('TREC run and qrels files', () => {
  it('round-trips runs (ranked in trec_eval order) and graded qrels', async () => {
    const run = new Map([
      ['q1', [{ id: 'd2', score: 1.5 }, { id: 'd1', score: 3 }, { id: 'd3', score: 1.5 }]],
      ['q2', [{ id: 'd9', score: -0.25 }]],
    ]);
    const p = join(dir, 'run.trec');
    writeRun(p, run, 'test');
    const back = await readRun(p);
    expect(back.get('q1')).toEqual([{ id: 'd1', score: 3 }, { id: 'd3', score: 1.5 }, { id: 'd2', score: 1.5 }]); // ties: id desc
    expect(back.get('q2')).toEqual([{ id: 'd9', score: -0.25 }]);
    const q = join(dir, 'qrels.txt');
    writeQrels(q, new Map([['q1', new Map([['d1', 2], ['d2', 0]])]]));
    expect(await readQrels(q)).toEqual(new Map([['q1', new Map([['d1', 2], ['d2', 0]])]]));
  });

  it('names file:line on malformed input; a missing file is ERR_IO', async () => {
    const short = file('short.trec', 'q1 Q0 d1 1 2.0 tag\nq1 Q0 d2 2\n');
    await expect(readRun(short)).rejects.toMatchObject({ code: 'ERR_FORMAT', message: expect.stringContaining('short.trec:2') });
    const nan = file('nan.trec', '\nq1 Q0 d1 1 high tag\n');
    await expect(readRun(nan)).rejects.toMatchObject({ code: 'ERR_FORMAT', message: expect.stringContaining('nan.trec:2') });
    const dup = file('dup.trec', 'q1 Q0 d1 1 2 t\nq1 Q0 d1 2 1 t\n');
    await expect(readRun(dup)).rejects.toMatchObject({ code: 'ERR_FORMAT', message: expect.stringContaining('dup.trec:2') });
    const qr = file('bad.qrels', 'q1 0 d1 1\nq1 0 d2 x\n');
    await expect(readQrels(qr)).rejects.toMatchObject({ code: 'ERR_FORMAT', message: expect.stringContaining('bad.qrels:2') });
    expect(await asyncCode(readRun(join(dir, 'missing.trec')))).toBe('ERR_IO');
    expect(code(() => writeRun(join(dir, 'x.trec'), new Map(), 'two words'))).toBe('ERR_ARG');
  });

  it('parses <top> topics and CACM-style <DOC> topics, and writes <top> blocks', () => {
    const text = '<top>\n<num> Number: 301\n<title> International Organized Crime\n\n<desc> Description:\nIdentify organizations.\n\n<narr> Narrative:\nA relevant document...\n</top>\n';
    expect(parseTrecTopics(text)).toEqual([{ id: '301', title: 'International Organized Crime', desc: 'Identify organizations.', narr: 'A relevant document...' }]);
    expect(parseTrecTopics('<DOC>\n<DOCNO> 1 </DOCNO>\nWhat articles exist\nabout TSS?\n</DOC>')).toEqual([{ id: '1', title: 'What articles exist about TSS?' }]);
    const topics = [{ id: '7', title: 'a b', desc: 'c' }, { id: '8', title: 'd' }];
    expect(parseTrecTopics(formatTrecTopics(topics))).toEqual(topics);
    expect(code(() => parseTrecTopics('nothing here'))).toBe('ERR_FORMAT');
  });
});

describe('BEIR layout', () => {
  it('writes and reads back whole (loadBeir) and streamed (readBeir)', async () => {
    const d = join(dir, 'beir');
    writeBeir(d, dataset, 'dev');
    expect(loadBeir(d, 'dev')).toEqual(dataset);
    expect(await readBeir(d, 'dev')).toEqual(dataset);
  });

  it('names file:line for a malformed line', async () => {
    const d = join(dir, 'beir-bad');
    writeBeir(d, dataset);
    writeFileSync(join(d, 'corpus.jsonl'), '{"_id": "p1", "text": "ok"}\n{"_id": 5, "text": "bad id"}\n');
    await expect(readBeir(d)).rejects.toMatchObject({ code: 'ERR_FORMAT', message: expect.stringContaining('corpus.jsonl:2') });
    expect(code(() => loadBeir(d))).toBe('ERR_FORMAT');
    writeFileSync(join(d, 'corpus.jsonl'), '{"_id": "p1", "text": "ok"}\nnot json\n');
    await expect(readBeir(d)).rejects.toMatchObject({ code: 'ERR_FORMAT', message: expect.stringContaining('corpus.jsonl:2') });
    expect(await asyncCode(readBeir(join(dir, 'nowhere')))).toBe('ERR_IO');
    // The qrels go through the one qrels parser: a non-integer grade names qrels/test.tsv and its line.
    writeBeir(d, dataset);
    writeFileSync(join(d, 'qrels', 'test.tsv'), 'query-id\tcorpus-id\tscore\nq1\tp1\t1\nq1\tp2\t0.5\n');
    expect(() => loadBeir(d)).toThrow(expect.objectContaining({ code: 'ERR_FORMAT', message: expect.stringContaining('test.tsv:3') }));
    await expect(readBeir(d)).rejects.toMatchObject({ code: 'ERR_FORMAT', message: expect.stringContaining('test.tsv:3') });
  });
});

describe('SQuAD and DPR JSON', () => {
  it('SQuAD: paragraphs become passages, questions queries with their paragraph as the one relevant passage', () => {
    const p = join(dir, 'squad.json');
    writeSquad(p, dataset);
    const back = readSquad(p);
    expect(back.corpus.map((c) => [c.title, c.text])).toEqual(dataset.corpus.map((c) => [c.title, c.text]));
    expect(back.queries.map((q) => [q.id, q.text, q.answers])).toEqual([
      ['q1', 'Who was the 16th president?', ['Abraham Lincoln']],
      ['q2', 'Where is Mecca?', ['Saudi Arabia']],
    ]);
    // ids are <prefix><article>-<paragraph>: Lincoln is article 0, Mecca article 1
    expect(back.qrels).toEqual(new Map([['q1', new Map([['p0-0', 1]])], ['q2', new Map([['p1-0', 1]])]]));
    const bad = file('bad-squad.json', '{"data": [{"title": "x", "paragraphs": [{"context": 3}]}]}');
    expect(code(() => readSquad(bad))).toBe('ERR_FORMAT');
    expect(code(() => readSquad(file('trunc.json', '{"data": [')))).toBe('ERR_FORMAT');
  });

  it('streams a big JSON array element by element (strings with brackets, escapes, chunk boundaries)', async () => {
    const items = Array.from({ length: 15000 }, (_, i) => ({ question: `q${i} [with] {brackets}, "quotes" \\ and ,commas`, answers: [`a${i}`], n: i }));
    const p = join(dir, 'big.json');
    writeFileSync(p, '[\n' + items.map((x) => '  ' + JSON.stringify(x)).join(',\n') + '\n]\n'); // > 1 MiB chunk
    const got: unknown[] = [];
    const lines: number[] = [];
    for await (const { value, line } of readJsonArray(p)) {
      got.push(value);
      lines.push(line);
    }
    expect(got).toEqual(items);
    expect(lines.slice(0, 3)).toEqual([2, 3, 4]);
    const scalars = file('scalars.json', '[1, "two", null, [3, [4]], {"five": 5}]');
    const back: unknown[] = [];
    for await (const { value } of readJsonArray(scalars)) back.push(value);
    expect(back).toEqual([1, 'two', null, [3, [4]], { five: 5 }]);
    const collect = async (path: string) => {
      for await (const _ of readJsonArray(path)) void _;
    };
    await expect(collect(file('trunc-array.json', '[{"a": 1},\n{"b": '))).rejects.toMatchObject({ code: 'ERR_FORMAT' });
    await expect(collect(file('bad-el.json', '[{"a": 1},\n{"b": nope}\n]'))).rejects.toMatchObject({ code: 'ERR_FORMAT', message: expect.stringContaining('bad-el.json:2') });
    await expect(collect(file('not-array.json', '{"a": 1}'))).rejects.toMatchObject({ code: 'ERR_FORMAT' });
    await expect(collect(file('trailing.json', '[1] x'))).rejects.toMatchObject({ code: 'ERR_FORMAT' });
    expect(await asyncCode(collect(join(dir, 'none.json')))).toBe('ERR_IO');
  });

  it('DPR: round trip with positives, negatives and hard negatives', async () => {
    const ex: DprExample[] = [
      {
        question: 'who was the 16th president',
        answers: ['Abraham Lincoln'],
        positives: [{ id: '11', title: 'Lincoln', text: 'Abraham Lincoln was the 16th president.' }],
        negatives: [{ id: '12', title: 'Mecca', text: 'Mecca is a city.' }],
        hardNegatives: [],
      },
    ];
    const p = join(dir, 'dpr.json');
    writeDpr(p, ex);
    expect(readDpr(p)).toEqual(ex);
    const streamed: DprExample[] = [];
    for await (const e of streamDpr(p)) streamed.push(e);
    expect(streamed).toEqual(ex);
    expect(code(() => readDpr(file('dpr-bad.json', '[{"question": "q", "positive_ctxs": [{"title": "t"}]}]')))).toBe('ERR_FORMAT');
  });
});
