// Micro-benchmarks of the issue-3 kernels (MaxSim, SPLADE pooling, InfoNCE, ensemble MI) against libtorch
// (quorum_torch_baselines.node) and plain JS (test/reference), all in one run.
//
// libtorch runs at 1 and at 2 ATen threads and the faster counts (its matmuls use OpenBLAS's own threads, so
// one ATen thread is often its best); ours run with the pool's default thread count.
import { Tensor, capabilities, setThreads } from '../lib/index.js';
import { ensembleMISync, infoNceSync, maxSimSync, spladePoolSync } from '../lib/entries/kernels.js';
import { ensembleMIRef } from '../test/reference/ensemble.js';
import { infoNceGradRef } from '../test/reference/infonce.js';
import { maxSimRef } from '../test/reference/maxsim.js';
import { spladePoolRef } from '../test/reference/splade.js';
import { type TorchTimed, baselinesAddon, torchBaselinesAddon } from './baselines.js';
import { fillRandom, fmt, median, printTable, settle, timeIt } from './harness.js';

export interface KernelRow {
  kernel: string;
  case: string;
  contender: string;
  ms: number;
  note?: string;
}

async function torchBest<T>(run: () => TorchTimed<T>): Promise<{ ms: number; out: T; threads: number }> {
  let best: { ms: number; out: T; threads: number } | undefined;
  for (const threads of [1, 2]) {
    const r = await torchAt(threads, run);
    if (!best || r.ms < best.ms) best = { ms: r.ms, out: r.out, threads };
  }
  return best!;
}

// Each thread count starts on a settled process (see settle): the first run's BLAS threads would otherwise
// still be spinning through the second.
async function torchAt<T>(threads: number, run: () => TorchTimed<T>): Promise<TorchTimed<T>> {
  torchBaselinesAddon()!.setThreads(threads);
  await settle();
  return run();
}

// libtorch's faster ATen thread count for `run`, by the medians of alternated rounds, chosen once before the
// timed rounds. Taking the better of the two counts inside every round (torchBest) would give libtorch the
// better of two timing windows per round on this VM, whose speed changes within seconds, and ours one.
const kThreadChoiceRounds = 3;
async function torchThreadsFor(run: () => TorchTimed<unknown>): Promise<number> {
  const ms: number[][] = [[], []];
  for (let r = 0; r < kThreadChoiceRounds; r++)
    for (const threads of [1, 2]) ms[threads - 1]!.push((await torchAt(threads, run)).ms);
  return median(ms[0]!) <= median(ms[1]!) ? 1 : 2;
}

function threadNote(threads: number, quick: boolean): string {
  return quick
    ? `${threads} ATen thread (quick run: 1 and 2 not compared)`
    : `${threads} ATen thread(s), the faster of 1 and 2 over ${kThreadChoiceRounds} alternated rounds`;
}

// This VM's speed drifts by tens of percent within a minute, so ours and libtorch alternate over rounds and
// the medians count; returns both medians and both per-round times (ms).
async function alternated(rounds: number, ours: () => Promise<number>, theirs: (() => Promise<number>) | undefined) {
  const oursMs: number[] = [], theirsMs: number[] = [];
  for (let r = 0; r < rounds; r++) {
    oursMs.push(await ours());
    if (theirs) theirsMs.push(await theirs());
  }
  return { ours: median(oursMs), theirs: theirs ? median(theirsMs) : undefined, oursMs, theirsMs };
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs((a[i] as number) - (b[i] as number)));
  return m;
}

export async function benchKernels(opts: { quick: boolean }): Promise<{ rows: KernelRow[]; checks: string[]; memReadGBs?: number }> {
  const torch = torchBaselinesAddon();
  const base = baselinesAddon();
  const threads = capabilities().threads;
  let memReadGBs: number | undefined;  // the median of the bandwidths measured beside spladePool
  const rows: KernelRow[] = [];
  const checks: string[] = [];
  const add = (kernel: string, c: string, contender: string, ms: number, note?: string) => {
    rows.push({ kernel, case: c, contender, ms, ...(note ? { note } : {}) });
    console.log(`  ${kernel} ${c} ${contender}: ${fmt(ms)} ms${note ? ` (${note})` : ''}`);
  };
  const ratio = (label: string, ours: number, other: number | undefined, min: number, context = '') => {
    if (other === undefined || !Number.isFinite(other)) return;
    const v = other / ours;
    checks.push(`${v >= min ? 'PASS' : 'MISS'}  ${label}: ${fmt(v)}x (target >= ${min}x)${context}`);
  };
  if (!torch) console.log('  (quorum_torch_baselines.node not built: libtorch rows skipped)');

  // MaxSim: Lq = 32 query tokens against N documents of 180 tokens x 128 dims (f32), ColBERT's sizes.
  for (const N of opts.quick ? [1000] : [1000, 10_000]) {
    const Ld = 180, d = 128, Lq = 32;
    const c = `${N} docs x ${Ld} x ${d}, Lq=${Lq}`;
    const docs = Tensor.zeros([N, Ld, d]);
    fillRandom(docs.data, 11);
    const q = fillRandom(new Float32Array(Lq * d), 12);
    const lengths = new Int32Array(N).fill(Ld);
    const got = maxSimSync({ data: q, shape: [Lq, d] }, { tokens: docs, lengths }).scores.data;
    let torchOut: Float32Array | undefined;
    const torchRun = () => torch!.maxSim(q, docs.data, lengths, N, Ld, d, Lq, 3);
    const torchThreads = torch && !opts.quick ? await torchThreadsFor(torchRun) : 1;
    // Five rounds: with three, two rounds caught in one slow phase of the VM set the median.
    const m = await alternated(
      opts.quick ? 1 : 5,
      async () => (await timeIt(() => maxSimSync({ data: q, shape: [Lq, d] }, { tokens: docs, lengths }), { minReps: 5, minSeconds: 0.5 })) * 1e3,
      torch
        ? async () => {
            const t = await torchAt(torchThreads, torchRun);
            torchOut = t.out;
            return t.ms;
          }
        : undefined,
    );
    add('maxSim', c, 'quorum f32', m.ours, `median of ${m.oursMs.length} rounds alternated with libtorch: ${m.oursMs.map((v) => fmt(v)).join(', ')} ms`);
    const bf = docs.to('bf16');
    add('maxSim', c, 'quorum bf16 docs', (await timeIt(() => maxSimSync({ data: q, shape: [Lq, d] }, { tokens: bf, lengths }), { minReps: 5 })) * 1e3);
    bf.dispose();
    if (m.theirs !== undefined && torchOut) {
      add('maxSim', c, 'libtorch matmul+max+sum', m.theirs, `median of ${m.theirsMs.length} rounds (${m.theirsMs.map((v) => fmt(v)).join(', ')} ms), ${threadNote(torchThreads, opts.quick)}; max |diff| ${fmt(maxAbsDiff(got, torchOut))}`);
      ratio(`maxSim ${N} docs vs libtorch`, m.ours, m.theirs, 3);
    }
    // Plain JS on the first 100 documents, scaled to N (the cost is linear in N).
    const sub = 100;
    const start = Int32Array.from({ length: sub }, (_, i) => i * Ld);
    const t0 = performance.now();
    maxSimRef({ q, nq: 1, lq: Lq, dim: d, tokens: docs.data.subarray(0, sub * Ld * d), start, length: lengths.subarray(0, sub) });
    const js = ((performance.now() - t0) * N) / sub;
    add('maxSim', c, 'plain JS', js, `measured on ${sub} docs, scaled`);
    ratio(`maxSim ${N} docs vs plain JS`, m.ours, js, 50);
    docs.dispose();
  }

  // SPLADE pooling: 32 x 128 x 30522 f32 logits, random sequence lengths (masked tails).
  {
    const B = 32, L = 128, V = 30522;
    const c = `${B} x ${L} x ${V}, random lengths`;
    const x = Tensor.zeros([B, L, V]);
    fillRandom(x.data, 21);
    const mask = new Uint8Array(B * L);
    let used = 0;
    const lens = fillRandom(new Float32Array(B), 22);
    for (let b = 0; b < B; b++) {
      const len = 8 + Math.floor(((lens[b] as number) + 1) / 2 * (L - 8));
      mask.fill(1, b * L, b * L + len);
      used += len;
    }
    const gb = (used * V * 4) / 1e9;
    // The bandwidth this VM gives drifts by 10-20% within a minute, so each round measures it right before
    // timing the kernel, and the share is the median of the rounds' shares (not our time over a bandwidth
    // measured at the start of the bench, half a minute earlier).
    const rounds = opts.quick ? 1 : 5;
    const valueRounds: number[] = [], bwRounds: number[] = [], shares: number[] = [];
    for (let r = 0; r < rounds; r++) {
      await settle();
      const bw = base?.memReadGBs(threads);
      const t = await timeIt(() => spladePoolSync(x, { mask }), { minReps: 5 });
      valueRounds.push(t);
      if (bw) {
        bwRounds.push(bw);
        shares.push(gb / t / bw);
      }
    }
    const values = median(valueRounds);
    add('spladePool', c, 'quorum values', values * 1e3, `${fmt(gb / values)} GB/s of unmasked logits; median of ${rounds} rounds: ${valueRounds.map((v) => fmt(v * 1e3)).join(', ')} ms`);
    const witharg = await timeIt(() => spladePoolSync(x, { mask, argmax: true }), { minReps: 5 });
    add('spladePool', c, 'quorum values+argmax', witharg * 1e3, `${fmt(gb / witharg)} GB/s`);
    if (shares.length) {
      const share = median(shares), bw = median(bwRounds);
      memReadGBs = bw;
      checks.push(`${share >= 0.7 ? 'PASS' : 'MISS'}  spladePool (values) at ${fmt(100 * share)}% of the read bandwidth measured beside it (median of ${rounds} rounds: ${shares.map((v) => fmt(100 * v)).join(', ')}%; bandwidth ${bwRounds.map((v) => fmt(v)).join(', ')} GB/s) (target >= 70%; with arg-max ${fmt((100 * gb) / witharg / bw)}%)`);
    }
    const got = spladePoolSync(x, { mask }).weights.data;
    if (torch) {
      const t = await torchBest(() => torch.spladePool(x.data, mask, B, L, V, 2));
      add('spladePool', c, 'libtorch max(log1p(relu(x))*mask)', t.ms, `${t.threads} ATen thread(s); max |diff| ${fmt(maxAbsDiff(got, t.out))}`);
      ratio('spladePool vs libtorch', values * 1e3, t.ms, 3);
    }
    const t0 = performance.now();
    spladePoolRef(x.data.subarray(0, 2 * L * V), 2, L, V, mask.subarray(0, 2 * L));
    const js = ((performance.now() - t0) * B) / 2;
    add('spladePool', c, 'plain JS', js, 'measured on 2 sequences, scaled');
    x.dispose();
  }

  // InfoNCE forward + backward: B = 128 queries, each with its positive and one hard negative (M = 256).
  {
    const B = 128, D = 768, M = 2 * B;
    const c = `B=${B} M=${M} D=${D}`;
    const q = fillRandom(new Float32Array(B * D), 31).map((v) => v * 0.1);
    const p = fillRandom(new Float32Array(M * D), 32).map((v) => v * 0.1);
    const pos = Int32Array.from({ length: B }, (_, i) => 2 * i);
    // Native tensors, as a training loop holds its embeddings (64-byte aligned, unlike most JS arrays).
    const qt = Tensor.from(q, [B, D]);
    const pt = Tensor.from(p, [M, D]);
    // A training step consumes its gradients and disposes them, so their blocks are recycled (see
    // native/common/aligned_buffer.h); results left to the GC are measured beside it.
    const step = () => {
      const r = infoNceSync(qt, pt, pos);
      r.dQ!.dispose();
      r.dP!.dispose();
      r.rowLoss.dispose();
      r.rank.dispose();
    };
    // Many short rounds (50 calls each, as libtorch's): this VM's speed changes within seconds, and a round
    // of ours and the libtorch round after it should see the same phase of it.
    const rounds = opts.quick ? 1 : 11;
    const torchRun = () => torch!.infoNce(q, p, pos, B, M, D, 50);
    const torchThreads = torch && !opts.quick ? await torchThreadsFor(torchRun) : 1;
    // The loss is FMA-bound (6 B M D flops), so each round also samples two ceilings of the moment on the
    // pool's threads: the FMA peak (register-only chains) and the rate of a GEMM register tile on each thread
    // (loads feeding FMAs, as in the loss). On this VM the tile rate of a thread drops by a third or more for
    // seconds at a time while the chains hold (docs/results/kernels.md#gemm-tile-rate-and-the-vms-slow-phases).
    const flops = 6 * B * M * D;
    const peaks: number[] = [], tiles: number[][] = [];
    const m = await alternated(
      rounds,
      async () => {
        // Settled first: libtorch's OpenBLAS threads spin on for about 130 ms after its round.
        await settle();
        if (base) {
          peaks.push(base.fmaPeakGflops(threads, 3e6));
          tiles.push(base.tileRateGflops(threads));
        }
        return (await timeIt(step, { minReps: 50, minSeconds: 0, maxReps: 50 })) * 1e3;
      },
      torch ? async () => (await torchAt(torchThreads, torchRun)).ms : undefined,
    );
    const ours = m.ours;
    const pct = (ms: number, gflops: number) => `${((flops / ms / 1e6 / gflops) * 100).toFixed(0)}%`;
    const tileSum = (t: number[]) => t.reduce((a, b) => a + b, 0);
    const share = peaks.length
      ? `; FMA peak before each round ${peaks.map((g) => fmt(g)).join(', ')} GFLOP/s, ours at ${m.oursMs.map((v, i) => pct(v, peaks[i]!)).join(', ')} of it` +
        `; GEMM-tile rate per thread ${tiles.map((t) => t.map((g) => g.toFixed(0)).join('+')).join(', ')} GFLOP/s, ours at ${m.oursMs.map((v, i) => pct(v, tileSum(tiles[i]!))).join(', ')} of their sum`
      : '';
    add('infoNce', c, 'quorum fwd+bwd', ours, `median of ${rounds} rounds alternated with libtorch: ${m.oursMs.map((v) => fmt(v)).join(', ')} ms${share}`);
    const leftToGc = await timeIt(() => infoNceSync(qt, pt, pos), { minReps: 50, minSeconds: 1 });
    add('infoNce', c, 'quorum fwd+bwd, results left to GC', leftToGc * 1e3);
    const borrowed = await timeIt(() => infoNceSync({ data: q, shape: [B, D] }, { data: p, shape: [M, D] }, pos), { minReps: 50, minSeconds: 1 });
    add('infoNce', c, 'quorum fwd+bwd, borrowed JS arrays', borrowed * 1e3);
    // Cosine scores (DPR variants and CAME train with them): the norms and the normalization's Jacobian are extra
    // row passes over the pool, and dQ reads a second, rescaled score matrix.
    const cosineStep = () => {
      const r = infoNceSync(qt, pt, pos, { cosine: true, temperature: 0.05 });
      for (const t of [r.dQ!, r.dP!, r.rowLoss, r.rank]) t.dispose();
    };
    const cosine = await timeIt(cosineStep, { minReps: 50, minSeconds: 1 });
    add('infoNce', c, 'quorum fwd+bwd, cosine (tau 0.05)', cosine * 1e3, 'not a target; the dot-product rows above are');
    if (torch) {
      const got = infoNceSync(qt, pt, pos);
      const t = torch.infoNce(q, p, pos, B, M, D, 1);
      const tm = m.theirs!;
      add('infoNce', c, 'libtorch autograd', tm, `median of ${rounds} rounds (${m.theirsMs.map((v) => fmt(v)).join(', ')} ms), ${threadNote(torchThreads, opts.quick)}, its matmuls on OpenBLAS's own ${torch.blasThreads()} threads; |loss diff| ${fmt(Math.abs(got.loss - t.out.loss))}, max |dQ diff| ${fmt(maxAbsDiff(got.dQ!.data, t.out.dq))}`);
      // The state of the VM in these rounds, in one number: at quiet moments this VM's two threads make 200-215.
      const state = tiles.length ? `; GEMM-tile rate ${fmt(median(tiles.map(tileSum)))} GFLOP/s summed over the pool's ${threads} threads (median of the rounds)` : '';
      ratio('infoNce fwd+bwd vs libtorch autograd', ours, tm, 1.5, state);
      // One core each (libtorch with ATen and OpenBLAS at one thread): the kernels alone, apart from how each
      // side uses the second core, which on this VM swings from round to round. Not a target.
      if (!opts.quick) {
        const blasThreads = torch.blasThreads();
        setThreads(1);
        torch.setBlasThreads(1);
        try {
          const one = await alternated(
            5,
            async () => (await timeIt(step, { minReps: 30, minSeconds: 0, maxReps: 30 })) * 1e3,
            async () => (await torchAt(1, torchRun)).ms,
          );
          add('infoNce', c, 'quorum fwd+bwd, 1 thread', one.ours, `median of 5 rounds alternated with libtorch: ${one.oursMs.map((v) => fmt(v)).join(', ')} ms`);
          add('infoNce', c, 'libtorch autograd, 1 ATen and 1 OpenBLAS thread', one.theirs!, `median of 5 rounds: ${one.theirsMs.map((v) => fmt(v)).join(', ')} ms`);
          checks.push(`info  infoNce fwd+bwd on one core each: ${fmt(one.theirs! / one.ours)}x (not a target)`);
        } finally {
          setThreads(threads);
          torch.setBlasThreads(blasThreads);
        }
      }
    }
    const t0 = performance.now();
    infoNceGradRef({ q, p, B, M, D, pos });
    add('infoNce', c, 'plain JS fwd+bwd', performance.now() - t0, 'one call');
  }

  // Ensemble MI: K = 20 members x L = 100 candidates x 10,000 queries, temperature 1e-3 (DPR-MUF).
  {
    const Bq = 10_000, K = 20, L = 100;
    const c = `${Bq} queries, K=${K}, L=${L}`;
    const z = Tensor.zeros([Bq, K, L]);
    fillRandom(z.data, 41);
    for (let i = 0; i < z.size; i++) z.data[i] = 70 + 5 * (z.data[i] as number);
    const exact = await timeIt(() => ensembleMISync(z, { temperature: 1e-3 }), { minReps: 5 });
    add('ensembleMI', c, 'quorum exact', exact * 1e3);
    const muf = await timeIt(() => ensembleMISync(z, { temperature: 1e-3, mode: 'muf' }), { minReps: 5 });
    add('ensembleMI', c, 'quorum muf (eps 1e-6)', muf * 1e3);
    if (torch) {
      const got = ensembleMISync(z, { temperature: 1e-3, mode: 'muf' }).confidence.data;
      const t = await torchBest(() => torch.ensembleMI(z.data, Bq, K, L, 1e-3, 1e-6, 2));
      add('ensembleMI', c, 'libtorch softmax/log/sum (eps 1e-6)', t.ms, `${t.threads} ATen thread(s); max |conf diff| ${fmt(maxAbsDiff(got, t.out))}`);
      ratio('ensembleMI (muf mode, the same formula) vs libtorch', muf * 1e3, t.ms, 10);
    }
    const rowsOf = (b: number) => Array.from({ length: K }, (_, k) => Array.from(z.data.subarray((b * K + k) * L, (b * K + k + 1) * L)));
    const t0 = performance.now();
    for (let b = 0; b < 200; b++) ensembleMIRef(rowsOf(b), 1e-3, 'muf');
    add('ensembleMI', c, 'plain JS', ((performance.now() - t0) * Bq) / 200, 'measured on 200 queries, scaled');
    z.dispose();
  }

  console.log('\nkernels (ms per call, same run):');
  printTable(
    ['kernel', 'case', 'contender', 'ms', 'note'],
    rows.map((r) => [r.kernel, r.case, r.contender, r.ms, r.note ?? '']),
  );
  console.log('\nkernel targets:');
  for (const c of checks) console.log('  ' + c);
  return { rows, checks, ...(memReadGBs !== undefined ? { memReadGBs } : {}) };
}
