// An HTTP dense-search service over a 100k x 768 corpus (a faiss Flat DenseIndex, inner product, as the example
// server's dense mode) under autocannon, one request per question vector, with and without RequestBatcher: the same
// server code, the same requests, in one run (issue 44's goal: batching at least 5x the unbatched throughput at 64
// connections, 0 errors).
//   node --import tsx bench/batching.ts [--n 100000] [--dim 768] [--connections 64] [--seconds 10] [--wait 2]
import { createServer } from 'node:http';

import autocannon from 'autocannon';

import { DenseIndex } from '../lib/dense-index.js';
import { RequestBatcher } from '../lib/batcher.js';
import { capabilities } from '../lib/runtime.js';
import { arg, normalDraws, writeResults } from './harness.js';

const n = Number(arg('n', '100000'));
const dim = Number(arg('dim', '768'));
const connections = Number(arg('connections', '64'));
const seconds = Number(arg('seconds', '10'));
const waitMs = Number(arg('wait', '2'));
const K = 10;

const caps = capabilities();
console.log(`isa ${caps.isa}, ${caps.threads} threads; corpus ${n} x ${dim}, ${connections} connections x ${seconds} s per variant`);

// Random unit-free vectors (normal draws); questions are a pool of other draws, picked by the request's row.
const normal = normalDraws();
const corpus = Float32Array.from({ length: n * dim }, normal);
const poolSize = 4096;
const pool = Float32Array.from({ length: poolSize * dim }, normal);
const index = DenseIndex.create({ dim, factory: 'Flat', mips: 'inner-product' });
await index.add(corpus, BigInt64Array.from({ length: n }, (_, i) => BigInt(i)));

type Hits = Array<{ id: string; score: number }>;
const asHits = (hits: Array<{ id: bigint; score: number }>): Hits => hits.map((h) => ({ id: h.id.toString(), score: h.score }));

async function searchOne(row: number): Promise<Hits> {
  const r = await index.search(pool.subarray(row * dim, (row + 1) * dim), K);
  return asHits(r.hits(0));
}

function serve(batched: boolean) {
  const batcher = batched
    ? new RequestBatcher(async (rows: number[]) => {
        const q = new Float32Array(rows.length * dim);
        rows.forEach((row, i) => q.set(pool.subarray(row * dim, (row + 1) * dim), i * dim));
        const r = await index.search(q, K);
        return rows.map((_, i) => asHits(r.hits(i)));
      }, { maxBatch: 64, maxWaitMs: waitMs, maxQueue: 4096, timeoutMs: 30_000 })
    : undefined;
  const server = createServer((req, res) => {
    const row = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('row'));
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (!Number.isInteger(row) || row < 0 || row >= poolSize) return send(400, { error: 'row' });
    (batcher ? batcher.submit(row) : searchOne(row)).then(
      (hits) => send(200, { hits }),
      (e: Error & { code?: string }) => send(e.code === 'ERR_BUSY' ? 503 : 500, { error: { code: e.code, message: e.message } }),
    );
  });
  return { server, batcher };
}

const rows: Array<Record<string, number | string>> = [];
for (const batched of [false, true]) {
  const { server, batcher } = serve(batched);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  let next = 0;
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections,
    duration: seconds,
    requests: [{ setupRequest: (req: object) => ({ ...req, method: 'GET', path: `/search?row=${next++ % poolSize}` }) }],
  });
  await new Promise((r) => server.close(r));
  const stats = batcher?.stats();
  batcher?.close();
  const row = {
    variant: batched ? `batched (up to 64, ${waitMs} ms window)` : 'one search per request',
    requests: result.requests.total,
    'req/s': result.requests.average,
    'p50 ms': result.latency.p50,
    'p99 ms': result.latency.p99,
    errors: result.errors + result.timeouts,
    'non-2xx': result.non2xx,
    ...(stats ? { 'mean batch': +(stats.requests / Math.max(stats.batches, 1)).toFixed(1), 'largest batch': stats.largestBatch } : {}),
  };
  rows.push(row);
  console.log(JSON.stringify(row));
}
console.table(rows);
const ratio = (rows[1]!['req/s'] as number) / (rows[0]!['req/s'] as number);
console.log(`batched / unbatched throughput: ${ratio.toFixed(2)}x`);
const path = writeResults('batching', { date: new Date().toISOString(), machine: { isa: caps.isa, threads: caps.threads, node: process.version }, n, dim, connections, seconds, waitMs, rows, ratio });
console.log(`results written to ${path}`);
index.dispose();
