// What one DPR-MUF question costs the event loop (the main thread), piece by piece, against its wall time and the
// process's CPU: a server's throughput is bounded by the event loop's share once the native work is small
// (docs/results/serving.md#the-example-server-under-load). Each piece is awaited 3,000 times, one at a time.
//   node --import tsx bench/muf-event-loop.ts --muf DIR [--question TEXT]
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { MufServer } from '../lib/methods/muf/serve.js';
import { ServingEncoder } from '../lib/models/serving-encoder.js';
import { capabilities } from '../lib/runtime.js';
import { arg, writeResults } from './harness.js';

const dir = arg('muf', '');
if (!dir) throw new Error('give --muf DIR (quorum muf train)');
const question = [arg('question', 'what is the incubation period of covid-19?')];
const reps = 3000;
console.log(`isa ${capabilities().isa}, ${capabilities().threads} threads`);

const rows: Array<{ piece: string; wallUs: number; eventLoopUs: number; cpuUs: number }> = [];
async function measure(piece: string, f: () => Promise<unknown>) {
  for (let i = 0; i < 300; i++) await f();
  const elu0 = performance.eventLoopUtilization();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) await f();
  const wall = ((performance.now() - t0) * 1000) / reps;
  const elu = performance.eventLoopUtilization(elu0);
  const cpu = process.cpuUsage(cpu0);
  rows.push({ piece, wallUs: Math.round(wall), eventLoopUs: Math.round((elu.active * 1000) / reps), cpuUs: Math.round((cpu.user + cpu.system) / reps) });
}

const name = readdirSync(join(dir, 'experts'))[0]!;
const encoder = await ServingEncoder.load(join(dir, 'experts', name, 'model'));
const tokens = encoder.tokenizer.encode(question, { maxLength: encoder.text.maxQueryLength });
await measure(`one expert: tokenize (encodeAsync)`, () => encoder.tokenizer.encodeAsync(question, { maxLength: encoder.text.maxQueryLength }));
await measure(`one expert: embed the tokens (encodeBatch)`, () => encoder.encodeBatch(tokens, 'query'));
await measure(`one expert: encodeQueries`, () => encoder.encodeQueries(question));
await encoder.dispose();
const server = await MufServer.load(dir);
await measure(`MufServer.search, ${server.names.length} experts, 'muf'`, () => server.search(question, 10));
await measure(`MufServer.search, ${server.names.length} experts, 'uniform'`, () => server.search(question, 10, { fusion: 'uniform' }));
await server.dispose();
console.table(rows);
console.log(`results written to ${writeResults('muf-event-loop', { date: new Date().toISOString(), dir, rows })}`);
