// Calls every function of every entry point with garbage arguments (none, undefined, null, a string, a number, {},
// [], NaN, ...) and lists those that throw something other than a QuorumError (or reject with one). Classes and
// writers are left out (their methods are in test/robustness-*). Run in its own process by
// test/robustness-sweep.test.ts:
//   node --import tsx test/sweep-errors.ts
import { QuorumError } from '../lib/index.js';
import { publicNames } from './entries.js';

const Q = Object.fromEntries([...(await publicNames())].map(([name, { value }]) => [name, value]));
const garbage: unknown[][] = [[], [undefined], [null], ['x'], [5], [{}], [[]], [Number.NaN], [{}, {}], ['x', 'y', 'z'], [[1], 'q', -1]];
const skip = new Set(['setThreads', 'setIsa', 'Retriever', 'Tensor', 'DenseIndex', 'SparseIndex', 'Bm25Index', 'QuorumError', 'WordPieceTokenizer', 'TokenTable', 'GloveAverageEncoder', 'MlpEnsemble', 'MufRetriever', 'CameModel', 'CameRetriever', 'TokenIndex', 'ColbertIndex', 'ColbertEncoder', 'RomNetwork', 'RomModel', 'TermIdf', 'IndexRefresh', 'RegWeightScheduler', 'RequestBatcher', 'Live', 'ServingEncoder', 'MufServer', 'FamiliarityBank', 'MetadataTable', 'CameServer', 'RomServer', 'loadGloveVectors', 'buildMultiDomain', 'writeMultiDomain', 'writeBeir', 'writeQrels', 'writeRun', 'writeSquad', 'writeDpr', 'trainRetriever', 'ProcessGroup', 'QuantizedTensor']);
const bad: string[] = [];
for (const [name, f] of Object.entries(Q)) {
  if (typeof f !== 'function' || skip.has(name)) continue;
  for (const args of garbage) {
    let r: unknown;
    try {
      r = (f as (...a: unknown[]) => unknown)(...args);
    } catch (e) {
      if (!(e instanceof QuorumError)) bad.push(`${name}(${args.map((a) => JSON.stringify(a) ?? 'undefined').join(', ')}): sync ${(e as Error)?.name}: ${String((e as Error)?.message).slice(0, 70)}`);
      continue;
    }
    if (r instanceof Promise) {
      try { await r; } catch (e) {
        if (!(e instanceof QuorumError)) bad.push(`${name}(${args.map((a) => JSON.stringify(a) ?? 'undefined').join(', ')}): async ${(e as Error)?.name}: ${String((e as Error)?.message).slice(0, 70)}`);
      }
    }
  }
}
const byFn = new Map<string, string>();
for (const b of bad) { const n = b.slice(0, b.indexOf('(')); if (!byFn.has(n)) byFn.set(n, b); }
let calls = 0;
for (const [name, f] of Object.entries(Q)) if (typeof f === 'function' && !skip.has(name)) calls += garbage.length;
console.log(bad.length, 'untyped;', byFn.size, 'functions;', calls, 'calls');
for (const v of byFn.values()) console.log(v);
if (bad.length) process.exitCode = 1;
