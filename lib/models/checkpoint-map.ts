// Maps a Hugging Face BERT checkpoint onto an encoder's parameter names, so training can start from pretrained
// weights. TASER's experts all start as copies of the pretrained FFN of their block (the paper's initialisation).
import { QuorumError } from '../errors.js';
import type { EncoderConfig } from './config.js';
import { parameterNames } from './config.js';
import { parameterShapes } from './parameters.js';
import { mustBeMap, mustBeObject } from '../validate.js';
import { elementCount } from '../shape.js';

/** A checkpoint tensor: its shape and row-major float32 values. */
interface CheckpointTensor {
  shape: number[];
  data: Float32Array;
}

/** What {@link mapBertCheckpoint} found: values by our names, ours it lacks, and its names it did not use. */
export interface MappedCheckpoint {
  /** The checkpoint's values under our parameter names, ready for setParameter. */
  tensors: Map<string, Float32Array>;
  /** Our parameter names the checkpoint has nothing for (gates, projections, ...): they keep their initialisation. */
  missing: string[];
  /** Checkpoint names (as given) that map to no parameter (pooler, pre-training heads, extra layers, ...). */
  unused: string[];
}

/**
 * Assigns checkpoint tensors to the parameters of `config`. A checkpoint name may carry a `bert.` prefix and the
 * TF-era `LayerNorm.gamma` / `LayerNorm.beta`. A specialized block's expert `encoder.layer.L.experts.E.<rest>` takes
 * the checkpoint's own expert tensor when there is one, else a copy of `encoder.layer.L.<rest>`. ERR_SHAPE (naming the
 * parameter and both shapes) when a mapped tensor's shape differs from {@link parameterShapes}; ERR_FORMAT when two
 * checkpoint names mean the same parameter. An encoder with more token types than the checkpoint (ROM's reader marks
 * question words as type 2; BERT has 2 types) gets the checkpoint's rows, and each extra row starts as a copy of
 * row 0 (the question segment's), so that marking changes nothing until training teaches it.
 *
 * @example
 * const { tensors, missing } = mapBertCheckpoint(await loadSafetensors('bert/model.safetensors'), config);
 */
export function mapBertCheckpoint(source: Map<string, CheckpointTensor>, config: EncoderConfig): MappedCheckpoint {
  mustBeMap(source, 'checkpoint');
  mustBeObject(config, 'encoder config');
  const byName = new Map<string, string>();
  for (const original of source.keys()) {
    const name = canonicalName(original);
    const clash = byName.get(name);
    if (clash !== undefined) throw new QuorumError('ERR_FORMAT', `checkpoint names ${clash} and ${original} both mean ${name}`);
    byName.set(name, original);
  }
  const shapes = parameterShapes(config);
  const tensors = new Map<string, Float32Array>();
  const missing: string[] = [];
  const used = new Set<string>();
  for (const target of parameterNames(config)) {
    const original = byName.get(target) ?? byName.get(sharedName(target));
    if (original === undefined) {
      missing.push(target);
      continue;
    }
    let t = source.get(original) as CheckpointTensor;
    const want = shapes.get(target) as number[];
    if (TOKEN_TYPES.test(target)) t = growTokenTypes(t, want);
    checkShape(target, original, t, want);
    // Experts of one block come from the same tensor; each gets its own copy so that updating one leaves the
    // others alone.
    tensors.set(target, used.has(original) ? t.data.slice() : t.data);
    used.add(original);
  }
  const unused = [...source.keys()].filter((n) => !used.has(n));
  return { tensors, missing, unused };
}

const TOKEN_TYPES = /(^|\.)embeddings\.token_type_embeddings\.weight$/;

function growTokenTypes(t: CheckpointTensor, want: number[]): CheckpointTensor {
  const [rows, cols] = t.shape;
  if (t.shape.length !== 2 || want.length !== 2 || cols !== want[1] || rows === undefined || rows >= want[0]! || rows < 1) return t;
  const data = new Float32Array(want[0]! * cols!);
  data.set(t.data);
  for (let r = rows; r < want[0]!; r++) data.set(t.data.subarray(0, cols), r * cols!);
  return { shape: want, data };
}

function canonicalName(name: string): string {
  return name
    .replace(/^bert\./, '')
    .replace(/\.LayerNorm\.gamma$/, '.LayerNorm.weight')
    .replace(/\.LayerNorm\.beta$/, '.LayerNorm.bias');
}

// encoder.layer.3.experts.1.output.dense.weight -> encoder.layer.3.output.dense.weight; other names map to themselves.
function sharedName(name: string): string {
  return name.replace(/^(encoder\.layer\.\d+\.)experts\.\d+\./, '$1');
}

function checkShape(target: string, original: string, t: CheckpointTensor, want: number[]): void {
  const same = t.shape.length === want.length && t.shape.every((d, i) => d === want[i]);
  if (!same) {
    throw new QuorumError(
      'ERR_SHAPE',
      `${target}: checkpoint tensor ${original} has shape [${t.shape.join(', ')}], the encoder needs [${want.join(', ')}]`,
    );
  }
  const count = elementCount(want);
  if (t.data.length !== count) {
    throw new QuorumError(
      'ERR_SHAPE',
      `${target}: checkpoint tensor ${original} has ${t.data.length} values for shape [${want.join(', ')}]`,
    );
  }
}
