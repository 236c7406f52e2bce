// DPR-MUF end to end (lib/methods/muf) on a separable fixture: two experts over one corpus whose tasks live in
// different halves of the embedding space. Each expert's heads see only its own task's questions while training, so
// they agree on them and disagree elsewhere: a question of task t must get its highest confidence from expert t.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { readMufDir } from '../lib/methods/muf/format.js';
import { MufRetriever, type MufJudgedQuery, type MufPassage } from '../lib/methods/muf/retriever.js';
import { trainMufHeads } from '../lib/methods/muf/train.js';
import { WordPieceTokenizer } from '../lib/text/tokenizer.js';
import type { TrainingExample } from '../lib/train/examples.js';
import { Retriever } from '../lib/models/retriever.js';
import { ece, ensembleMISync } from '../lib/uncertainty.js';
import { asyncCode, rng } from './basics.js';
import { referenceMufSearch } from './reference/muf-search.js';
import { quorumCli as quorum } from './helpers.js';

const N = 192; // topics per task
const DIM = 32;
const FUNCTION_WORDS = ['what', 'is', 'the', 'capital', 'of', 'made', 'from'];
const SPECIALS = ['[PAD]', '[unused0]', '[unused1]', '[unused2]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
const geoWords = Array.from({ length: 2 * N }, (_, i) => `g${i}`);
const foodWords = Array.from({ length: 2 * N }, (_, i) => `f${i}`);
const VOCAB = [...SPECIALS, ...FUNCTION_WORDS, ...geoWords, ...foodWords];

const root = mkdtempSync(join(tmpdir(), 'quorum-muf-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// Passage i of a task is titled by its partner word and names topic i; its question names the partner only.
const corpus: MufPassage[] = [
  ...Array.from({ length: N }, (_, i) => ({ id: `geo${i}`, title: `g${N + i}`, text: `the capital of g${N + i} is g${i}` })),
  ...Array.from({ length: N }, (_, i) => ({ id: `food${i}`, title: `f${N + i}`, text: `f${i} is made from f${N + i}` })),
];
const question = (task: 'geo' | 'food', i: number) => (task === 'geo' ? `what is the capital of g${N + i}` : `what is made from f${N + i}`);
const row = (task: 'geo' | 'food', i: number) => (task === 'geo' ? i : N + i);
const split = (lo: number, hi: number) => (['geo', 'food'] as const).flatMap((task) => Array.from({ length: hi - lo }, (_, j) => ({ task, i: lo + j })));
const trainSet = split(0, 160);
const devSet = split(160, 176);
const testSet = split(176, 192);

/**
 * An expert for `task`: a 0-layer bi-encoder. Every word has a seeded vector over all dimensions on the passage
 * side; on the question side its own task's words keep the first half of theirs (the second half zero), while the
 * other task's words get unrelated vectors in the second half only. It retrieves its own task's passages, misreads
 * the other task's questions, and its heads never see questions in the second half while training, as an expert
 * trained on one domain. Function words and specials are muted (weight e^-10, zero vectors); positions are zero.
 */
async function expert(task: 'geo' | 'food'): Promise<string> {
  Retriever.seed(1);
  const model = Retriever.create({
    preset: 'bi-encoder',
    tasks: [task],
    encoder: { vocabSize: VOCAB.length, hiddenSize: DIM, embeddingSize: DIM, layers: 0, maxPositions: 32, dropout: 0, pooling: 'mean', tokenWeights: true, normalize: true },
  });
  const content = (w: string) => /^[gf]\d/.test(w);
  const own = (w: string) => w.startsWith(task[0]!);
  const table = (side: 'query' | 'passage') => {
    const shared = rng(task === 'geo' ? 3 : 4);
    const other = rng(11);
    const t = new Float32Array(VOCAB.length * DIM);
    VOCAB.forEach((w, id) => {
      if (!content(w)) return;
      const a = Array.from({ length: DIM }, () => shared());
      const b = Array.from({ length: DIM / 2 }, () => other());
      // Each half centred, so that the embeddings' LayerNorm leaves the other half exactly zero.
      const centred = (v: number[]) => v.map((x) => x - v.reduce((s2, y) => s2 + y, 0) / v.length);
      const row =
        side === 'passage' ? a : own(w) ? [...centred(a.slice(0, DIM / 2)), ...new Array<number>(DIM / 2).fill(0)] : [...new Array<number>(DIM / 2).fill(0), ...centred(b)];
      t.set(row, id * DIM);
    });
    return t;
  };
  for (const side of ['query', 'passage'] as const) {
    model.setParameter(`${side}.embeddings.word_embeddings.weight`, table(side));
    model.setParameter(`${side}.embeddings.position_embeddings.weight`, new Float32Array(32 * DIM));
    model.setParameter(`${side}.embeddings.token_type_embeddings.weight`, new Float32Array(2 * DIM));
    model.setParameter(`${side}.embeddings.token_weights.weight`, Float32Array.from(VOCAB, (w) => (content(w) ? 0 : -10)));
  }
  const dir = join(root, task);
  model.saveModel(dir, { tokenizer: new WordPieceTokenizer(VOCAB), maxQueryLength: 16, maxPassageLength: 24 });
  return dir;
}

const examples = (set: typeof trainSet): TrainingExample[] =>
  set.map(({ task, i }) => ({ query: question(task, i), task, positives: [row(task, i)], hardNegatives: [row(task, (i + 1) % N)] }));
const judged = (set: typeof trainSet): MufJudgedQuery[] =>
  set.map(({ task, i }) => ({ id: `${task}-q${i}`, text: question(task, i), task, relevant: new Set([corpus[row(task, i)]!.id]) }));

describe('MufRetriever', () => {
  let muf: MufRetriever;

  it('trains each expert\'s heads, calibrates them on dev, and gives each question its own task\'s expert the highest confidence', async () => {
    const dirs = [await expert('geo'), await expert('food')];
    Retriever.seed(7);
    muf = await MufRetriever.build(dirs.map((model) => ({ model })), corpus, { heads: { members: 20, hidden: 64, layers: 0 }, topL: 8 });
    expect(muf.experts.map((e) => [e.name, e.task])).toEqual([['geo', 'geo'], ['food', 'food']]);
    await expect(muf.search(['x'], 3)).rejects.toMatchObject({ code: 'ERR_STATE' });
    await trainMufHeads(muf, examples(trainSet), { epochs: 400, batchSize: 80, lr: 1e-2, seed: 2 });
    await expect(muf.search(['what is the capital of g60'], 3)).rejects.toMatchObject({ code: 'ERR_STATE' }); // not calibrated
    const cal = await muf.calibrate(judged(devSet));
    expect(cal).toHaveLength(2);
    for (const c of cal) {
      expect(c.questions).toBe(32);
      expect(c.eceAfter).toBeLessThanOrEqual(c.eceBefore);
      expect(c.tried.find((t) => t.temperature === c.temperature)?.ece).toBe(c.eceAfter);
    }
    const test = judged(testSet);
    const results = await muf.search(test.map((q) => q.text), 5);
    const wrong = test.filter((q, b) => {
      const [geo, food] = results[b]!.confidence as [number, number];
      return q.task === 'geo' ? !(geo > food) : !(food > geo);
    });
    expect(wrong.map((q) => q.text)).toEqual([]);
    // Weighting by confidence ranks the relevant passages higher than weighing the experts alike.
    const uniform = await muf.search(test.map((q) => q.text), 5, { fusion: 'uniform' });
    const rr = (r: typeof results) => r.reduce((a, x, b) => a + 1 / (x.hits.findIndex((h) => test[b]!.relevant.has(h.id)) + 1 || Infinity), 0) / test.length;
    expect(rr(results)).toBeGreaterThan(rr(uniform));
    expect(muf.lastTimings).toMatchObject({ encode: expect.any(Number), retrieve: expect.any(Number), heads: expect.any(Number), mi: expect.any(Number) });
  });

  it('computes the confidence as the ensembleMI kernel does on the heads\' scores, with the calibrated ECE', async () => {
    const dev = judged(devSet);
    const r = await muf.searchAll(dev.map((q) => q.text), 8, { tasks: dev.map((q) => q.task) });
    // Reference: expert 0's heads on its own top-8, through the kernel at its temperature.
    const state = (muf as unknown as { state: Array<{ model: Retriever; passages: { data: Float32Array }; heads: { scoreSync: Function }; calibration: { temperature: number; eceAfter: number } }> }).state;
    const e0 = state[0]!;
    const q = await e0.model.encodeQueries(dev.map((x) => x.text), { task: 'geo' });
    const ids = Int32Array.from(r.experts[0]!.flatMap((hits) => hits.map((h) => corpus.findIndex((p) => p.id === h.id))));
    const z = e0.heads.scoreSync(q.data, e0.passages.data, ids, 8);
    const ref = ensembleMISync(z, { temperature: e0.calibration.temperature });
    dev.forEach((_, b) => expect(r.confidence[b]![0]).toBeCloseTo(ref.confidence.data[b]!, 6));
    const hit = r.experts[0]!.map((hits, b) => (dev[b]!.relevant.has(hits[0]!.id) ? 1 : 0));
    expect(ece(ref.confidence.data, hit)).toBeCloseTo(e0.calibration.eceAfter, 6);
    // Oracle: each question's own expert alone (weights 1 and 0), so its list is that expert's list.
    dev.forEach((x, b) => expect(r.oracle![b]!.hits.map((h) => h.id)).toEqual(r.experts[x.task === 'geo' ? 0 : 1]![b]!.map((h) => h.id)));
    // Uniform: every confidence is 1.
    expect(r.uniform.every((h) => h.confidence.every((c) => c === 1))).toBe(true);
  });

  it('searches through the native stage with the hits and confidences of the separate TypeScript steps, for every fusion', async () => {
    const test = judged(testSet);
    const texts = test.map((q) => q.text);
    const tasks = test.map((q) => q.task);
    for (const fusion of ['muf', 'muf-mi', 'uniform', 'oracle'] as const) {
      const ours = await muf.search(texts, 6, { fusion, ...(fusion === 'oracle' ? { tasks } : {}) });
      const ref = await referenceMufSearch(muf, texts, 6, fusion, tasks);
      ours.forEach((r, b) => {
        expect(r.hits.map((h) => h.id), `${fusion} ${texts[b]}`).toEqual(ref[b]!.hits.map((h) => h.id));
        r.hits.forEach((h, j) => expect(h.score).toBeCloseTo(ref[b]!.hits[j]!.score, 4));
        r.confidence.forEach((c, x) => expect(c).toBeCloseTo(ref[b]!.confidence[x]!, 4));
      });
    }
    // The oracle where some questions' task has no expert (every expert, equal weights) and the rest are grouped.
    const mixed = tasks.map((task, b) => (b % 3 === 0 ? 'nobody' : task));
    const ours = await muf.search(texts, 6, { fusion: 'oracle', tasks: mixed });
    const ref = await referenceMufSearch(muf, texts, 6, 'oracle', mixed);
    ours.forEach((r, b) => {
      expect(r.hits.map((h) => h.id)).toEqual(ref[b]!.hits.map((h) => h.id));
      expect(r.confidence).toEqual(ref[b]!.confidence);
    });
    expect(ours[0]!.confidence).toEqual([1, 1]);
    // searchAll's fusions are the same calls.
    const all = await muf.searchAll(texts, 6, { tasks });
    expect(all.muf).toEqual(await muf.search(texts, 6));
    expect(all.mufMi).toEqual(await muf.search(texts, 6, { fusion: 'muf-mi' }));
    expect(all.oracle).toEqual(await muf.search(texts, 6, { fusion: 'oracle', tasks }));
    await expect(muf.search([], 6)).rejects.toMatchObject({ code: 'ERR_ARG' });
  });

  it('saves and loads as one directory with the same results; bad directories give typed errors', async () => {
    const dir = join(root, 'muf-dir');
    muf.save(dir);
    const back = await MufRetriever.load(dir);
    const texts = judged(testSet).map((q) => q.text);
    const a = await muf.search(texts, 5);
    const b = await back.search(texts, 5);
    expect(b).toEqual(a);
    expect(back.experts).toEqual(muf.experts);
    back.dispose();
    expect(await asyncCode(MufRetriever.load(join(root, 'nowhere')))).toBe('ERR_IO');
    const bad = join(root, 'bad');
    mkdirSync(bad, { recursive: true });
    writeFileSync(join(bad, 'muf.json'), JSON.stringify({ format: 'quorum-muf', version: 9, experts: [] }));
    expect(await asyncCode(MufRetriever.load(bad))).toBe('ERR_FORMAT');
  });

  it('refuses bad experts and bad calls with typed errors', async () => {
    const wide = join(root, 'wide');
    Retriever.create({ preset: 'siamese', tasks: ['wide'], encoder: { vocabSize: VOCAB.length, hiddenSize: 8, embeddingSize: 8, layers: 0, maxPositions: 32, pooling: 'mean' } }).saveModel(wide, {
      tokenizer: new WordPieceTokenizer(VOCAB),
    });
    expect(await asyncCode(MufRetriever.build([{ model: join(root, 'geo') }, { model: wide, name: 'wide' }], corpus))).toBe('ERR_SHAPE');
    expect(await asyncCode(MufRetriever.build([{ model: join(root, 'missing') }], corpus))).toBe('ERR_IO');
    expect(await asyncCode(MufRetriever.build([], corpus))).toBe('ERR_ARG');
    // hitTopK above topL would read past each expert's list (issue 48: calibration looped or read the next question's hits).
    expect(await asyncCode(MufRetriever.build([{ model: join(root, 'geo') }], corpus, { topL: 5, hitTopK: 10 }))).toBe('ERR_RANGE');
    expect(await asyncCode(MufRetriever.build([{ model: join(root, 'geo') }, { model: join(root, 'geo') }], corpus))).toBe('ERR_ARG');
    expect(await asyncCode(trainMufHeads(muf, []))).toBe('ERR_ARG');
    expect(await asyncCode(trainMufHeads(muf, [1 as never]))).toBe('ERR_ARG');
    expect(await asyncCode(trainMufHeads(muf, [{ query: 'q', task: 'geo' } as never]))).toBe('ERR_ARG');
    expect(await asyncCode(MufRetriever.build([{ model: join(root, 'geo'), name: '../evil' }], corpus))).toBe('ERR_ARG');
    expect(await asyncCode(muf.search(['a'], 0))).toBe('ERR_RANGE');
    expect(await asyncCode(muf.search(['a'], 3, { fusion: 'oracle' }))).toBe('ERR_ARG');
    expect(await asyncCode(muf.search(['a'], 3, { fusion: 'best' as never }))).toBe('ERR_ARG');
    expect(await asyncCode(muf.search([3 as never], 3))).toBe('ERR_ARG');
    expect(await asyncCode(muf.calibrate([]))).toBe('ERR_ARG');
    // Garbage into the statics (the export sweep leaves classes out).
    for (const g of [undefined, null, 5, 'x', {}, [], [1]]) {
      expect(await asyncCode(MufRetriever.build(g as never, corpus)), String(g)).toMatch(/^ERR_(ARG|IO)$/);
      expect(await asyncCode(MufRetriever.build([{ model: join(root, 'geo') }], g as never)), String(g)).toMatch(/^ERR_ARG$/);
      expect(await asyncCode(MufRetriever.load(g as never)), String(g)).toMatch(/^ERR_(ARG|IO)$/);
    }
    muf.dispose();
  });
});

/** The fixture as a BEIR directory (queries with a `task`), optionally without the tasks. */
function writeDataset(dir: string, withTasks = true): void {
  mkdirSync(join(dir, 'qrels'), { recursive: true });
  writeFileSync(join(dir, 'corpus.jsonl'), corpus.map((p) => JSON.stringify({ _id: p.id, title: p.title, text: p.text })).join('\n') + '\n');
  const all = split(0, N);
  writeFileSync(join(dir, 'queries.jsonl'), all.map(({ task, i }) => JSON.stringify({ _id: `${task}-q${i}`, text: question(task, i), ...(withTasks ? { task } : {}) })).join('\n') + '\n');
  for (const [name, set] of [['train', trainSet], ['dev', devSet], ['test', testSet]] as const)
    writeFileSync(join(dir, 'qrels', `${name}.tsv`), 'query-id\tcorpus-id\tscore\n' + set.map(({ task, i }) => `${task}-q${i}\t${corpus[row(task, i)]!.id}\t1`).join('\n') + '\n');
}

describe('quorum muf', () => {
  it('muf train, muf search and eval --muf on the fixture; typed one-line errors on bad input', () => {
    const data = join(root, 'beir');
    writeDataset(data);
    const experts = `${join(root, 'geo')},${join(root, 'food')}`;
    const dir = join(root, 'muf-cli');
    const t = quorum('muf', 'train', '--data', data, '--experts', experts, '--out', dir, '--members', '4', '--hidden', '16', '--layers', '0', '--epochs', '20', '--batch', '32', '--top-l', '8', '--lr', '0.01');
    expect(t.stderr).toBe('');
    expect(t.status).toBe(0);
    expect(t.stdout).toMatch(/geo: temperature [\d.e-]+ \(ECE [\d.]+ at 1e-3 -> [\d.]+\)/);
    for (const f of ['muf.json', 'corpus-ids.txt', 'experts/geo/heads.safetensors', 'experts/food/passages.safetensors', 'experts/food/model/model.json'])
      expect(existsSync(join(dir, f)), f).toBe(true);
    const card = JSON.parse(readFileSync(join(dir, 'muf.json'), 'utf8'));
    expect(card).toMatchObject({ format: 'quorum-muf', version: 1, topL: 8, heads: { members: 4, hidden: 16, layers: 0 } });
    expect(card.experts.map((e: { name: string }) => e.name)).toEqual(['geo', 'food']);
    expect(card.experts[0].training.epochs).toHaveLength(20);
    // The heads as two data-parallel ranks (issue 47): rank 0 alone calibrates and writes.
    const two = quorum('muf', 'train', '--data', data, '--experts', experts, '--out', join(root, 'muf-nproc'), '--members', '4', '--hidden', '16', '--layers', '0', '--epochs', '3', '--batch', '32', '--top-l', '8', '--lr', '0.01', '--nproc', '2');
    expect(two.stderr).toBe('');
    expect(two.status).toBe(0);
    expect(two.stdout.match(/geo: temperature/g)).toHaveLength(1);
    expect(JSON.parse(readFileSync(join(root, 'muf-nproc', 'muf.json'), 'utf8')).experts[1].training.epochs).toHaveLength(3);
    // muf.json is read against one schema: each damage is ERR_FORMAT naming its field (issue 48).
    type Card = { experts: Array<Record<string, unknown> | null>; hitTopK: number; topL: number; heads: { members: number }; [k: string]: unknown };
    for (const [field, damage] of [
      ['experts', (c: Card) => c.experts.push(c.experts[0]!)],
      ['experts.1', (c: Card) => (c.experts[1] = null)],
      ['hitTopK', (c: Card) => (c.hitTopK = c.topL + 1)],
      ['experts.0.task', (c: Card) => (c.experts[0]!.task = 7)],
      ['heads.members', (c: Card) => (c.heads.members = -1)],
      ['extra', (c: Card) => (c.extra = 1)],
    ] as const) {
      const copy = JSON.parse(JSON.stringify(card)) as Card;
      damage(copy);
      writeFileSync(join(dir, 'muf.json'), JSON.stringify(copy));
      expect(() => readMufDir(dir), field).toThrow(expect.objectContaining({ code: 'ERR_FORMAT', message: expect.stringContaining(field) }));
    }
    writeFileSync(join(dir, 'muf.json'), JSON.stringify(card));

    const c = quorum('muf', 'calibrate', '--muf', dir, '--data', data);
    expect(c.status).toBe(0);
    expect(c.stdout).toMatch(/calibrating on 32 dev questions[\s\S]*food: temperature/);
    const s = quorum('muf', 'search', '--muf', dir, '--k', '3', `what is the capital of g${N + 180}`);
    expect(s.status).toBe(0);
    // muf train built each expert's familiarity bank and calibrate fitted it: the geo question is geo's.
    const own = s.stdout.match(/P\(own task\): geo ([\d.]+), food ([\d.]+)/);
    expect(own).not.toBeNull();
    expect(Number(own![1])).toBeGreaterThan(Number(own![2]));
    expect(c.stdout).toMatch(/geo: familiarity AUROC [\d.]+ on 16 own \/ 16 other questions/);
    expect(s.stdout.trim().split('\n')).toHaveLength(5);
    const mi = quorum('muf', 'search', '--muf', dir, '--k', '3', '--fusion', 'muf-mi', `what is the capital of g${N + 180}`);
    expect(mi.status).toBe(0);
    expect(mi.stdout).toMatch(/confidence \(MI\): geo [\d.]+, food [\d.]+\n    1 /);
    const none = quorum('muf', 'search', '--muf', dir, '--k', '3', '--abstain', '1', `what is the capital of g${N + 180}`);
    expect(none.stdout).toMatch(/P\(own task\): geo [\d.]+, food [\d.]+\n  abstained: no expert reaches 1\n$/);
    expect(quorum('muf', 'search', '--muf', dir, '--abstain', '2', 'x').stderr).toMatch(/expected a number in \[0, 1\]/);

    const out = join(root, 'eval-muf');
    const e = quorum('eval', '--data', data, '--muf', dir, '--metrics', 'mrr@10', '--k', '10', '--by-task', '--out', out, '--latency', '4', '--report', join(out, 'report.html'));
    expect(e.stderr).toBe('');
    expect(e.status).toBe(0);
    // The MUF + BM25 hybrid's alpha is tuned on dev for all questions and per task (the questions carry tasks).
    // Each with its gain over BM25 alone and the one-SE rule's verdict (BM25 alone where the gain is under one SE).
    for (const [scope, on] of [['', 'on the 32 dev queries'], [' for food', 'on its 16 dev queries'], [' for geo', 'on its 16 dev queries']])
      expect(e.stdout).toMatch(new RegExp(`muf-hybrid: (alpha [\\d.]+${scope} \\(|BM25 alone${scope} \\(alpha [\\d.]+: )MRR@10 [\\d.]+ ${on}; [+-][\\d.]+ ± [\\d.]+ over BM25 alone out of sample`));
    const metrics = JSON.parse(readFileSync(join(out, 'metrics.json'), 'utf8'));
    expect(Object.keys(metrics.metrics).sort()).toEqual(['expert:food', 'expert:geo', 'muf', 'muf-hybrid', 'muf-mi', 'muf-oracle', 'muf-uniform']);
    // Abstention: coverage at fixed precision printed, the precision-coverage curve in the metrics and the report.
    expect(e.stdout).toMatch(/muf abstention by the highest expert P\(own task\): coverage at precision@1 >= 0\.5: [\d.]+%/);
    expect(metrics.selective.measure).toBe('P(own task)');
    expect(metrics.selective.points.at(-1).coverage).toBe(1);
    expect(readFileSync(join(out, 'report.html'), 'utf8')).toContain('chart-selective');
    // The oracle takes each question's own expert, which finds its passage here.
    expect(metrics.byTask['muf-oracle'].geo['mrr@10']).toBeCloseTo(metrics.byTask['expert:geo'].geo['mrr@10'], 10);
    expect(existsSync(join(out, 'expert-geo.trec'))).toBe(true);
    // For the report: each expert's confidence and top-1 hit per test question, MUF's single-query latencies.
    const calibration = metrics.calibration as Array<{ name: string; confidence: number[]; hit: number[] }>;
    expect(calibration.map((c) => c.name)).toEqual(['geo', 'food']);
    for (const c of calibration) {
      expect(c.confidence).toHaveLength(metrics.queries);
      expect(c.hit.every((h) => h === 0 || h === 1)).toBe(true);
    }
    // A hit is the expert's own top-1 being relevant: as many as in its run file's rank-1 lines.
    const qrels = new Set(readFileSync(join(data, 'qrels', 'test.tsv'), 'utf8').trim().split('\n').slice(1).map((l) => l.split('\t').slice(0, 2).join(' ')));
    const topOnes = readFileSync(join(out, 'expert-geo.trec'), 'utf8').trim().split('\n').map((l) => l.split(' ')).filter((f) => f[3] === '1');
    expect(calibration[0]!.hit.reduce((a, h) => a + h, 0)).toBe(topOnes.filter((f) => qrels.has(`${f[0]} ${f[2]}`)).length);
    expect(metrics.latency.muf).toHaveLength(4);
    expect(readFileSync(join(out, 'report.html'), 'utf8')).toContain('id="chart-reliability"');

    const untasked = join(root, 'beir-untasked');
    writeDataset(untasked, false);
    const wide = join(root, 'wide');
    for (const [args, message] of [
      [['muf', 'train', '--data', untasked, '--experts', experts, '--out', join(root, 'x')], /^quorum: ERR_ARG: .*carry no 'task'/],
      [['muf', 'train', '--data', data, '--experts', `${join(root, 'geo')},${join(root, 'nowhere')}`, '--out', join(root, 'x')], /^quorum: ERR_IO/],
      [['muf', 'train', '--data', data, '--experts', `${join(root, 'geo')},${wide}`, '--out', join(root, 'x')], /^quorum: ERR_SHAPE: .*dimensions/],
      [['muf', 'search', '--muf', join(root, 'nowhere'), 'q'], /^quorum: ERR_IO/],
      [['muf', 'search', '--muf', dir, '--fusion', 'best', 'q'], /^quorum: ERR_ARG: --fusion/],
      [['muf', 'calibrate', '--muf', dir, '--data', data, '--split', 'test'], /^quorum: ERR_ARG: calibrating on the test split/],
    ] as const) {
      const r = quorum(...args);
      expect(r.status, args.join(' ')).toBe(1);
      expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(r.stderr.trim()).toMatch(message);
    }
    expect(quorum('muf', 'train', '--help').stdout).toMatch(/--experts[\s\S]*--members[\s\S]*--top-l/);
  });
});
