// A bounded load test of examples/server/server.mjs on 127.0.0.1 (autocannon): for each mode, `--seconds` of
// requests from `--connections` concurrent clients, each request a different test question of the dataset; prints
// requests/s, p50 / p99 latency, errors and non-2xx responses, and exits 1 when any request failed.
//   node examples/server/load-test.mjs [--seconds 10] [--connections 8] [--muf DIR] [--data DIR] [--batch] [--json FILE]
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import autocannon from 'autocannon';
import { loadBeir } from 'quorum-retrieval/data';
import { packageRoot } from 'quorum-retrieval';

import { startServer } from './server.mjs';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '10' }, connections: { type: 'string', default: '8' }, muf: { type: 'string' }, data: { type: 'string' }, json: { type: 'string' }, batch: { type: 'boolean', default: false } },
});
const data = values.data ?? join(packageRoot, 'data', 'multidomain-mini');
const ds = loadBeir(data, 'test');
const questions = ds.queries.filter((q) => ds.qrels.has(q.id));
const { server, service, url } = await startServer({ data, muf: values.muf, port: 0, batch: values.batch });
console.log(`server ${url}: ${service.passages} passages, modes ${service.modes.join(', ')}${values.batch ? ' (batched)' : ''}; ${values.connections} connections x ${values.seconds} s per mode`);

const rows = [];
for (const mode of service.modes) {
  let next = 0;
  const result = await autocannon({
    url,
    connections: Number(values.connections),
    duration: Number(values.seconds),
    requests: [
      {
        setupRequest: (req) => {
          const q = questions[next++ % questions.length];
          return { ...req, method: 'GET', path: `/search?mode=${mode}&k=10&q=${encodeURIComponent(q.text)}` };
        },
      },
    ],
  });
  rows.push({ mode, requests: result.requests.total, 'req/s': result.requests.average, 'p50 ms': result.latency.p50, 'p99 ms': result.latency.p99, errors: result.errors + result.timeouts, 'non-2xx': result.non2xx });
}
server.close();
console.table(rows);
if (values.json) writeFileSync(values.json, JSON.stringify(rows, null, 2) + '\n');
const failed = rows.reduce((a, r) => a + r.errors + r['non-2xx'], 0);
if (failed > 0) {
  console.error(`load test: ${failed} failed requests`);
  process.exit(1);
}
