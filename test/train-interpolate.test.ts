import { describe, expect, it } from 'vitest';

import { seededRandom } from '../lib/random.js';
import { interpolateParameters, snapshotParameters } from '../bench/lib/interpolate.js';
import { Retriever } from '../lib/models/retriever.js';
import { code } from './basics.js';

const tiny = { vocabSize: 20, hiddenSize: 8, heads: 2, ffnSize: 16, layers: 1, maxPositions: 16, dropout: 0 };

function shifted(model: Retriever, seed: number): void {
  const r = seededRandom(seed);
  for (const { name } of model.parameters()) model.setParameter(name, model.getParameter(name).map((v) => v + (r() - 0.5)));
}

describe('interpolateParameters (WiSE-FT between a start and a trained state)', () => {
  it('sets every parameter to (1 - lambda) from + lambda to; lambda 0 and 1 give the two snapshots back', () => {
    Retriever.seed(1);
    const model = Retriever.create({ preset: 'siamese', encoder: tiny });
    const start = snapshotParameters(model);
    shifted(model, 2);
    const trained = snapshotParameters(model);
    expect([...start.keys()]).toEqual(model.parameters().map((p) => p.name));

    interpolateParameters(model, start, trained, 0.25);
    for (const [name, a] of start) {
      const b = trained.get(name)!;
      const got = model.getParameter(name);
      got.forEach((v, i) => expect(v).toBeCloseTo(0.75 * a[i]! + 0.25 * b[i]!, 5));
    }
    interpolateParameters(model, start, trained, 0);
    for (const [name, a] of start) expect(model.getParameter(name)).toEqual(a);
    interpolateParameters(model, start, trained, 1);
    for (const [name, b] of trained) expect(model.getParameter(name)).toEqual(b);
  });

  it('refuses a snapshot of another shape or a bad lambda before writing anything', () => {
    Retriever.seed(1);
    const model = Retriever.create({ preset: 'siamese', encoder: tiny });
    const start = snapshotParameters(model);
    const other = snapshotParameters(Retriever.create({ preset: 'siamese', encoder: { ...tiny, hiddenSize: 4 } }));
    shifted(model, 3);
    const before = snapshotParameters(model);
    expect(code(() => interpolateParameters(model, start, other, 0.5))).toBe('ERR_SHAPE');
    const missing = new Map(start);
    missing.delete([...start.keys()].at(-1)!);
    expect(code(() => interpolateParameters(model, missing, start, 0.5))).toBe('ERR_SHAPE');
    expect(code(() => interpolateParameters(model, start, start, Number.NaN))).toBe('ERR_RANGE');
    expect(code(() => interpolateParameters(model, {} as never, start, 0.5))).toBe('ERR_ARG');
    expect(code(() => interpolateParameters(model, start, [] as never, 0.5))).toBe('ERR_ARG');
    expect(code(() => interpolateParameters(null as never, start, start, 0.5))).toBe('ERR_ARG');
    expect(code(() => snapshotParameters({} as never))).toBe('ERR_ARG');
    for (const [name, v] of before) expect(model.getParameter(name)).toEqual(v);
  });
});
