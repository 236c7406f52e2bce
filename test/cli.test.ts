// The `quorum` CLI end to end (through tsx, from the sources): eval on the embedded dataset, fuse, and the
// non-zero exits with one-line messages on bad input.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { QuantizedTensor, Tensor, scoreTopKSync } from '../lib/index.js';
import { readSafetensors } from '../lib/io/safetensors.js';
import { packageRoot } from '../lib/native.js';
import { maxAbsDiff } from './basics.js';
import { quorumCli as quorum } from './helpers.js';

const out = mkdtempSync(join(tmpdir(), 'quorum-cli-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

const data = join(packageRoot, 'data', 'xquad-en');

describe('quorum CLI', () => {
  it('eval runs BM25 and the dense stand-in on a BEIR-layout dataset and writes runs and metrics.json', () => {
    const r = quorum('eval', '--data', data, '--methods', 'bm25,dense', '--metrics', 'ndcg@10,recall@20', '--k', '50', '--out', out, '--latency', '3');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/bm25\s+0\.9\d\d\s+0\.9\d\d/);
    const metrics = JSON.parse(readFileSync(join(out, 'metrics.json'), 'utf8')) as { queries: number; metrics: Record<string, Record<string, number>> };
    expect(metrics.queries).toBe(1190);
    expect(metrics.metrics.bm25!['ndcg@10']).toBeGreaterThan(metrics.metrics.dense!['ndcg@10']!);
    const lines = readFileSync(join(out, 'bm25.trec'), 'utf8').trim().split('\n');
    // BM25 returns only passages some query term reaches: at most 50 per query, ranks from 1.
    const perQuery = new Map<string, number>();
    for (const l of lines) {
      const [q, q0, , rank, , tag] = l.split(' ');
      expect([q0, tag]).toEqual(['Q0', 'bm25']);
      perQuery.set(q!, (perQuery.get(q!) ?? 0) + 1);
      expect(Number(rank)).toBe(perQuery.get(q!));
    }
    expect(perQuery.size).toBe(1190);
    expect(Math.max(...perQuery.values())).toBe(50);
  });

  it('fuse reads run files, writes the fused run and scores it against qrels', () => {
    const qrels = readFileSync(join(data, 'qrels', 'test.tsv'), 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.split('\t'))
      .map(([q, d, s]) => `${q} 0 ${d} ${s}`)
      .join('\n');
    writeFileSync(join(out, 'qrels.txt'), qrels + '\n');
    const r = quorum('fuse', join(out, 'bm25.trec'), join(out, 'dense.trec'), '--method', 'rrf', '--out', join(out, 'rrf.trec'), '--qrels', join(out, 'qrels.txt'));
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('fused (rrf)');
    expect(existsSync(join(out, 'rrf.trec'))).toBe(true);
  });

  it('fuse --qrels reads the BEIR qrels that data build writes, and a bad qrels file fails before any output', () => {
    const r = quorum('fuse', join(out, 'bm25.trec'), join(out, 'dense.trec'), '--method', 'rrf', '--out', join(out, 'rrf-beir.trec'), '--qrels', join(data, 'qrels', 'test.tsv'), '--metrics', 'mrr@10');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    // The same numbers as with the TREC form of those qrels.
    const trec = quorum('fuse', join(out, 'bm25.trec'), join(out, 'dense.trec'), '--method', 'rrf', '--out', join(out, 'rrf-trec.trec'), '--qrels', join(out, 'qrels.txt'), '--metrics', 'mrr@10');
    expect(r.stdout.split('\n').slice(1)).toEqual(trec.stdout.split('\n').slice(1));
    expect(r.stdout).toMatch(/fused \(rrf\)\s+0\.\d{3}\n/);
    writeFileSync(join(out, 'bad.qrels'), 'q1 0 d1\n');
    const bad = quorum('fuse', join(out, 'bm25.trec'), '--method', 'rrf', '--out', join(out, 'never.trec'), '--qrels', join(out, 'bad.qrels'));
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/ERR_FORMAT.*bad\.qrels:1/);
    expect(existsSync(join(out, 'never.trec'))).toBe(false);
  });

  it('fuse trains a supervised method on other questions (--train-runs, --train-qrels) and fuses as the API does', async () => {
    // Training runs: the even questions of the two systems; fused runs: the odd ones (never the same questions).
    const half = (file: string, parity: number) => {
      const lines = readFileSync(join(out, file), 'utf8').trim().split('\n');
      const ids = [...new Set(lines.map((l) => l.split(' ')[0]!))];
      const keep = new Set(ids.filter((_, i) => i % 2 === parity));
      const path = join(out, `${parity ? 'odd' : 'even'}-${file}`);
      writeFileSync(path, lines.filter((l) => keep.has(l.split(' ')[0]!)).join('\n') + '\n');
      return path;
    };
    const [trainBm25, trainDense, bm25, dense] = [half('bm25.trec', 0), half('dense.trec', 0), half('bm25.trec', 1), half('dense.trec', 1)];
    for (const [method, extra] of [['posfuse', []], ['probfuse', ['--segments', '5']], ['slidefuse', ['--window', '3']]] as const) {
      const target = join(out, `${method}.trec`);
      const r = quorum('fuse', bm25, dense, '--method', method, ...extra, '--train-runs', `${trainBm25},${trainDense}`, '--train-qrels', join(out, 'qrels.txt'), '--out', target);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const { readRun, formatRun, readQrels } = await import('../lib/data/trec-files.js');
      const { trainFusion } = await import('../lib/fusion/train.js');
      const { fuse } = await import('../lib/fusion/fuse.js');
      const segments = method === 'probfuse' ? 5 : undefined;
      const trained = trainFusion(method, [await readRun(trainBm25), await readRun(trainDense)], await readQrels(join(out, 'qrels.txt')), { segments });
      const expected = fuse([await readRun(bm25), await readRun(dense)], method, { trained, segments, window: method === 'slidefuse' ? 3 : undefined });
      expect(readFileSync(target, 'utf8')).toBe(formatRun(expected, method));
    }
    const bad: Array<[string[], RegExp]> = [
      [['--method', 'posfuse'], /ERR_ARG: posfuse is supervised: give --train-runs .* and --train-qrels/],
      [['--method', 'posfuse', '--train-runs', trainBm25, '--train-qrels', join(out, 'qrels.txt')], /ERR_ARG: --train-runs names 1 files for 2 input runs/],
      [['--method', 'rrf', '--train-runs', `${trainBm25},${trainDense}`, '--train-qrels', join(out, 'qrels.txt')], /ERR_ARG: --train-runs and --train-qrels go together, with a supervised method/],
      [['--method', 'muf'], /ERR_ARG: muf weighs each run by a per-question confidence .*quorum muf search/],
    ];
    for (const [args, message] of bad) {
      const r = quorum('fuse', bm25, dense, ...args, '--out', join(out, 'never.trec'));
      expect(r.status).toBe(1);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(message);
    }
    expect(existsSync(join(out, 'never.trec'))).toBe(false);
  });

  it('report writes the HTML report of an eval --out directory: its metrics, Recall@k curves and latencies', () => {
    const metrics = JSON.parse(readFileSync(join(out, 'metrics.json'), 'utf8')) as { recall: Record<string, Record<string, number>>; latency: Record<string, number[]> };
    // Recall@k at 1, 2, 3, 5, 10, 20, 30, 50 (k = 50), non-decreasing, and the table's recall@20 among them.
    expect(Object.keys(metrics.recall.bm25!)).toEqual(['1', '2', '3', '5', '10', '20', '30', '50']);
    const curve = Object.values(metrics.recall.bm25!);
    expect(curve.every((v, i) => i === 0 || v >= curve[i - 1]!)).toBe(true);
    expect(metrics.latency.bm25).toHaveLength(3);
    const r = quorum('report', out, '--out', join(out, 'report.html'));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const html = readFileSync(join(out, 'report.html'), 'utf8');
    for (const id of ['metrics', 'recall', 'latency']) expect(html).toContain(`id="chart-${id}"`);
    expect(quorum('report', join(out, 'nowhere'), '--out', join(out, 'x.html')).stderr).toMatch(/^quorum: ERR_IO: cannot read .*metrics\.json/);
  });

  it('--version prints the package version', () => {
    const r = quorum('--version');
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe((JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version);
    // No command: one typed line and exit 1 (it printed the whole help, 48 lines, on stderr).
    const none = quorum();
    expect(none.status).toBe(1);
    expect(none.stderr.trim().split('\n')).toHaveLength(1);
    expect(none.stderr).toMatch(/^quorum: ERR_ARG: give a command: demo, eval, /);
  });

  it("eval --by-task reports each task of the embedded multi-domain benchmark", () => {
    const r = quorum('eval', '--data', join(packageRoot, 'data', 'multidomain-mini'), '--methods', 'bm25', '--metrics', 'ndcg@10', '--k', '20', '--by-task');
    expect(r.status).toBe(0);
    for (const task of ['covid', 'selqa', 'xquad']) expect(r.stdout).toMatch(new RegExp(`bm25\\s+${task}\\s+\\d+\\s+0\\.\\d{3}`));
  });

  it('index + search: BM25 over a BEIR corpus and a dense index over a vectors file, into TREC runs', () => {
    const idx = join(out, 'xq.qbm');
    expect(quorum('index', 'bm25', '--data', data, '--out', idx).status).toBe(0);
    const r = quorum('search', '--index', idx, '--data', data, '--k', '10', '--out', join(out, 'xq.trec'));
    expect(r.status).toBe(0);
    const scored = quorum('eval', '--data', data, '--run', join(out, 'xq.trec'), '--metrics', 'mrr@10');
    expect(scored.stdout).toMatch(/xq\s+0\.9\d\d/);
    // --split: only the queries of that qrels split (the embedded benchmark has train, dev and test).
    const mini = join(packageRoot, 'data', 'multidomain-mini');
    const miniIdx = join(out, 'mini.qbm');
    expect(quorum('index', 'bm25', '--data', mini, '--out', miniIdx).status).toBe(0);
    expect(quorum('search', '--index', miniIdx, '--data', mini, '--split', 'dev', '--k', '5', '--out', join(out, 'dev.trec')).status).toBe(0);
    const devIds = new Set(readFileSync(join(mini, 'qrels', 'dev.tsv'), 'utf8').trim().split('\n').slice(1).map((l) => l.split('\t')[0]));
    const searched = new Set(readFileSync(join(out, 'dev.trec'), 'utf8').trim().split('\n').map((l) => l.split(' ')[0]));
    expect([...searched].sort()).toEqual([...devIds].sort());
    expect(quorum('search', '--index', miniIdx, '--queries', join(mini, 'queries.jsonl'), '--split', 'dev', '--out', join(out, 'x.trec')).stderr).toMatch(/ERR_ARG: --split needs --data/);
    // --filter: only passages whose metadata (here: the title) match, inside the search.
    const titles = ['Super Bowl 50', 'Warsaw'];
    const f = quorum('search', '--index', miniIdx, '--data', mini, '--split', 'dev', '--k', '5', '--filter', JSON.stringify({ field: 'title', in: titles }), '--out', join(out, 'filtered.trec'));
    expect(f.stderr).toBe('');
    expect(f.stdout).toMatch(/filter: \d+ of 3,014 passages/);
    const titleOf = new Map(readFileSync(join(mini, 'corpus.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { _id: string; title: string }).map((p) => [p._id, p.title]));
    const filteredDocs = readFileSync(join(out, 'filtered.trec'), 'utf8').trim().split('\n').map((l) => l.split(' ')[2]!);
    expect(filteredDocs.length).toBeGreaterThan(0);
    for (const doc of filteredDocs) expect(titles).toContain(titleOf.get(doc));
    expect(quorum('search', '--index', miniIdx, '--queries', join(mini, 'queries.jsonl'), '--filter', '{}', '--out', join(out, 'x.trec')).stderr).toMatch(/ERR_ARG: --filter needs --data/);
    expect(quorum('search', '--index', miniIdx, '--data', mini, '--filter', '{"field":', '--out', join(out, 'x.trec')).stderr).toMatch(/ERR_ARG: --filter must be JSON/);
    // Dense: 50 vectors of dim 4; each query is a stored vector scaled up, so its best inner product is itself
    // whenever it is the longest in its direction: check against a plain-JS exact search instead.
    const n = 50;
    const d = 4;
    const v = Float32Array.from({ length: n * d }, (_, i) => Math.sin(i * 1.7) + 0.1 * (i % 7));
    writeFileSync(join(out, 'v.f32'), new Uint8Array(v.buffer));
    writeFileSync(join(out, 'v.ids'), Array.from({ length: n }, (_, i) => `doc${i}`).join('\n') + '\n');
    const q = v.slice(0, 2 * d);
    writeFileSync(join(out, 'q.f32'), new Uint8Array(q.buffer));
    writeFileSync(join(out, 'q.ids'), 'qa\nqb\n');
    expect(quorum('index', 'dense', '--vectors', join(out, 'v.f32'), '--ids', join(out, 'v.ids'), '--dim', '4', '--out', join(out, 'v.qdx')).status).toBe(0);
    expect(quorum('search', '--index', join(out, 'v.qdx'), '--query-vectors', join(out, 'q.f32'), '--query-ids', join(out, 'q.ids'), '--k', '1', '--out', join(out, 'v.trec')).status).toBe(0);
    const best = (row: number) => {
      let arg = 0;
      let top = -Infinity;
      for (let i = 0; i < n; i++) {
        let s = 0;
        for (let j = 0; j < d; j++) s += (q[row * d + j] as number) * (v[i * d + j] as number);
        if (s > top) [top, arg] = [s, i];
      }
      return `doc${arg}`;
    };
    const lines = readFileSync(join(out, 'v.trec'), 'utf8').trim().split('\n').map((l) => l.split(' '));
    expect(lines.map((l) => [l[0], l[2]])).toEqual([
      ['qa', best(0)],
      ['qb', best(1)],
    ]);
  });

  // A tiny BEIR dataset of real words: passage i is about topics[i]; its question names the topic's second word.
  const topics = ['paris france', 'tokyo japan', 'cairo egypt', 'lima peru', 'oslo norway', 'rome italy', 'madrid spain', 'berlin germany',
    'ottawa canada', 'dublin ireland', 'athens greece', 'vienna austria', 'prague czech', 'warsaw poland', 'lisbon portugal', 'moscow russia'];
  const tiny = join(out, 'tiny');
  const writeTiny = () => {
    mkdirSync(join(tiny, 'qrels'), { recursive: true });
    writeFileSync(join(tiny, 'corpus.jsonl'), topics.map((t, i) => JSON.stringify({ _id: `d${i}`, title: t.split(' ')[0], text: `the city of ${t.split(' ')[0]} is the capital of ${t.split(' ')[1]}` })).join('\n') + '\n');
    writeFileSync(join(tiny, 'queries.jsonl'), topics.map((t, i) => JSON.stringify({ _id: `q${i}`, text: `what is the capital of ${t.split(' ')[1]}`, task: 'geo' })).join('\n') + '\n');
    const qrels = (rows: number[]) => 'query-id\tcorpus-id\tscore\n' + rows.map((i) => `q${i}\td${i}\t1`).join('\n') + '\n';
    writeFileSync(join(tiny, 'qrels', 'train.tsv'), qrels([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]));
    writeFileSync(join(tiny, 'qrels', 'dev.tsv'), qrels([12, 13]));
    writeFileSync(join(tiny, 'qrels', 'test.tsv'), qrels([14, 15]));
  };

  it('train --nproc 2 and encode --nproc 3: data-parallel ranks on this machine, rank 0 logs and writes; --nproc 0 is refused', () => {
    writeTiny();
    const model = join(out, 'model-nproc');
    const t = quorum('train', '--data', tiny, '--preset', 'siamese', '--layers', '1', '--hidden', '16', '--epochs', '2', '--batch', '4', '--no-glove', '--max-passage-length', '24', '--nproc', '2', '--out', model);
    expect(t.stderr).toBe('');
    expect(t.status).toBe(0);
    expect(t.stdout).toMatch(/starting 2 ranks on this machine/);
    expect(t.stdout).toMatch(/; 2 ranks, 4 questions a batch across them/);
    expect(t.stdout.match(/epoch 2\/2: loss [\d.]+, .*dev MRR/g)).toHaveLength(1);  // rank 1 is silent
    const card = JSON.parse(readFileSync(join(model, 'model.json'), 'utf8'));
    expect(card.training.epochs).toHaveLength(2);
    // A restart with --resume continues from the last checkpoint, as ranks too.
    const more = quorum('train', '--data', tiny, '--preset', 'siamese', '--layers', '1', '--hidden', '16', '--epochs', '3', '--batch', '4', '--no-glove', '--max-passage-length', '24', '--nproc', '2', '--resume', '--out', model);
    expect(more.status).toBe(0);
    expect(more.stdout).toMatch(/resumed after epoch 2/);
    expect(more.stdout).not.toMatch(/epoch 1\/3/);
    expect(JSON.parse(readFileSync(join(model, 'model.json'), 'utf8')).training.epochs).toHaveLength(3);
    // Sharded encoding: three ranks (16 passages: 6, 5, 5) write the vectors one process writes, in corpus order.
    for (const [n, dir] of [['1', 'enc-1'], ['3', 'enc-3']] as const) expect(quorum('encode', '--model', model, '--data', tiny, '--nproc', n, '--out', join(out, dir)).status).toBe(0);
    const floats = (dir: string) => {
      const b = readFileSync(join(out, dir, 'vectors.f32'));
      return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
    };
    const one = floats('enc-1');
    const three = floats('enc-3');
    expect(three.length).toBe(16 * 16);
    expect(maxAbsDiff(one, three)).toBeLessThan(1e-5);
    expect(readFileSync(join(out, 'enc-3', 'ids.txt'), 'utf8')).toBe(readFileSync(join(out, 'enc-1', 'ids.txt'), 'utf8'));
    const bad = quorum('train', '--data', tiny, '--preset', 'siamese', '--nproc', '0', '--out', join(out, 'never'));
    expect(bad.status).toBe(1);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toMatch(/nproc must be at least 1/);
  });

  it('train, encode and eval --model: a model directory from a tiny dataset, its vectors and index, its scores', async () => {
    writeTiny();
    const model = join(out, 'model');
    const t = quorum('train', '--data', tiny, '--preset', 'taser', '--layers', '2', '--hidden', '16', '--epochs', '2', '--batch', '4', '--no-glove', '--max-passage-length', '24', '--attention-window', '8', '--out', model);
    expect(t.stderr).toBe('');
    expect(t.status).toBe(0);
    expect(t.stdout).toMatch(/12 train and 2 dev questions/);
    expect(t.stdout).toMatch(/epoch 2\/2: loss [\d.]+, .*dev MRR/);
    for (const f of ['model.json', 'vocab.txt', 'tokenizer.json', 'weights.safetensors', 'checkpoints/best.pt']) expect(existsSync(join(model, f)), f).toBe(true);
    expect(JSON.parse(readFileSync(join(model, 'tokenizer.json'), 'utf8'))).toEqual({ nfkc: true });
    const card = JSON.parse(readFileSync(join(model, 'model.json'), 'utf8'));
    expect(card).toMatchObject({ format: 'quorum-retriever', version: 1, config: { preset: 'taser', tasks: ['geo'], encoder: { attentionWindow: 8 } }, text: { maxPassageLength: 24 } });
    expect(card.training.epochs).toHaveLength(2);

    const enc = join(out, 'encoded');
    const e = quorum('encode', '--model', model, '--data', tiny, '--out', enc);
    expect(e.status).toBe(0);
    expect(readFileSync(join(enc, 'vectors.f32')).length).toBe(16 * 16 * 4);
    expect(readFileSync(join(enc, 'ids.txt'), 'utf8').trim().split('\n')).toEqual(topics.map((_, i) => `d${i}`));
    const s = quorum('search', '--index', join(enc, 'index.qdx'), '--query-vectors', join(enc, 'vectors.f32'), '--query-ids', join(enc, 'ids.txt'), '--k', '1', '--out', join(out, 'self.trec'));
    expect(s.status).toBe(0);
    // Each passage's own vector finds itself first (unit vectors, exact inner-product index).
    expect(readFileSync(join(out, 'self.trec'), 'utf8').trim().split('\n').every((l) => l.split(' ')[0] === l.split(' ')[2])).toBe(true);
    // --filter on the dense index: the allowed passages by title (from --data's corpus); d0 and d3 only.
    const titles = [0, 3].map((i) => topics[i]!.split(' ')[0]!);
    const fd = quorum('search', '--index', join(enc, 'index.qdx'), '--data', tiny, '--query-vectors', join(enc, 'vectors.f32'), '--query-ids', join(enc, 'ids.txt'), '--k', '3', '--filter', JSON.stringify({ field: 'title', in: titles }), '--out', join(out, 'fd.trec'));
    expect(fd.stderr).toBe('');
    const fdLines = readFileSync(join(out, 'fd.trec'), 'utf8').trim().split('\n');
    expect(new Set(fdLines.map((l) => l.split(' ')[2]))).toEqual(new Set(['d0', 'd3']));
    expect(fdLines).toHaveLength(16 * 2);

    // --quantize: the quantized vectors and the full ones to rescore with; a run without it removes them again.
    const qz = quorum('encode', '--model', model, '--data', tiny, '--out', enc, '--quantize', 'binary');
    expect(qz.stderr).toBe('');
    expect(qz.stdout).toMatch(/quantized\/ \(binary/);
    const bits = await QuantizedTensor.load(join(enc, 'quantized'));
    const full = await Tensor.map(join(enc, 'vectors.qtns'));
    expect([bits.kind, bits.rows, bits.dim]).toEqual(['binary', 16, 16]);
    const self = scoreTopKSync(full, bits, 1, { rescore: full }).ids;
    expect(Array.from(self)).toEqual(Array.from({ length: 16 }, (_, i) => i));
    bits.dispose();
    full.dispose();
    expect(quorum('encode', '--model', model, '--data', tiny, '--out', enc, '--quantize', 'int4').stderr).toMatch(/ERR_ARG.*--quantize must be int8 or binary/);
    expect(quorum('encode', '--model', model, '--data', tiny, '--out', enc).status).toBe(0);
    expect(existsSync(join(enc, 'quantized'))).toBe(false);
    expect(existsSync(join(enc, 'vectors.qtns'))).toBe(false);

    const v = quorum('eval', '--data', tiny, '--model', model, '--methods', 'dense,bm25,hybrid,rrf', '--metrics', 'mrr@10', '--k', '10');
    expect(v.stderr).toBe('');
    expect(v.status).toBe(0);
    expect(v.stdout).toMatch(/dense: .*taser/);
    // BM25 ranks both dev questions' passages first: the hybrid cannot gain, so the one-SE rule leaves BM25 alone.
    expect(v.stdout).toMatch(/hybrid: BM25 alone \(alpha [\d.]+: MRR@10 1\.000 on the 2 dev queries; \+0\.000 ± 0\.000 over BM25 alone out of sample, under one standard error\)/);
    const row = (out: string, name: string) => out.match(new RegExp(`^\\s+${name}\\s+([\\d.]+)$`, 'm'))?.[1];
    expect(row(v.stdout, 'bm25')).toMatch(/^[\d.]+$/);
    expect(row(v.stdout, 'hybrid')).toBe(row(v.stdout, 'bm25'));
    const unguarded = quorum('eval', '--data', tiny, '--model', model, '--methods', 'bm25,hybrid', '--metrics', 'mrr@10', '--k', '10', '--no-hybrid-guard');
    expect(unguarded.status).toBe(0);
    expect(unguarded.stdout).toMatch(/hybrid: alpha [\d.]+ \(MRR@10 1\.000 on the 2 dev queries; \+0\.000 ± 0\.000 over BM25 alone out of sample\)/);
  });

  it('train --resume continues from the last completed epoch', () => {
    writeTiny();
    const model = join(out, 'model-resume');
    const args = ['train', '--data', tiny, '--preset', 'siamese', '--layers', '1', '--hidden', '8', '--epochs', '3', '--batch', '4', '--no-glove', '--max-passage-length', '16', '--out', model];
    // A zero time budget stops after the first epoch, as an interrupted run would.
    const first = quorum(...args, '--budget', '0');
    expect(first.status).toBe(0);
    expect(first.stdout).toMatch(/epoch 1\/3/);
    expect(first.stdout).not.toMatch(/epoch 2\/3/);
    const rest = quorum(...args, '--resume');
    expect(rest.status).toBe(0);
    expect(rest.stdout).toMatch(/resumed after epoch 1/);
    expect(rest.stdout).not.toMatch(/epoch 1\/3/);
    expect(rest.stdout).toMatch(/epoch 3\/3/);
    expect(JSON.parse(readFileSync(join(model, 'model.json'), 'utf8')).training.epochs).toHaveLength(3);
  });

  it('train --projection at the GloVe width starts the head as the identity (a learning rate too small to move it)', () => {
    writeTiny();
    const model = join(out, 'model-head');
    const r = quorum('train', '--data', tiny, '--preset', 'siamese', '--layers', '0', '--projection', '100', '--epochs', '1', '--lr', '1e-12', '--max-passage-length', '16', '--dtype', 'f32', '--out', model);
    expect(r.status).toBe(0);
    const w = readSafetensors(readFileSync(join(model, 'weights.safetensors'))).get('encoder.projection.weight');
    expect(w?.shape).toEqual([100, 100]);
    let off = 0;
    w!.data.forEach((v, i) => {
      off = Math.max(off, Math.abs(v - (i % 101 === 0 ? 1 : 0)));
    });
    expect(off).toBeLessThan(1e-6);
  });

  it('train --freeze keeps the named parameters as initialised while the rest train', () => {
    writeTiny();
    const args = ['train', '--data', tiny, '--preset', 'siamese', '--layers', '1', '--hidden', '8', '--epochs', '1', '--no-glove', '--max-passage-length', '16', '--dtype', 'f32'];
    const still = join(out, 'model-still');
    const frozen = join(out, 'model-frozen');
    expect(quorum(...args, '--lr', '1e-12', '--out', still).status).toBe(0);
    // (--no-nfkc rides along: the model directory records BERT's normalization alone.)
    expect(quorum(...args, '--freeze', 'word_embeddings,layer.0.output', '--no-nfkc', '--out', frozen).status).toBe(0);
    expect(JSON.parse(readFileSync(join(frozen, 'tokenizer.json'), 'utf8'))).toEqual({ nfkc: false });
    const [a, b] = [still, frozen].map((m) => readSafetensors(readFileSync(join(m, 'weights.safetensors'))));
    const diff = (name: string) => maxAbsDiff(a!.get(name)!.data, b!.get(name)!.data);
    // The still model moved by at most its learning rate (1e-12); the frozen parameters not at all.
    expect(diff('encoder.embeddings.word_embeddings.weight')).toBeLessThan(1e-9);
    expect(diff('encoder.encoder.layer.0.output.dense.weight')).toBeLessThan(1e-9);
    expect(diff('encoder.encoder.layer.0.attention.self.query.weight')).toBeGreaterThan(1e-5);
    expect(JSON.parse(readFileSync(join(frozen, 'model.json'), 'utf8')).training.options.frozen).toEqual(['word_embeddings', 'layer.0.output']);
  });

  it('train and eval give typed one-line errors on bad input', () => {
    writeTiny();
    const model = join(out, 'model-bad');
    const ok = quorum('train', '--data', tiny, '--preset', 'siamese', '--layers', '0', '--hidden', '8', '--projection', '8', '--epochs', '1', '--no-glove', '--max-passage-length', '16', '--dtype', 'q8', '--out', model);
    expect(ok.status).toBe(0);
    const card = JSON.parse(readFileSync(join(model, 'model.json'), 'utf8'));
    expect(card.weights.dtype).toBe('Q8');
    expect(card.config.encoder.projectionDim).toBe(8);
    expect(quorum('eval', '--data', tiny, '--model', model, '--methods', 'dense').status).toBe(0);
    const version = join(out, 'model-v2');
    mkdirSync(version, { recursive: true });
    for (const f of ['vocab.txt', 'weights.safetensors']) writeFileSync(join(version, f), readFileSync(join(model, f)));
    writeFileSync(join(version, 'model.json'), readFileSync(join(model, 'model.json'), 'utf8').replace('"version": 1', '"version": 2'));
    const truncated = join(out, 'model-cut');
    mkdirSync(truncated, { recursive: true });
    for (const f of ['vocab.txt', 'model.json']) writeFileSync(join(truncated, f), readFileSync(join(model, f)));
    const w = readFileSync(join(model, 'weights.safetensors'));
    writeFileSync(join(truncated, 'weights.safetensors'), w.subarray(0, w.length - 100));
    const cases: Array<[string[], RegExp]> = [
      [['train', '--data', join(out, 'none'), '--preset', 'taser', '--out', join(out, 'm')], /^quorum: ERR_IO: cannot read/],
      [['train', '--data', tiny, '--preset', 'colbert', '--out', join(out, 'm')], /^quorum: ERR_ARG: unknown preset 'colbert'/],
      [['train', '--data', tiny, '--preset', 'taser', '--pooling', 'first', '--out', join(out, 'm')], /^quorum: ERR_ARG: unknown pooling 'first'/],
      [['train', '--data', tiny, '--preset', 'taser', '--tasks', 'nq', '--no-glove', '--out', join(out, 'm')], /^quorum: ERR_ARG: task 'nq' has no training questions/],
      [['train', '--data', tiny, '--preset', 'taser', '--dtype', 'q4', '--out', join(out, 'm')], /^quorum: ERR_ARG: --dtype must be f32, bf16 or q8, got 'q4'/],
      [['train', '--data', tiny, '--preset', 'taser', '--projection', '-1', '--out', join(out, 'm')], /^quorum: ERR_ARG: .*'-1' is invalid/],
      // Checked before the data is read: a missing dataset does not get the first word.
      [['train', '--data', join(out, 'none'), '--preset', 'taser', '--freeze', 'word_embedings', '--out', join(out, 'm')], /^quorum: ERR_NOT_FOUND: no parameter name contains 'word_embedings'/],
      [['train', '--data', tiny, '--preset', 'taser', '--freeze', ',', '--out', join(out, 'm')], /^quorum: ERR_ARG: option '--freeze <list>' argument ',' is invalid\. expected a comma-separated list, got nothing/],
      [['eval', '--data', tiny, '--model', version, '--methods', 'dense'], /^quorum: ERR_FORMAT: .*format version 2/],
      [['eval', '--data', tiny, '--model', truncated, '--methods', 'dense'], /^quorum: ERR_FORMAT: .*weights\.safetensors/],
      [['encode', '--model', join(out, 'none'), '--data', tiny, '--out', join(out, 'e')], /^quorum: ERR_IO: .*not a model directory/],
      [['demo', '--experts', 'joint', '--no-bench', '--no-report'], /^quorum: ERR_ARG: experts must be 'trained' or 'shared', got 'joint'/],
    ];
    for (const [args, message] of cases) {
      const r = quorum(...args);
      expect(r.status, args.join(' ')).toBe(1);
      expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(r.stderr, args.join(' ')).toMatch(message);
    }
  });

  it('demo runs BM25, the shipped trained model, DPR-MUF over experts trained per task and the hybrids, and writes the report (hashed TF-IDF on request)', () => {
    const report = join(out, 'demo.html');
    const r = quorum('demo', '--no-bench', '--report', report);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/dense: trained siamese \(default, 100-d\)/);
    for (const task of ['covid', 'selqa']) expect(r.stdout).toMatch(new RegExp(`\\n  expert ${task}: trained \\(best epoch [123] by dev MRR`));
    for (const row of ['BM25', 'dense', 'DPR-MUF', 'uniform fusion', 'expert covid alone', 'expert selqa alone', 'dense \\+ BM25 \\(alpha [\\d.]+\\)', 'DPR-MUF \\+ BM25 \\(alpha [\\d.]+\\)'])
      expect(r.stdout).toMatch(new RegExp(`\\n  ${row}\\s+0\\.\\d{3}\\s+0\\.\\d{3}`));
    // The experts were trained apart, each on its own task's questions: their lists differ.
    const metricsOf = (row: string) => new RegExp(`\\n  ${row}((?:\\s+0\\.\\d{3}){4})`).exec(r.stdout)![1];
    expect(metricsOf('expert covid alone')).not.toBe(metricsOf('expert selqa alone'));
    expect(r.stdout).toMatch(/question\s+task\s+P\(own\) covid\s+P\(own\) selqa\s+MI covid\s+MI selqa\s+top-1 relevant/);
    // Each task's question gets the higher P(own task) from its own expert (issue 45's demo goal).
    for (const task of ['covid', 'selqa']) {
      const row = new RegExp(`\\s${task}\\s+([\\d.]+)\\s+([\\d.]+)\\s+[\\d.]+\\s+[\\d.]+\\s+(yes|no)`).exec(r.stdout);
      expect(row, task).not.toBeNull();
      const [covid, selqa] = [Number(row![1]), Number(row![2])];
      expect(task === 'covid' ? covid - selqa : selqa - covid, task).toBeGreaterThan(0.3);
    }
    const html = readFileSync(report, 'utf8');
    for (const id of ['metrics', 'recall', 'reliability', 'confidence', 'latency']) expect(html).toContain(`id="chart-${id}"`);
    expect(r.stdout).toMatch(/f32 ids identical to the plain-JS reference \(loop \+ heap\) on the first 64 queries: yes/);
    // The shipped model (data/models/default) scored MRR@10 0.672 on this split when it was trained (27 Nov, 04:10 UTC, q8).
    const mrr = Number(/quorum scoreTopK f32\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)/.exec(r.stdout)?.[1]);
    expect(mrr).toBeGreaterThan(0.6);
    const t = quorum('demo', '--no-bench', '--model', 'tfidf', '--no-report');
    expect(t.status).toBe(0);
    expect(t.stdout).toMatch(/dense: hashed TF-IDF \(768-d\)/);
    expect(t.stdout).not.toContain('DPR-MUF');
  });

  it('eval on data without a dev split takes the hybrid alpha stored in the model card (hybrid-alpha stores it), not 1', () => {
    const model = join(out, 'default-with-alpha');
    cpSync(join(packageRoot, 'data', 'models', 'default'), model, { recursive: true });
    const card = JSON.parse(readFileSync(join(model, 'model.json'), 'utf8')) as Record<string, unknown>;
    // null: the one-SE rule chose BM25 alone, so the hybrid run is BM25's.
    writeFileSync(join(model, 'model.json'), JSON.stringify({ ...card, hybrid: { alpha: null, tunedOn: { data: 'x', questions: 10 } } }));
    const r = quorum('eval', '--data', data, '--model', model, '--methods', 'bm25,hybrid', '--metrics', 'mrr@10', '--k', '20', '--out', join(out, 'stored'));
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/hybrid: alpha BM25 alone from the model's card \(tuned on x's 10 dev questions; no dev split here\)/);
    const m = JSON.parse(readFileSync(join(out, 'stored', 'metrics.json'), 'utf8')) as { metrics: Record<string, Record<string, number>> };
    expect(m.metrics.hybrid!['mrr@10']).toBe(m.metrics.bm25!['mrr@10']);
    // hybrid-alpha tunes on a dev split and stores the result; a dataset without one is refused.
    const tuned = quorum('hybrid-alpha', '--model', model, '--data', join(packageRoot, 'data', 'multidomain-mini'));
    expect(tuned.stderr).toBe('');
    const stored = (JSON.parse(readFileSync(join(model, 'model.json'), 'utf8')) as { hybrid: { alpha: number | null; byTask: Record<string, number | null>; tunedOn: { questions: number } } }).hybrid;
    expect(stored.tunedOn.questions).toBe(200);
    expect(Object.keys(stored.byTask).sort()).toEqual(['covid', 'selqa']);
    expect(tuned.stdout).toContain(`stored in ${model}/model.json: alpha ${stored.alpha ?? 'BM25 alone'}`);
    const noDev = quorum('hybrid-alpha', '--model', model, '--data', data);
    expect([noDev.status, noDev.stderr.trim()]).toEqual([1, expect.stringMatching(/^quorum: ERR_IO: .*has no qrels\/dev\.tsv to tune the hybrid on$/)]);
  }, 240_000);

  it('eval --methods glove scores the GloVe-average baseline', () => {
    const r = quorum('eval', '--data', data, '--methods', 'glove', '--metrics', 'mrr@10');
    expect(r.status).toBe(0);
    expect(Number(/^\s+glove\s+([\d.]+)$/m.exec(r.stdout)?.[1])).toBeGreaterThan(0.5);
  });

  it('exits 1 with a one-line message on bad input', () => {
    const cases: Array<[string[], RegExp]> = [
      [['eval', '--data', join(out, 'none'), '--methods', 'bm25'], /ERR_IO: cannot read/],
      [['eval', '--data', data, '--methods', 'bm25', '--metrics', 'foo@3'], /ERR_ARG: unknown metric 'foo@3'/],
      [['eval', '--data', data, '--methods', 'splade'], /ERR_ARG: unknown method 'splade'/],
      [['eval', '--data', data, '--k', '0'], /argument '0' is invalid/],
      [['fuse', join(out, 'bm25.trec'), '--method', 'nope', '--out', join(out, 'x.trec')], /ERR_ARG: unknown fusion method 'nope'/],
      [['fuse', join(out, 'missing.trec'), '--method', 'rrf', '--out', join(out, 'x.trec')], /ERR_IO/],
      [['bogus'], /unknown command 'bogus'/],
      [['data', 'build', '--data', join(out, 'none'), '--out', join(out, 'md'), '--tasks', 'xquad'], /ERR_IO/],
      [['search', '--index', join(out, 'qrels.txt'), '--data', data, '--out', join(out, 'x.trec')], /ERR_FORMAT: .* is not a Quorum BM25 or dense index/],
      [['index', 'dense', '--vectors', join(out, 'q.f32'), '--ids', join(out, 'v.ids'), '--dim', '4', '--out', join(out, 'x.qdx')], /ERR_FORMAT: .*2 vectors/],
      [['data', 'build', '--data', out, '--out', join(out, 'md'), '--tasks', 'nq'], /ERR_ARG: unknown task 'nq'/],
      [['eval', '--data', data, '--no-such-option'], /ERR_ARG: unknown option '--no-such-option'/],
      [['eval', '--methods', 'bm25'], /ERR_ARG: required option '--data <dir>' not specified/],
      [['train', '--data', data, '--preset', 'taser', '--epochs', 'many', '--out', join(out, 'm')], /ERR_ARG: .*'many' is invalid/],
    ];
    for (const [args, message] of cases) {
      const r = quorum(...args);
      expect(r.status, args.join(' ')).toBe(1);
      expect(r.stderr, args.join(' ')).toMatch(message);
      // One line, `quorum: ERR_...`, system errors in words (no "ENOENT: ..., open '...'").
      expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(r.stderr, args.join(' ')).toMatch(/^quorum: ERR_[A-Z_]+: /);
      expect(r.stderr, args.join(' ')).not.toMatch(/\bE[A-Z]{3,}\b/);
    }
  });

  it('--help describes every command', () => {
    const r = quorum('--help');
    expect(r.status).toBe(0);
    for (const c of ['demo', 'eval', 'fuse', 'train', 'encode']) expect(r.stdout).toContain(c);
    expect(quorum('eval', '--help').stdout).toContain('--metrics');
    expect(quorum('train', '--help').stdout).toMatch(/--preset[\s\S]*--pooling[\s\S]*--resume/);
    expect(quorum('encode', '--help').stdout).toContain('--model');
  });
});
