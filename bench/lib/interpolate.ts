// Weight-space interpolation between a model's starting point and its trained state (WiSE-FT, Wortsman et al.,
// CVPR 2022): theta = (1 - lambda) theta_0 + lambda theta_1. The start here is the GloVe-initialised model, whose
// mean-pooled vectors are the training-free baseline; fine-tuning on a few hundred questions of a task can lose
// what that start knew about questions unlike the training ones, and the interpolation keeps part of it. Lambda is
// chosen on a dev split, never on test.
import { QuorumError } from '../../lib/errors.js';
import { mustBeMap } from '../../lib/validate.js';
import type { ParameterTable } from '../../lib/models/parameter-table.js';
import { elementCount } from '../../lib/shape.js';

/** Every parameter's values by name (copies). */
export type ParameterSnapshot = Map<string, Float32Array>;

function checkModel(model: unknown): void {
  if (typeof (model as { parameters?: unknown } | null)?.parameters !== 'function')
    throw new QuorumError('ERR_ARG', 'model must be a Retriever (or another object with named parameters)');
}

/**
 * Copies out every parameter of a model.
 *
 * @example
 * const start = snapshotParameters(model);
 */
export function snapshotParameters(model: Pick<ParameterTable, 'parameters' | 'getParameter'>): ParameterSnapshot {
  checkModel(model);
  return new Map(model.parameters().map(({ name }) => [name, model.getParameter(name)]));
}

/**
 * Sets every parameter to `(1 - lambda) * from + lambda * to` (lambda 0: `from`, 1: `to`). Both snapshots must hold
 * the model's parameters with their shapes (ERR_SHAPE otherwise, before anything is written).
 *
 * @example
 * interpolateParameters(model, start, trained, 0.5);
 */
export function interpolateParameters(
  model: Pick<ParameterTable, 'parameters' | 'setParameter'>,
  from: ParameterSnapshot,
  to: ParameterSnapshot,
  lambda: number,
): void {
  checkModel(model);
  mustBeMap(from, 'from (a snapshotParameters result)');
  mustBeMap(to, 'to (a snapshotParameters result)');
  if (typeof lambda !== 'number' || !Number.isFinite(lambda)) throw new QuorumError('ERR_RANGE', `lambda must be a finite number, got ${lambda}`);
  const params = model.parameters();
  for (const { name, shape } of params) {
    const n = elementCount(shape);
    const a = from.get(name);
    const b = to.get(name);
    if (!a || !b || a.length !== n || b.length !== n)
      throw new QuorumError('ERR_SHAPE', `parameter ${name}: both snapshots need ${n} values (got ${a?.length ?? 'none'} and ${b?.length ?? 'none'})`);
  }
  for (const { name } of params) {
    const a = from.get(name)!;
    const b = to.get(name)!;
    const out = new Float32Array(a.length);
    for (let i = 0; i < a.length; i++) out[i] = a[i]! + lambda * (b[i]! - a[i]!);
    model.setParameter(name, out);
  }
}
