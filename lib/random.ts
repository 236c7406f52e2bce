// Seeded random numbers for everything that must reproduce from a seed (batch order, negative sampling, random
// embedding rows). Not for anything security-related.

/**
 * Uniform draws in [0, 1) from mulberry32 (32-bit state).
 *
 * @example
 * const r = seededRandom(42); r(); // 0.6011...
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal draws: {@link seededRandom} uniforms through Box-Muller. */
export function seededNormal(seed: number): () => number {
  const uniform = seededRandom(seed);
  let spare: number | undefined;
  return () => {
    if (spare !== undefined) {
      const s = spare;
      spare = undefined;
      return s;
    }
    // 1 - u lies in (0, 1], so the logarithm is finite.
    const r = Math.sqrt(-2 * Math.log(1 - uniform()));
    const theta = 2 * Math.PI * uniform();
    spare = r * Math.sin(theta);
    return r * Math.cos(theta);
  };
}

/** Fisher-Yates in place, on an array or a typed array. */
export function shuffle<A extends { length: number; [i: number]: unknown }>(xs: A, random: () => number): A {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
}
