// Dense top-k benchmark: Quorum's fused scoreTopK (f32 and bf16 corpus) against plain JS, OpenBLAS + heap,
// faiss IndexFlatIP, usearch exactSearch and simsimd, all measured in this process, plus the machine's
// memory bandwidth and FMA peak, and event-loop lag during an async search.
import { Tensor, capabilities, scoreTopKSync } from '../lib/index.js';
import { plainJsTopK } from '../lib/cli/plain-js-topk.js';
import { baselinesAddon, simsimd, usearch } from './baselines.js';
import { type LagResult, measureLag, measureLagInFreshProcess } from './event-loop-lag.js';
import { fillRandom, fmt, printTable, timeIt } from './harness.js';

export interface DenseBenchOptions {
  dim: number;
  k: number;
  cases: Array<{ n: number; batches: number[] }>;
  lagCorpus: number;
}

interface Measured {
  n: number;
  b: number;
  contender: string;
  qps: number;
  agree?: number;
  note?: string;
}

function overlap(a: ArrayLike<number>, b: ArrayLike<number | bigint>, rows: number, k: number): number {
  let same = 0;
  for (let r = 0; r < rows; r++) {
    const s = new Set<number>();
    for (let j = 0; j < k; j++) s.add(Number(a[r * k + j]));
    for (let j = 0; j < k; j++) if (s.has(Number(b[r * k + j]))) same++;
  }
  return same / (rows * k);
}

export async function benchDense(opts: DenseBenchOptions): Promise<{ machine: Record<string, unknown>; rows: Measured[]; lag: { inProcess?: LagResult; freshProcess?: LagResult }; checks: string[] }> {
  const caps = capabilities();
  const threads = caps.threads;
  const base = baselinesAddon();
  const us = usearch();
  const sd = simsimd();
  const { dim: D, k } = opts;
  const machine: Record<string, unknown> = {
    isa: caps.isa,
    threads,
    cpu: caps.cpu,
    OPENBLAS_CORETYPE: process.env.OPENBLAS_CORETYPE ?? '(unset)',
    blasCore: base?.blasCore() ?? 'n/a',
  };
  if (base) {
    machine.memReadGBs = base.memReadGBs(threads);
    machine.memReadGBs1Thread = base.memReadGBs(1);
    machine.fmaPeakGflops = base.fmaPeakGflops(threads);
    machine.fmaPeakGflops1Thread = base.fmaPeakGflops(1);
  }
  console.log('machine:', JSON.stringify(machine));
  const rows: Measured[] = [];
  let lagCorpus: Tensor<'f32'> | undefined;

  for (const { n: N, batches } of opts.cases) {
    const corpus = Tensor.zeros([N, D], 'f32');
    fillRandom(corpus.data, 7);
    const C = corpus.data;
    const bf16 = corpus.to('bf16');
    const faiss = base ? new base.FaissFlat(C, D) : undefined;
    for (const B of batches) {
      const Q = fillRandom(new Float32Array(B * D), 1000 + B);
      const q = Tensor.wrap(Q, [B, D]);
      const scanSeconds = (N * D * 4) / 1e9 / 10; // rough: ~10 GB/s
      const budget = { minSeconds: Math.min(3, Math.max(1, scanSeconds * 20)), maxReps: 30 };
      const ours = scoreTopKSync(q, corpus, k);
      const add = (contender: string, seconds: number, agree?: number, note?: string) => {
        rows.push({ n: N, b: B, contender, qps: B / seconds, ...(agree !== undefined ? { agree } : {}), ...(note ? { note } : {}) });
        console.log(`  N=${N} B=${B} ${contender}: ${fmt(B / seconds)} QPS${agree !== undefined ? ` (agree ${fmt(agree)})` : ''}`);
      };
      add('quorum f32', await timeIt(() => scoreTopKSync(q, corpus, k), budget));
      const rb = scoreTopKSync(q, bf16, k);
      add('quorum bf16', await timeIt(() => scoreTopKSync(q, bf16, k), budget), overlap(ours.ids, rb.ids, B, k));
      if (base) {
        const r = base.blasTopK(C, Q, D, k, threads);
        add('openblas+heap', await timeIt(() => base.blasTopK(C, Q, D, k, threads), budget), overlap(ours.ids, r.ids, B, k));
      }
      if (faiss) {
        const r = faiss.search(Q, k, threads);
        add('faiss IndexFlatIP', await timeIt(() => faiss.search(Q, k, threads), budget), overlap(ours.ids, r.ids, B, k));
      }
      if (us) {
        const run = () => us.exactSearch(C, Q, D, k, 'ip', threads);
        const r = run();
        add('usearch exactSearch', await timeIt(run, budget), overlap(ours.ids, r.keys, B, k));
      }
      if (sd && B === 1) {
        const run = () => {
          const s = new Float32Array(N);
          for (let n = 0; n < N; n++) s[n] = sd.inner(Q, C.subarray(n * D, (n + 1) * D));
          return s;
        };
        add('simsimd.inner per row', await timeIt(run, { minReps: 2, minSeconds: 1, maxReps: 5 }), undefined, 'scores only, no top-k');
      }
      {
        // Plain JS costs the same per query at any B: time a few queries and report QPS.
        const bj = Math.min(B, N > 200_000 ? 1 : 2);
        const Qj = Q.subarray(0, bj * D);
        const r = plainJsTopK(Qj, C, D, k);
        const t = await timeIt(() => plainJsTopK(Qj, C, D, k), { minReps: 1, minSeconds: 0, maxReps: 2 });
        rows.push({ n: N, b: B, contender: 'plain JS', qps: bj / t, agree: overlap(ours.ids, r.ids, bj, k), note: `timed on ${bj} queries` });
        console.log(`  N=${N} B=${B} plain JS: ${fmt(bj / t)} QPS`);
      }
      q.dispose();
    }
    bf16.dispose();
    if (N === opts.lagCorpus) lagCorpus = corpus;
    else corpus.dispose();
  }

  // Event-loop lag while async searches over the large corpus run back to back (see event-loop-lag.ts).
  let lag: LagResult | undefined;
  let freshLag: LagResult | undefined;
  if (lagCorpus) {
    lag = await measureLag(lagCorpus, 16, k);
    const rowsN = lagCorpus.shape[0] as number;
    lagCorpus.dispose();
    freshLag = measureLagInFreshProcess(rowsN, D, 16, k);
  }

  // Ratios against contenders measured in this run, and the issue's targets.
  const checks: string[] = [];
  const get = (n: number, b: number, c: string) => rows.find((r) => r.n === n && r.b === b && r.contender === c)?.qps;
  const ratioRows: Array<Array<string | number>> = [];
  for (const { n: N, batches } of opts.cases) {
    for (const B of batches) {
      const ours = get(N, B, 'quorum f32') as number;
      for (const r of rows.filter((x) => x.n === N && x.b === B && x.contender !== 'quorum f32')) {
        ratioRows.push([`${N / 1000}k x ${D}`, B, r.contender, r.qps, ours / r.qps, r.agree ?? '', r.note ?? '']);
      }
    }
  }
  console.log('\nquorum f32 QPS / contender QPS (same run):');
  printTable(['corpus', 'B', 'contender', 'QPS', 'quorum f32 / it', 'agree', 'note'], ratioRows);

  const target = (label: string, value: number | undefined, min: number) => {
    if (value === undefined || !Number.isFinite(value)) return;
    checks.push(`${value >= min ? 'PASS' : 'MISS'}  ${label}: ${fmt(value)}x (target >= ${min}x)`);
  };
  for (const { n: N, batches } of opts.cases) {
    const f = (b: number, c: string) => (get(N, b, 'quorum f32') ?? NaN) / (get(N, b, c) ?? NaN);
    const tag = `${N / 1000}k`;
    if (batches.includes(1)) {
      target(`${tag} B=1 f32 vs openblas sgemv+heap`, f(1, 'openblas+heap'), 1.0);
      target(`${tag} B=1 f32 vs usearch`, f(1, 'usearch exactSearch'), 1.0);
      target(`${tag} B=1 f32 vs faiss`, f(1, 'faiss IndexFlatIP'), 3);
      target(`${tag} B=1 f32 vs plain JS`, f(1, 'plain JS'), 10);
      target(`${tag} B=1 bf16 vs our f32`, (get(N, 1, 'quorum bf16') ?? NaN) / (get(N, 1, 'quorum f32') ?? NaN), 1.7);
    }
    if (batches.includes(16)) target(`${tag} B=16 f32 vs openblas sgemm+heap`, f(16, 'openblas+heap'), 2);
    if (batches.includes(256)) {
      target(`${tag} B=256 f32 vs openblas sgemm+heap`, f(256, 'openblas+heap'), 0.9);
      target(`${tag} B=256 f32 vs faiss`, f(256, 'faiss IndexFlatIP'), 3);
      target(`${tag} B=256 f32 vs plain JS`, f(256, 'plain JS'), 100);
    }
  }
  const describe = (l: LagResult) => `${fmt(l.maxMs)} ms (p99 ${fmt(l.p99Ms)} ms; ${l.calls} calls; longest GC pause in the window ${fmt(l.gcPauseMaxMs)} ms)`;
  if (freshLag) {
    const windows = freshLag.windowMaxMs ? `median of ${freshLag.windowMaxMs.length} windows' maxima (${freshLag.windowMaxMs.map((v) => fmt(v)).join(', ')} ms; idle control ${fmt(freshLag.idleMaxMs ?? NaN)} ms), ` : '';
    checks.push(`${freshLag.maxMs < 10 ? 'PASS' : 'MISS'}  event-loop lag max during async scoreTopK (B=16) over ${freshLag.corpusRows} rows, fresh process: ${windows}${describe(freshLag)} (target < 10 ms)`);
  }
  if (lag) checks.push(`${lag.maxMs < 10 ? 'pass' : 'miss'}  (same, inside the benchmark process after its gigabytes of garbage: ${describe(lag)})`);
  console.log('\ntargets:');
  for (const c of checks) console.log('  ' + c);
  return { machine, rows, lag: { inProcess: lag, freshProcess: freshLag }, checks };
}
