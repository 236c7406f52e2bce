// The shape of every encoder parameter, in torch convention (Linear weight [out, in]). Checkpoint loading checks
// against it, and the reference forward and the native module agree on layout through it.
import { type EncoderConfig, parameterNames } from './config.js';
import { mustBeObject } from '../validate.js';
import { elementCount } from '../shape.js';

/**
 * The shape of every name in {@link parameterNames}, in the same order.
 *
 * @example
 * parameterShapes(defaultEncoderConfig).get('encoder.layer.0.intermediate.dense.weight'); // [512, 128]
 */
export function parameterShapes(config: EncoderConfig): Map<string, number[]> {
  mustBeObject(config, 'encoder config');
  const shapes = new Map<string, number[]>();
  for (const name of parameterNames(config)) shapes.set(name, shapeOf(config, name));
  return shapes;
}

/**
 * The number of scalars in the encoder (all experts and gates included).
 *
 * @example
 * parameterCount({ ...defaultEncoderConfig, layers: 1 });
 */
export function parameterCount(config: EncoderConfig): number {
  let n = 0;
  for (const shape of parameterShapes(config).values()) n += elementCount(shape);
  return n;
}

// Name patterns are matched on the module path with the layer / expert prefix removed, so the FFN of a plain block
// and of an expert share one rule.
function shapeOf(c: EncoderConfig, name: string): number[] {
  const H = c.hiddenSize;
  const dot = name.lastIndexOf('.');
  const module = name.slice(0, dot);
  const isWeight = name.slice(dot + 1) === 'weight';
  const linear = (out: number, inp: number) => (isWeight ? [out, inp] : [out]);
  switch (module) {
    case 'embeddings.word_embeddings':
      return [c.vocabSize, c.embeddingSize];
    case 'embeddings.projection':
      return linear(H, c.embeddingSize);
    case 'embeddings.position_embeddings':
      return [c.maxPositions, H];
    case 'embeddings.token_type_embeddings':
      return [c.typeVocabSize, H];
    case 'embeddings.LayerNorm':
      return [H];
    case 'embeddings.token_weights':
      return [c.vocabSize];
    case 'pooler':
      return [H];
    case 'encoder.gate':
      return linear(c.taser?.experts ?? 0, H);
    case 'projection.hidden':
      return linear(c.projectionHidden ?? 0, H);
    case 'projection':
      return linear(c.projectionDim, (c.projectionHidden ?? 0) > 0 ? c.projectionHidden! : H);
  }
  const local = module.replace(/^encoder\.layer\.\d+\./, '').replace(/^experts\.\d+\./, '');
  switch (local) {
    case 'attention.self.query':
    case 'attention.self.key':
    case 'attention.self.value':
    case 'attention.output.dense':
      return linear(H, H);
    case 'attention.output.LayerNorm':
    case 'output.LayerNorm':
      return [H];
    case 'intermediate.dense':
      return linear(c.ffnSize, H);
    case 'output.dense':
      return linear(H, c.ffnSize);
    case 'gate':
      return linear(c.taser?.experts ?? 0, H);
  }
  // parameterNames and this table are written together; reaching here means one was changed without the other.
  throw new Error(`parameterShapes: no shape rule for ${name}`);
}

/**
 * What reading and writing a weights file needs of a model: its parameters' names and shapes, and each one's values
 * by name. ParameterTable (the libtorch models) has it; the file formats (model-dir.ts) ask only for this, so that
 * reading a directory reaches no libtorch code.
 */
export interface ParameterAccess {
  /** Names and shapes, in the model's fixed order. */
  parameters(): { name: string; shape: number[] }[];
  /** A copy of one parameter's values. */
  getParameter(name: string): Float32Array;
  /** Overwrites one parameter. */
  setParameter(name: string, values: Float32Array): void;
}
