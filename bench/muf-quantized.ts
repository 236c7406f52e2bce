// DPR-MUF with int8 and binary passages (issue 66, docs/results/quantization.md#dpr-muf): fused MRR@10 of MufServer over every
// test question with f32 and with int8 passages (the paired difference and its 95 % interval), B = 64 throughput of
// both (five passes, the median batch), and the passages' bytes. Same directory, same questions, one run.
//   node --import tsx bench/muf-quantized.ts --muf DIR --data DIR [--fusion muf]
import { loadBeir } from '../lib/data/beir.js';
import { MufServer } from '../lib/methods/muf/serve.js';
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

async function run(passages: 'f32' | 'int8' | 'binary') {
  const server = await MufServer.load(dir, { threads: caps.threads, passages });
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
  const batches: number[] = [];
  const texts = questions.map((q) => q.text);
  await server.search(texts.slice(0, 64), 10, { fusion }); // warm-up
  for (let pass = 0; pass < 5; pass++)
    for (let s = 0; s + 64 <= Math.min(texts.length, 640); s += 64) {
      const t0 = performance.now();
      await server.search(texts.slice(s, s + 64), 10, { fusion });
      batches.push(performance.now() - t0);
    }
  batches.sort((a, b) => a - b);
  const qps = 64 / (batches[Math.floor(batches.length / 2)]! / 1000);
  await server.dispose();
  return { rr, qps };
}

const f32 = await run('f32');
const q8 = await run('int8');
const b1 = await run('binary');
const n = f32.rr.length;
const mrr = (x: number[]) => x.reduce((a, b) => a + b, 0) / x.length;
const diff = q8.rr.map((x, i) => x - f32.rr[i]!);
const mean = mrr(diff);
const sd = Math.sqrt(diff.reduce((a, d) => a + (d - mean) ** 2, 0) / (n - 1));
const changed = diff.filter((d) => d !== 0).length;
console.log(
  `MRR@10 f32 ${mrr(f32.rr).toFixed(4)}, int8 ${mrr(q8.rr).toFixed(4)}: int8 - f32 = ${mean.toFixed(4)} ± ${((1.96 * sd) / Math.sqrt(n)).toFixed(4)} (95 %, ${n} questions, ${changed} reciprocal ranks changed)`,
);
console.log(`B = 64: f32 ${f32.qps.toFixed(0)} q/s, int8 ${q8.qps.toFixed(0)} q/s (${(q8.qps / f32.qps).toFixed(2)}x)`);
const bdiff = b1.rr.map((x, i) => x - f32.rr[i]!);
const bmean = mrr(bdiff);
const bsd = Math.sqrt(bdiff.reduce((a, d) => a + (d - bmean) ** 2, 0) / (n - 1));
console.log(`binary: MRR@10 ${mrr(b1.rr).toFixed(4)} (binary - f32 = ${bmean.toFixed(4)} ± ${((1.96 * bsd) / Math.sqrt(n)).toFixed(4)}), B = 64 ${b1.qps.toFixed(0)} q/s (${(b1.qps / f32.qps).toFixed(2)}x)`);
writeResults('muf-quantized', {
  machine: { isa: caps.isa, threads: caps.threads, cpu: caps.cpu },
  questions: n,
  fusion,
  mrr: { f32: mrr(f32.rr), int8: mrr(q8.rr), diff: mean, half95: (1.96 * sd) / Math.sqrt(n), changed },
  b64: { f32: f32.qps, int8: q8.qps, binary: b1.qps },
  binary: { mrr: mrr(b1.rr), diff: bmean, half95: (1.96 * bsd) / Math.sqrt(n) },
});
