// MufRetriever's search and searchAll over a MUF directory (the lab class, libtorch encoders, the native search stage
// since 5 Dec): wall time for 1,024 test questions, `search` in batches of 64 and `searchAll` (every fusion, each
// expert alone, the oracle) in batches of 256, three repetitions after a warm-up. Prints the ISA.
//   node --import tsx bench/muf-lab-engine.ts --muf DIR [--data data/multidomain-mini]
import { parseArgs } from 'node:util';

import { loadBeir } from '../lib/data/beir.js';
import { MufRetriever } from '../lib/methods/muf/retriever.js';
import { capabilities } from '../lib/runtime.js';

const { values } = parseArgs({ options: { muf: { type: 'string' }, data: { type: 'string', default: 'data/multidomain-mini' } } });
if (!values.muf) throw new Error('give --muf DIR (quorum muf train)');
const test = loadBeir(values.data!, 'test');
const questions = [...test.queries.values()].slice(0, 1024);
const texts = questions.map((q) => q.text);
const tasks = questions.map((q) => q.task);
const muf = await MufRetriever.load(values.muf);
const time = async (f: () => Promise<unknown>) => {
  const t0 = performance.now();
  await f();
  return Math.round(performance.now() - t0);
};
await muf.searchAll(texts.slice(0, 64), 10, { tasks: tasks.slice(0, 64) });
const runs: Record<'search' | 'searchAll', number[]> = { search: [], searchAll: [] };
for (let r = 0; r < 3; r++) {
  runs.searchAll.push(await time(async () => {
    for (let s = 0; s < texts.length; s += 256) await muf.searchAll(texts.slice(s, s + 256), 10, { tasks: tasks.slice(s, s + 256) });
  }));
  runs.search.push(await time(async () => {
    for (let s = 0; s < texts.length; s += 64) await muf.search(texts.slice(s, s + 64), 10);
  }));
}
const caps = capabilities();
console.log(`isa ${caps.isa}, ${caps.threads} threads; ${texts.length} questions, ${muf.experts.length} experts`);
console.log(`search (B = 64): ${runs.search.join(', ')} ms; searchAll (B = 256): ${runs.searchAll.join(', ')} ms`);
muf.dispose();
