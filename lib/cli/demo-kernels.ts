// The demo's kernel sections: the fused dense top-k (f32 and bf16) against the plain-JS reference on the dataset,
// and the speed comparison on a random corpus.
import { scoreTopK, scoreTopKSync } from '../dense.js';
import { evaluate, rankedRun, type Qrels } from '../eval/ranking.js';
import { plainJsTopK } from './plain-js-topk.js';
import { Tensor } from '../tensor.js';
import { table } from './table.js';

/** Queries the plain-JS reference checks (and is timed on). */
const REFERENCE_QUERIES = 64;

const fmt = (x: number) => Math.round(x).toLocaleString('en-US');

/** Seconds per call of `fn`: one untimed call, then as many as fit in `minMs`. */
function seconds(fn: () => void, minMs = 400): number {
  fn();
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < minMs) {
    fn();
    n++;
  }
  return (performance.now() - t0) / 1000 / n;
}

/** scoreTopK in f32 and bf16 over the dataset (metrics, queries/s), checked against plain JS on a sample. */
export async function kernelCheck(
  queries: Tensor<'f32'>,
  corpus: Tensor<'f32'>,
  qids: readonly string[],
  docIds: readonly string[],
  qrels: Qrels,
  k = 20,
): Promise<void> {
  const dim = corpus.shape[1] as number;
  const B = qids.length;
  const bf16 = corpus.to('bf16');
  try {
    const runs = [
      {
        name: 'quorum scoreTopK f32',
        ids: (await scoreTopK(queries, corpus, k)).ids,
        sec: seconds(() => scoreTopKSync(queries, corpus, k)),
      },
      { name: 'quorum scoreTopK bf16', ids: (await scoreTopK(queries, bf16, k)).ids, sec: seconds(() => scoreTopKSync(queries, bf16, k)) },
    ];
    const rows = runs.map((r) => {
      const run = new Map(
        qids.map((q, b) => [q, Array.from(r.ids.subarray(b * k, (b + 1) * k), (i) => (i >= 0 ? (docIds[i] ?? '') : ''))]),
      );
      return {
        method: r.name,
        ...evaluate(rankedRun(run), qrels, ['recall@1', 'recall@5', 'recall@20', 'mrr@10']).mean,
        'queries/s': B / r.sec,
      };
    });
    console.log(`native dense top-${k} of ${B} queries over ${docIds.length} passages:`);
    table(rows);
    // The plain-JS reference on a sample of the queries only: over a large dataset it would take minutes.
    const sample = Math.min(B, REFERENCE_QUERIES);
    const sampleQueries = queries.data.subarray(0, sample * dim);
    const reference = plainJsTopK(sampleQueries, corpus.data, dim, k);
    const same = reference.ids.every((id, i) => id === runs[0]?.ids[i]);
    const jsRate = sample / seconds(() => plainJsTopK(sampleQueries, corpus.data, dim, k), 200);
    console.log(
      `  f32 ids identical to the plain-JS reference (loop + heap) on the first ${sample} queries: ${same ? 'yes' : 'NO'}; plain JS ${fmt(jsRate)} queries/s, quorum f32 ${fmt(B / (runs[0]?.sec ?? 1))}\n`,
    );
  } finally {
    bf16.dispose();
  }
}

/** Queries/s of the fused top-10 on a random 100k x 768 corpus, f32 and bf16, against the plain-JS loop. */
export function speedCheck(): void {
  const N = 100_000;
  const D = 768;
  console.log(`speed on a random ${N / 1000}k x ${D} corpus, top-10 (full comparison: npm run bench):`);
  const big = Tensor.zeros([N, D]);
  let x = 12345;
  const data = big.data;
  for (let i = 0; i < data.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    data[i] = (x >>> 0) / 2147483648 - 1;
  }
  const bigBf16 = big.to('bf16');
  const speed: Array<Record<string, string | number>> = [];
  for (const b of [1, 16]) {
    const q = Tensor.from(data.subarray(0, b * D), [b, D]);
    const f32 = b / seconds(() => scoreTopKSync(q, big, 10));
    const h = b / seconds(() => scoreTopKSync(q, bigBf16, 10));
    const js = 1 / seconds(() => plainJsTopK(data.subarray(0, D), data, D, 10), 1);
    speed.push({ B: String(b), 'quorum f32 QPS': f32, 'quorum bf16 QPS': h, 'plain JS QPS': js, 'f32 / JS': f32 / js });
    q.dispose();
  }
  table(speed);
  big.dispose();
  bigBf16.dispose();
}
