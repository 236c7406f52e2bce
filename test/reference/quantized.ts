// Plain TypeScript reference of quantization (native/kernels/quant.h): the tables, the codes and the scores of int8
// and binary corpora, written from the definitions in docs/methods/quantization.md with f32 rounding where the native
// code rounds to f32. Tests compare the native kernels of every ISA against it.

const f = Math.fround;

/** Round half to even (C's nearbyint in the default rounding mode). */
export function rint(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

export interface Int8Ref {
  codes: Uint8Array;
  scale: Float32Array;
  offset: Float32Array;
}

export function quantizeInt8Ref(x: Float32Array, rows: number, dim: number, clip = 0): Int8Ref {
  const scale = new Float32Array(dim);
  const offset = new Float32Array(dim);
  for (let d = 0; d < dim; d++) {
    const col = Float32Array.from({ length: rows }, (_, r) => x[r * dim + d]!).sort();
    const a = Math.floor(clip * (rows - 1));
    const lo = col[a]!,
      hi = col[rows - 1 - a]!;
    offset[d] = lo;
    scale[d] = f(f(hi - lo) / 255);
  }
  const codes = new Uint8Array(rows * dim);
  for (let r = 0; r < rows; r++)
    for (let d = 0; d < dim; d++) {
      const s = scale[d]!;
      codes[r * dim + d] = s > 0 ? Math.min(255, Math.max(0, rint(f(f(x[r * dim + d]! - offset[d]!) / s)))) : 0;
    }
  return { codes, scale, offset };
}

export interface BinaryRef {
  /** Each row's bits as 0 / 1 per dimension. */
  bits: Uint8Array;
  alpha: Float32Array;
  pop: Uint32Array;
  center: Float32Array | undefined;
}

export function quantizeBinaryRef(x: Float32Array, rows: number, dim: number, centered = true): BinaryRef {
  let center: Float32Array | undefined;
  if (centered) {
    center = new Float32Array(dim);
    for (let d = 0; d < dim; d++) {
      let s = 0;
      for (let r = 0; r < rows; r++) s += x[r * dim + d]!;
      center[d] = s / rows;
    }
  }
  const bits = new Uint8Array(rows * dim);
  const alpha = new Float32Array(rows);
  const pop = new Uint32Array(rows);
  for (let r = 0; r < rows; r++) {
    let l1 = 0;
    for (let d = 0; d < dim; d++) {
      const v = f(x[r * dim + d]! - (center ? center[d]! : 0));
      l1 += Math.abs(v);
      if (v > 0) {
        bits[r * dim + d] = 1;
        pop[r]!++;
      }
    }
    alpha[r] = l1 / dim;
  }
  return { bits, alpha, pop, center };
}

/** The bytes of the native binary rows (quant_dot.h's layout) built from the reference. */
export function binaryRowsRef(b: BinaryRef, rows: number, dim: number): Uint8Array {
  const words = Math.ceil(dim / 64);
  const rb = words * 8 + 8;
  const out = new Uint8Array(rows * rb);
  const view = new DataView(out.buffer);
  for (let r = 0; r < rows; r++) {
    for (let d = 0; d < dim; d++) if (b.bits[r * dim + d]) out[r * rb + (d >> 3)]! |= 1 << (d & 7);
    view.setFloat32(r * rb + words * 8, b.alpha[r]!, true);
    view.setUint32(r * rb + words * 8 + 4, b.pop[r]!, true);
  }
  return out;
}

/** Scores of f32 queries against int8 codes with f32 queries: q . (offset + scale * u), in f64. */
export function int8ScoresRef(q: Float32Array, B: number, r: Int8Ref, N: number, dim: number): Float64Array {
  const out = new Float64Array(B * N);
  for (let b = 0; b < B; b++)
    for (let n = 0; n < N; n++) {
      let s = 0;
      for (let d = 0; d < dim; d++) s += q[b * dim + d]! * (r.offset[d]! + r.scale[d]! * r.codes[n * dim + d]!);
      out[b * N + n] = s;
    }
  return out;
}

/** The int8-query scores: the query rounded as the native code rounds it, the dot exact, plus q . offset. */
export function int8S8ScoresRef(q: Float32Array, B: number, r: Int8Ref, N: number, dim: number): Float64Array {
  const out = new Float64Array(B * N);
  for (let b = 0; b < B; b++) {
    const qs = Float32Array.from({ length: dim }, (_, d) => f(q[b * dim + d]! * r.scale[d]!));
    let amax = 0;
    let bias = 0;
    for (let d = 0; d < dim; d++) {
      amax = Math.max(amax, Math.abs(qs[d]!));
      bias += q[b * dim + d]! * r.offset[d]!;
    }
    const s = f(amax / 127);
    const c = Array.from({ length: dim }, (_, d) => (s > 0 ? Math.min(127, Math.max(-127, rint(f(qs[d]! / s)))) : 0));
    for (let n = 0; n < N; n++) {
      let dot = 0;
      for (let d = 0; d < dim; d++) dot += c[d]! * r.codes[n * dim + d]!;
      out[b * N + n] = f(s * dot) + f(bias);
    }
  }
  return out;
}

/** Scores of queries against binary rows with `planes` query bit planes (quant_dot.h), plus q . center. */
export function binaryScoresRef(q: Float32Array, B: number, r: BinaryRef, N: number, dim: number, planes: 1 | 4): Float64Array {
  const out = new Float64Array(B * N);
  for (let b = 0; b < B; b++) {
    const qb = q.subarray(b * dim, (b + 1) * dim);
    let bias = 0;
    if (r.center) for (let d = 0; d < dim; d++) bias += qb[d]! * r.center[d]!;
    let u: number[];
    let lo2: number, delta2: number, sum: number;
    if (planes === 1) {
      u = Array.from(qb, (x) => (x > 0 ? 1 : 0));
      const pos = u.reduce((a, x) => a + x, 0);
      [lo2, delta2, sum] = [-2, 4, 2 * pos - dim];
    } else {
      let lo = Infinity,
        hi = -Infinity;
      for (const x of qb) [lo, hi] = [Math.min(lo, x), Math.max(hi, x)];
      const delta = f(f(hi - lo) / 15);
      u = Array.from(qb, (x) => (delta > 0 ? Math.min(15, Math.max(0, rint(f(f(x - lo) / delta)))) : 0));
      const su = u.reduce((a, x) => a + x, 0);
      [lo2, delta2, sum] = [2 * lo, 2 * delta, f(dim * lo + delta * su)];
    }
    for (let n = 0; n < N; n++) {
      let a = 0;
      for (let d = 0; d < dim; d++) if (r.bits[n * dim + d]) a += u[d]!;
      out[b * N + n] = r.alpha[n]! * (lo2 * r.pop[n]! + delta2 * a - sum) + f(bias);
    }
  }
  return out;
}
