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

/** The rotation of binary codes (quant.h's Rotation): the same LCG draws, f32 additions, exact scalings by 1/8. */
export class RotationRef {
  readonly dp: number;
  readonly sign: Float32Array[] = [];
  readonly perm: Uint32Array[] = [];
  constructor(
    readonly dim: number,
    seed: number,
  ) {
    this.dp = Math.ceil(dim / 64) * 64;
    let s = seed >>> 0;
    const next = () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0);
    for (let r = 0; r < 3; r++) {
      this.sign.push(Float32Array.from({ length: this.dp }, () => (next() >>> 31 ? -1 : 1)));
      const p = Uint32Array.from({ length: this.dp }, (_, i) => i);
      for (let i = this.dp - 1; i > 0; i--) {
        const j = Math.floor((next() * (i + 1)) / 2 ** 32);
        [p[i], p[j]] = [p[j]!, p[i]!];
      }
      this.perm.push(p);
    }
  }
  apply(x: ArrayLike<number>): Float32Array {
    let a = new Float32Array(this.dp);
    for (let d = 0; d < this.dim; d++) a[d] = x[d]!;
    for (let r = 0; r < 3; r++) {
      for (let d = 0; d < this.dp; d++) a[d] = a[d]! * this.sign[r]![d]!;
      for (let o = 0; o < this.dp; o += 64)
        for (let h = 1; h < 64; h *= 2)
          for (let i = 0; i < 64; i += 2 * h)
            for (let j = o + i; j < o + i + h; j++) {
              const u = a[j]!,
                v = a[j + h]!;
              a[j] = f(u + v);
              a[j + h] = f(u - v);
            }
      for (let d = 0; d < this.dp; d++) a[d] = a[d]! * 0.125;
      const b = new Float32Array(this.dp);
      for (let d = 0; d < this.dp; d++) b[this.perm[r]![d]!] = a[d]!;
      a = b;
    }
    return a;
  }
}

/** The seed lib/quantized.ts rotates with. */
export const ROTATION_SEED = 0x51a7e;

export interface BinaryRef {
  /** Each row's bits as 0 / 1 per coded dimension (dim, or 64 * words when rotated). */
  bits: Uint8Array;
  /** Coded dimensions a row. */
  n: number;
  alpha: Float32Array;
  pop: Uint32Array;
  center: Float32Array | undefined;
  rotation: RotationRef | undefined;
}

export function quantizeBinaryRef(x: Float32Array, rows: number, dim: number, centered = true, rotate = true): BinaryRef {
  let center: Float32Array | undefined;
  if (centered) {
    center = new Float32Array(dim);
    for (let d = 0; d < dim; d++) {
      let s = 0;
      for (let r = 0; r < rows; r++) s += x[r * dim + d]!;
      center[d] = s / rows;
    }
  }
  const rotation = rotate ? new RotationRef(dim, ROTATION_SEED) : undefined;
  const n = rotation ? rotation.dp : dim;
  const bits = new Uint8Array(rows * n);
  const alpha = new Float32Array(rows);
  const pop = new Uint32Array(rows);
  for (let r = 0; r < rows; r++) {
    let v: ArrayLike<number> = Float32Array.from({ length: dim }, (_, d) => f(x[r * dim + d]! - (center ? center[d]! : 0)));
    if (rotation) v = rotation.apply(v);
    let l1 = 0,
      l2 = 0;
    for (let d = 0; d < n; d++) {
      l1 += Math.abs(v[d]!);
      l2 += v[d]! * v[d]!;
      if (v[d]! > 0) {
        bits[r * n + d] = 1;
        pop[r]!++;
      }
    }
    alpha[r] = l1 > 0 ? l2 / l1 : 0;
  }
  return { bits, n, alpha, pop, center, rotation };
}

/** The bytes of the native binary rows (quant_dot.h's layout) built from the reference. */
export function binaryRowsRef(b: BinaryRef, rows: number, dim: number): Uint8Array {
  const words = Math.ceil(dim / 64);
  const rb = words * 8 + 8;
  const out = new Uint8Array(rows * rb);
  const view = new DataView(out.buffer);
  for (let r = 0; r < rows; r++) {
    for (let d = 0; d < b.n; d++) if (b.bits[r * b.n + d]) out[r * rb + (d >> 3)]! |= 1 << (d & 7);
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
  const n = r.n;
  for (let b = 0; b < B; b++) {
    const q0 = q.subarray(b * dim, (b + 1) * dim);
    let bias = 0;
    if (r.center) for (let d = 0; d < dim; d++) bias += q0[d]! * r.center[d]!;
    const qb: ArrayLike<number> = r.rotation ? r.rotation.apply(q0) : q0;
    let u: number[];
    let lo2: number, delta2: number, sum: number;
    if (planes === 1) {
      u = Array.from(qb, (x) => (x > 0 ? 1 : 0));
      const pos = u.reduce((a, x) => a + x, 0);
      [lo2, delta2, sum] = [-2, 4, 2 * pos - n];
    } else {
      let lo = Infinity,
        hi = -Infinity;
      for (let d = 0; d < n; d++) [lo, hi] = [Math.min(lo, qb[d]!), Math.max(hi, qb[d]!)];
      const delta = f(f(hi - lo) / 15);
      u = Array.from(qb, (x) => (delta > 0 ? Math.min(15, Math.max(0, rint(f(f(x - lo) / delta)))) : 0));
      const su = u.reduce((a, x) => a + x, 0);
      [lo2, delta2, sum] = [2 * lo, 2 * delta, f(n * lo + delta * su)];
    }
    for (let m = 0; m < N; m++) {
      let a = 0;
      for (let d = 0; d < n; d++) if (r.bits[m * n + d]) a += u[d]!;
      out[b * N + m] = r.alpha[m]! * (lo2 * r.pop[m]! + delta2 * a - sum) + f(bias);
    }
  }
  return out;
}
