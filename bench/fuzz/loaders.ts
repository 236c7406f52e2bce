// Seeded mutation fuzzing of the dense (faiss) and sparse index loaders. Each input is a valid index's bytes,
// mutated, with its checksum (and the dense payload's length field) recomputed so that the mutation reaches the
// parser instead of stopping at the checksum. A loaded index is then searched, reconstructed and re-serialized,
// since a corrupt structure may only fail when used. Any outcome but success or a QuorumError is a finding;
// a crash kills the process (run it as a child: bench/fuzz-loaders.ts, test/robustness-loaders.test.ts).
import { writeFileSync, writeSync } from 'node:fs';

import { DenseIndex } from '../../lib/dense-index.js';
import { QuorumError } from '../../lib/errors.js';
import { seededRandom } from '../../lib/random.js';
import { SparseIndex } from '../../lib/sparse-index.js';

const PRIME = 1099511628211n;
const MASK = (1n << 64n) - 1n;

/** persist::WordHash (native/common/persist.cc): FNV-1a 64 over little-endian 64-bit words, then the tail. */
export function wordHash(bytes: Uint8Array): bigint {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let h = 1469598103934665603n;
  const words = Math.floor(bytes.length / 8);
  for (let i = 0; i < words; i++) h = ((h ^ view.getBigUint64(i * 8, true)) * PRIME) & MASK;
  const tail = bytes.length - words * 8;
  for (let i = words * 8; i < bytes.length; i++) h = ((h ^ BigInt(bytes[i] as number)) * PRIME) & MASK;
  return ((h ^ BigInt(tail)) * PRIME) & MASK;
}

/** FNV-1a 64 over bytes (the sparse index's checksum). */
export function fnv1a64(bytes: Uint8Array): bigint {
  let h = 1469598103934665603n;
  for (const b of bytes) h = ((h ^ BigInt(b)) * PRIME) & MASK;
  return h;
}

type Kind = 'dense' | 'sparse';
interface Seed {
  kind: Kind;
  name: string;
  bytes: Uint8Array;
  /** Where the mutable body starts (past magic and version, which only ever give one error). */
  body: number;
}

function denseSeeds(rand: () => number): Seed[] {
  const d = 8;
  const n = 60;
  const x = new Float32Array(n * d).map(() => rand() * 2 - 1);
  const ids = BigInt64Array.from({ length: n }, (_, i) => BigInt(i * 3 + 1));
  const seeds: Seed[] = [];
  const factories: Array<[string, object]> = [
    ['Flat', {}],
    ['HNSW4', {}],
    ['HNSW8', { mips: 'l2' }],
    ['IVF4,Flat', { nprobe: 2 }],
    ['IVF2,PQ4x4', {}],
    ['PQ2x4', {}],
    ['SQ8', {}],
    ['PCA4,Flat', {}],
  ];
  for (const [factory, extra] of factories) {
    const index = DenseIndex.create({ dim: d, factory, ...extra });
    if (!index.info.trained) index.trainSync(x);
    index.addSync(x, ids);
    seeds.push({ kind: 'dense', name: factory, bytes: new Uint8Array(index.toBuffer()), body: 12 });
  }
  return seeds;
}

function sparseSeeds(rand: () => number): Seed[] {
  const index = new SparseIndex();
  const docs = Array.from({ length: 40 }, () =>
    Array.from({ length: 1 + Math.floor(rand() * 6) }, () => ({ index: Math.floor(rand() * 50), value: rand() * 3 })),
  );
  index.addSync(
    BigInt64Array.from({ length: 40 }, (_, i) => BigInt(i * 7)),
    docs.map((row) => [...new Map(row.map((t) => [t.index, t])).values()]),
  );
  return [{ kind: 'sparse', name: 'sparse', bytes: new Uint8Array(index.toBuffer()), body: 12 }];
}

const INTERESTING = [0, 1, 2, 3, 7, 8, 0x7f, 0x80, 0xff, 0x7fff, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff];

/** `body` (a seed's bytes without their trailer) with the trailer rebuilt to match. */
function sealed(kind: Kind, body: Uint8Array): Uint8Array {
  const trailer = kind === 'dense' ? 16 : 8;
  const out = new Uint8Array(body.length + trailer);
  out.set(body);
  const view = new DataView(out.buffer);
  if (kind === 'dense') {
    // The faiss payload length: the body past the header; the header's own factory-length field may have been
    // mutated, so measure it from the header as the loader will.
    const flen = body.length >= 40 ? view.getUint32(36, true) : 0;
    view.setBigUint64(body.length, BigInt(Math.max(0, body.length - 40 - flen)), true);
    view.setBigUint64(body.length + 8, wordHash(out.subarray(0, body.length + 8)), true);
  } else {
    view.setBigUint64(body.length, fnv1a64(out.subarray(0, body.length)), true);
  }
  return out;
}

/** One mutation of `s.bytes` (its trailer excluded), trailer rebuilt to match. */
function mutate(s: Seed, rand: () => number): Uint8Array {
  const trailer = s.kind === 'dense' ? 16 : 8;
  let body = s.bytes.slice(0, s.bytes.length - trailer);
  const pick = (lo: number, hi: number) => lo + Math.floor(rand() * Math.max(1, hi - lo));
  const steps = 1 + Math.floor(rand() * 3);
  for (let step = 0; step < steps; step++) {
    const r = rand();
    if (r < 0.35) {
      for (let i = 0, m = 1 + Math.floor(rand() * 4); i < m; i++) {
        const at = pick(s.body, body.length);
        body[at] = body[at]! ^ (1 << Math.floor(rand() * 8));
      }
    } else if (r < 0.65) {
      // A size or count field set to an edge value: 4-byte or 8-byte, at any offset.
      const at = pick(s.body, body.length - 8);
      const v = INTERESTING[Math.floor(rand() * INTERESTING.length)] as number;
      if (at + 8 > body.length) continue;
      const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
      if (rand() < 0.5) view.setUint32(at, v >>> 0, true);
      else view.setBigUint64(at, rand() < 0.5 ? BigInt(v) : BigInt.asUintN(64, -BigInt(v)), true);
    } else if (r < 0.8) {
      const at = pick(s.body, body.length);
      body = body.slice(0, at + (rand() < 0.5 ? 0 : Math.floor(rand() * (body.length - at))));
    } else if (r < 0.9) {
      const from = pick(s.body, body.length);
      const len = Math.min(body.length - from, 1 + Math.floor(rand() * 64));
      const to = pick(s.body, body.length - len);
      body.copyWithin(to, from, from + len);
    } else {
      const at = pick(s.body, body.length);
      const extra = new Uint8Array(1 + Math.floor(rand() * 16)).map(() => Math.floor(rand() * 256));
      const grown = new Uint8Array(body.length + extra.length);
      grown.set(body.subarray(0, at));
      grown.set(extra, at);
      grown.set(body.subarray(at), at + extra.length);
      body = grown;
    }
  }
  return sealed(s.kind, body);
}

/** Uses a loaded index the way a server would, to reach structures that only fail when read. */
function exercise(kind: Kind, bytes: Uint8Array): void {
  if (kind === 'dense') {
    const index = DenseIndex.fromBuffer(bytes);
    const dim = index.info.dim;
    const q = new Float32Array(3 * dim).map((_, i) => Math.sin(i + 1));
    const top = index.searchSync(q, 5);
    const found = Array.from(top.ids).filter((id) => id >= 0n);
    if (found.length) index.reconstructSync(found.slice(0, 3));
    DenseIndex.fromBuffer(index.toBuffer());
  } else {
    const index = SparseIndex.fromBuffer(bytes);
    index.searchSync([[{ index: 3, value: 1 }, { index: 17, value: 0.5 }], [{ index: 0, value: 2 }]], 5);
    SparseIndex.fromBuffer(index.toBuffer());
  }
}

/**
 * Every single-byte change (XOR `mask`) of one seed index's body (every `stride`-th byte), checksums rebuilt:
 * the exhaustive neighbourhood of a valid file. `name` is a factory string of the dense seeds, or 'sparse'.
 */
export function byteFlips(name: string, mask = 0x41, seed = 1, trace?: string, stride = 1): FuzzReport {
  const rand = seededRandom(seed);
  const s = [...denseSeeds(rand), ...sparseSeeds(rand)].find((x) => x.name === name);
  if (!s) throw new Error(`no seed index named ${name}`);
  const trailer = s.kind === 'dense' ? 16 : 8;
  const body = s.bytes.slice(0, s.bytes.length - trailer);
  const report: FuzzReport = { iterations: 0, seconds: 0, bySeed: {}, untyped: [] };
  const row = (report.bySeed[name] = { tried: 0, accepted: 0, codes: {} as Record<string, number> });
  const t0 = performance.now();
  for (let at = s.body; at < body.length; at += stride) {
    const m = body.slice();
    m[at] = m[at]! ^ mask;
    row.tried++;
    report.iterations++;
    const input = sealed(s.kind, m);
    if (trace) {
      writeFileSync(trace, input);
      writeSync(2, `byte ${at}\n`);
    }
    try {
      exercise(s.kind, input);
      row.accepted++;
    } catch (e) {
      if (e instanceof QuorumError) row.codes[e.code] = (row.codes[e.code] ?? 0) + 1;
      else if (report.untyped.length < 20) report.untyped.push(`${name} byte ${at}: ${(e as Error).name}: ${(e as Error).message}`);
    }
  }
  report.seconds = (performance.now() - t0) / 1000;
  return report;
}

export interface FuzzReport {
  iterations: number;
  seconds: number;
  /** Per seed: inputs tried, loaded and used without error, and rejected per error code. */
  bySeed: Record<string, { tried: number; accepted: number; codes: Record<string, number> }>;
  /** Errors that were not QuorumErrors (each a finding). */
  untyped: string[];
}

/** Runs `iterations` mutated inputs spread over every seed index; deterministic for a seed. */
export async function fuzzLoaders(iterations: number, seed = 1, kinds: Kind[] = ['dense', 'sparse'], trace?: string): Promise<FuzzReport> {
  const rand = seededRandom(seed);
  const seeds = [...(kinds.includes('dense') ? denseSeeds(rand) : []), ...(kinds.includes('sparse') ? sparseSeeds(rand) : [])];
  const report: FuzzReport = { iterations, seconds: 0, bySeed: {}, untyped: [] };
  const t0 = performance.now();
  for (let i = 0; i < iterations; i++) {
    // Native objects are freed by finalizers that run when the event loop turns: a loop that never yields
    // holds every index it loaded (4 GB after 490,000 inputs).
    if (i % 1000 === 999) await new Promise((r) => setImmediate(r));
    const s = seeds[i % seeds.length] as Seed;
    const row = (report.bySeed[s.name] ??= { tried: 0, accepted: 0, codes: {} });
    row.tried++;
    const input = mutate(s, rand);
    if (trace) {
      // The input about to run, on disk before it can crash the process (reproduce with DenseIndex.fromBuffer).
      writeFileSync(trace, input);
      writeSync(2, `${i} ${s.name}\n`);
    }
    try {
      exercise(s.kind, input);
      row.accepted++;
    } catch (e) {
      if (e instanceof QuorumError) row.codes[e.code] = (row.codes[e.code] ?? 0) + 1;
      else if (report.untyped.length < 20) report.untyped.push(`${s.name}: ${(e as Error).name}: ${(e as Error).message}`);
    }
  }
  report.seconds = (performance.now() - t0) / 1000;
  return report;
}
