// DPR-MUF with int8 and binary passages (issue 66, docs/results/quantization.md#dpr-muf): fused MRR@10 of MufServer over every
// test question with f32 vectors and with int8 / binary passages and int8 familiarity banks (each against f32: the
// paired difference and its 95 % interval), B = 64 throughput (seven passes taken in turns, the median batch). Same directory, same
// questions, one run.
//   node --import tsx bench/muf-quantized.ts --muf DIR --data DIR [--fusion muf]
import { loadBeir } from '../lib/data/beir.js';
import { MufServer, type MufServerOptions } from '../lib/methods/muf/serve.js';
import { capabilities } from '../lib/runtime.js';
import { arg, writeResults } from './harness.js';

const dir = arg('muf', '/tmp/qfull/muf');
const data = arg('data', '/tmp/qfull/data');
const fusion = arg('fusion', 'muf') as 'muf' | 'muf-mi' | 'uniform';
const caps = capabilities();
console.log(`isa ${caps.isa}, ${caps.threads} threads, cpu ${JSON.stringify(caps.cpu)}`);

const test = loadBeir(data, 'test');
const questions = test.queries.filter((q) => test.qrels.has(q.id));
console.log(`${questions.length} test questions, fusion ${fusion}`);

type Variant = Pick<MufServerOptions, 'passages' | 'familiarity'>;
const variants: Array<[string, Variant]> = [
  ['f32', {}],
  ['int8 passages', { passages: 'int8' }],
  ['int8 passages + int8 familiarity banks', { passages: 'int8', familiarity: 'int8' }],
  ['binary passages (4 x L rescored from the mapped f32 vectors)', { passages: 'binary' }],
];
const texts = questions.map((q) => q.text);

/** Every test question's reciprocal rank. */
async function reciprocalRanks(server: MufServer): Promise<number[]> {
  const rr: number[] = [];
  for (let s = 0; s < questions.length; s += 64) {
    const qs = questions.slice(s, s + 64);
    const res = await server.search(
      qs.map((q) => q.text),
      10,
      { fusion },
    );
    res.forEach((r, i) => {
      const rel = test.qrels.get(qs[i]!.id)!;
      const at = r.hits.findIndex((h) => (rel.get(h.id) ?? 0) > 0);
      rr.push(at < 0 ? 0 : 1 / (at + 1));
    });
  }
  return rr;
}

const servers: MufServer[] = [];
for (const [, options] of variants) servers.push(await MufServer.load(dir, { threads: caps.threads, ...options }));
const rrs: number[][] = [];
for (const server of servers) rrs.push(await reciprocalRanks(server));
// Throughput: B = 64 batches of the first 640 test questions, the variants taking turns pass by pass (so that the VM's
// drift falls on all of them alike), seven passes; each variant's median batch.
const batches: number[][] = servers.map(() => []);
for (const server of servers) await server.search(texts.slice(0, 64), 10, { fusion }); // warm-up
for (let pass = 0; pass < 7; pass++)
  for (const [v, server] of servers.entries())
    for (let s = 0; s + 64 <= Math.min(texts.length, 640); s += 64) {
      const t0 = performance.now();
      await server.search(texts.slice(s, s + 64), 10, { fusion });
      batches[v]!.push(performance.now() - t0);
    }
const qps = batches.map((b) => {
  b.sort((x, y) => x - y);
  return 64 / (b[Math.floor(b.length / 2)]! / 1000);
});
for (const server of servers) await server.dispose();

const mrr = (x: number[]) => x.reduce((a, b) => a + b, 0) / x.length;
const f32 = rrs[0]!;
const n = f32.length;
console.log(`f32: MRR@10 ${mrr(f32).toFixed(4)}, B = 64 ${qps[0]!.toFixed(0)} q/s`);
const rows = [];
for (let v = 1; v < variants.length; v++) {
  const [name, options] = variants[v]!;
  // Paired over the questions: the difference's mean and its 95 % interval.
  const diff = rrs[v]!.map((x, i) => x - f32[i]!);
  const mean = mrr(diff);
  const half95 = (1.96 * Math.sqrt(diff.reduce((a, d) => a + (d - mean) ** 2, 0) / (n - 1))) / Math.sqrt(n);
  const changed = diff.filter((d) => d !== 0).length;
  const ratio = qps[v]! / qps[0]!;
  console.log(
    `${name}: MRR@10 ${mrr(rrs[v]!).toFixed(4)} (- f32 = ${mean.toFixed(4)} ± ${half95.toFixed(4)}, ${changed} reciprocal ranks changed), B = 64 ${qps[v]!.toFixed(0)} q/s (${ratio.toFixed(2)}x f32)`,
  );
  rows.push({ name, options, mrr: mrr(rrs[v]!), diff: mean, half95, changed, qps: qps[v]!, ratio });
}
writeResults('muf-quantized', {
  machine: { isa: caps.isa, threads: caps.threads, cpu: caps.cpu },
  questions: n,
  fusion,
  f32: { mrr: mrr(f32), qps: qps[0] },
  variants: rows,
});
