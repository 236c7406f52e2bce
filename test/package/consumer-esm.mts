// An ES-module TypeScript consumer: type-checked against the package's import declarations.
import { QuorumError, Tensor, scoreTopK, type TopKResult } from 'quorum-retrieval';

const corpus: Tensor<'f32'> = Tensor.from(new Float32Array([1, 0, 0, 1]), [2, 2]);
const top: TopKResult = await scoreTopK(corpus, corpus, 1);
export const code: string = new QuorumError('ERR_RANGE', 'x').code;
export { top };
// Subpath exports carry their types too.
import type { Evaluation } from 'quorum-retrieval/eval';
import { MufRetriever } from 'quorum-retrieval/methods/muf';
import { widenedTemperatureGrid } from 'quorum-retrieval/kernels';
export const grid: readonly number[] = widenedTemperatureGrid;
export type Muf = MufRetriever;
export type Ev = Evaluation;
