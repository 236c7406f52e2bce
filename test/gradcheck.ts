// Gradient checks of the libtorch models by central differences, through their public API only. The analytic
// gradient is read off one AdamW step: at step 1 the moments' bias corrections cancel, so with lr = 1 and eps = 1 a
// weight moves by d = -g / (|g| + 1), which inverts exactly to g = -d / (1 - |d|).
import { expect } from 'vitest';

import { seededRandom } from '../lib/random.js';

/** What a gradient check needs of a model: named parameters and its AdamW step (Retriever, CameModel, RomNetwork). */
export interface Differentiable {
  parameters(): { name: string; shape: number[] }[];
  getParameter(name: string): Float32Array;
  setParameter(name: string, values: Float32Array): void;
  setOptimizer(o: { eps?: number; weightDecay?: number; layerDecay?: number }): void;
  stepSync(lr: number, clip: number): number;
}

/**
 * The gradient that `backward` (one or more accumulate calls) leaves in every parameter, in float64. The model must
 * be fresh: no accumulate before (gradients add up until a step) and no step (the inversion holds at step 1 only).
 * Its weights are restored afterwards, its AdamW moments are not.
 */
export function adamGradient(model: Differentiable, backward: () => void): Map<string, Float64Array> {
  const before = new Map(model.parameters().map(({ name }) => [name, model.getParameter(name)]));
  model.setOptimizer({ eps: 1, weightDecay: 0, layerDecay: 1 });
  backward();
  model.stepSync(1, 0);
  const out = new Map<string, Float64Array>();
  for (const [name, w0] of before) {
    const w1 = model.getParameter(name);
    out.set(
      name,
      Float64Array.from(w0, (x, i) => {
        const d = (w1[i] as number) - x;
        return -d / (1 - Math.abs(d));
      }),
    );
    model.setParameter(name, w0);
  }
  return out;
}

/** Every parameter set to seeded uniform values in [-s, s] (LayerNorm weights around 1), so nothing is trivial. */
export function randomize(model: Pick<Differentiable, 'parameters' | 'setParameter'>, seed: number, s = 0.3): void {
  const r = seededRandom(seed);
  for (const { name, shape } of model.parameters()) {
    const n = shape.reduce((a, b) => a * b, 1);
    const base = name.endsWith('LayerNorm.weight') ? 1 : 0;
    model.setParameter(name, Float32Array.from({ length: n }, () => base + (r() * 2 - 1) * s));
  }
}

export interface GradientCheck {
  /** Parameters to probe (default every one). */
  names?: (name: string) => boolean;
  /** Coordinates per tensor: its largest gradient and random ones (default 3). */
  probes?: number;
  /** Step of the central difference (default 5e-3). */
  h?: number;
  /** The analytic gradient is of `scale` x loss() (a loss scale, a normalization). Default 1. */
  scale?: number;
  seed?: number;
}

/**
 * Compares `grad` with central differences of `loss` at a few coordinates of every probed tensor and expects each
 * to agree within 3% of the coordinate's gradient plus 1% of the largest gradient: the forward passes are float32,
 * so a difference of two losses carries about 1e-6 of the loss over 2h. A missing factor, a wrong sign or a gradient
 * that skips a path is far outside that.
 * Returns how many coordinates were compared and how many had a gradient of at least 1e-4, so that a check over
 * zeros cannot pass unnoticed.
 */
export function expectGradientsMatch(model: Differentiable, loss: () => number, grad: Map<string, Float64Array>, o: GradientCheck = {}): { compared: number; nonzero: number } {
  const h = o.h ?? 5e-3;
  const scale = o.scale ?? 1;
  const r = seededRandom(o.seed ?? 1);
  let largest = 0;
  for (const g of grad.values()) for (const x of g) largest = Math.max(largest, Math.abs(x));
  let compared = 0;
  let nonzero = 0;
  for (const { name } of model.parameters()) {
    if (o.names && !o.names(name)) continue;
    const g = grad.get(name)!;
    const w = model.getParameter(name);
    let top = 0;
    for (let i = 1; i < g.length; i++) if (Math.abs(g[i]!) > Math.abs(g[top]!)) top = i;
    const coords = [top, ...Array.from({ length: (o.probes ?? 3) - 1 }, () => Math.floor(r() * g.length))];
    for (const i of new Set(coords)) {
      const at = (x: number) => {
        const v = w.slice();
        v[i] = x;
        model.setParameter(name, v);
        return loss();
      };
      const fd = (scale * (at(w[i]! + h) - at(w[i]! - h))) / (2 * h);
      model.setParameter(name, w);
      const tolerance = 0.03 * Math.abs(g[i]!) + 0.01 * largest;
      expect(Math.abs(fd - g[i]!), `${name}[${i}]: central difference ${fd}, gradient ${g[i]}`).toBeLessThanOrEqual(tolerance);
      compared++;
      if (Math.abs(g[i]!) >= 1e-4) nonzero++;
    }
  }
  return { compared, nonzero };
}
