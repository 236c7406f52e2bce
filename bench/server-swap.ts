// The example server under load while its admin route swaps in new versions (issue 46's goal: a swap loses no request
// and keeps p99 within 2x). Two runs of the same load in one process, `--seconds` each: one with no swap, one during
// which POST /admin/swap rebuilds the whole version (dataset, BM25, dense index, encoder) every `--every` seconds,
// alternating between the embedded benchmark and a copy whose ids are prefixed. Each reply is checked: status 200,
// and its hits' ids all from the version the reply names. Needs `npm run build:ts` (the server imports dist/).
//   node --import tsx bench/server-swap.ts [--mode dense] [--connections 8] [--seconds 12] [--every 3]
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import autocannon from 'autocannon';

import { loadBeir } from '../lib/data/beir.js';
import { packageRoot } from '../lib/native.js';
import { capabilities } from '../lib/runtime.js';
import { arg, writeResults } from './harness.js';

const mode = arg('mode', 'dense');
const connections = Number(arg('connections', '8'));
const seconds = Number(arg('seconds', '12'));
const every = Number(arg('every', '3'));
const caps = capabilities();
console.log(`isa ${caps.isa}, ${caps.threads} threads; mode ${mode}, ${connections} connections x ${seconds} s, a swap every ${every} s`);

const mini = join(packageRoot, 'data', 'multidomain-mini');
const copy = join(tmpdir(), `quorum-swap-bench-${process.pid}`);
mkdirSync(copy, { recursive: true });
const lines = readFileSync(join(mini, 'corpus.jsonl'), 'utf8').trim().split('\n');
writeFileSync(join(copy, 'corpus.jsonl'), lines.map((l) => JSON.stringify({ ...JSON.parse(l), _id: `v-${(JSON.parse(l) as { _id: string })._id}` })).join('\n') + '\n');

const ds = loadBeir(mini, 'test');
const questions = ds.queries.filter((q) => ds.qrels.has(q.id));
const token = 'bench-token-0123456789abcdef';
const { startServer } = (await import(join(packageRoot, 'examples', 'server', 'server.mjs'))) as {
  startServer(o: object): Promise<{ server: { close(): void }; url: string }>;
};
const { server, url } = await startServer({ port: 0, adminToken: token });

interface Run {
  variant: string;
  requests: number;
  'req/s': number;
  'p50 ms': number;
  'p99 ms': number;
  'max ms': number;
  errors: number;
  'non-2xx': number;
  'wrong version': number;
  swaps: number;
  'swap ms': string;
}

async function run(variant: string, swapping: boolean): Promise<Run> {
  let next = 0;
  let wrong = 0;
  const swapMs: number[] = [];
  let stop = false;
  const swapper = (async () => {
    if (!swapping) return;
    for (let i = 0; !stop; i++) {
      await new Promise((r) => setTimeout(r, every * 1000));
      if (stop) break;
      const t0 = performance.now();
      const r = await fetch(`${url}/admin/swap`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: JSON.stringify({ data: i % 2 === 0 ? copy : mini }) });
      if (r.status !== 200) throw new Error(`swap ${i}: ${r.status} ${await r.text()}`);
      swapMs.push(performance.now() - t0);
    }
  })();
  const result = await autocannon({
    url,
    connections,
    duration: seconds,
    requests: [
      {
        setupRequest: (req) => ({ ...req, method: 'GET', path: `/search?mode=${mode}&k=10&q=${encodeURIComponent(questions[next++ % questions.length]!.text)}` }),
        onResponse: (status, body) => {
          if (status !== 200) return;
          const b = JSON.parse(body) as { version: number; hits: Array<{ id: string }> };
          // Odd versions serve the embedded ids, even versions the prefixed copy (the swaps alternate from version 1).
          if (!b.hits.every((h) => h.id.startsWith('v-') === (b.version % 2 === 0))) wrong++;
        },
      },
    ],
  });
  stop = true;
  await swapper;
  return {
    variant,
    requests: result.requests.total,
    'req/s': Math.round(result.requests.average),
    'p50 ms': result.latency.p50,
    'p99 ms': result.latency.p99,
    'max ms': result.latency.max,
    errors: result.errors + result.timeouts,
    'non-2xx': result.non2xx,
    'wrong version': wrong,
    swaps: swapMs.length,
    'swap ms': swapMs.map((x) => x.toFixed(0)).join(' '),
  };
}

const rows = [await run('no swap', false), await run(`swap every ${every} s`, true)];
server.close();
console.table(rows);
console.log(`p99 with swaps / without: ${(rows[1]!['p99 ms'] / rows[0]!['p99 ms']).toFixed(2)}x (goal at most 2x); failed or wrong replies: ${rows[1]!.errors + rows[1]!['non-2xx'] + rows[1]!['wrong version']}`);
writeResults('server-swap', { isa: caps.isa, mode, connections, seconds, every, rows });
