// A trained retriever handed to other tools: a Hugging Face / sentence-transformers directory (config.json,
// model.safetensors, the tokenizer files, modules.json with the pooling), or ONNX graphs with the tokenizer beside
// them. docs/guides/bring-your-own-model.md#export says what each format carries and what it cannot.

import { join } from 'node:path';

import { QuorumError } from '../errors.js';
import { makeDirs, replaceDirectorySync, writeFileAtomic, type OutputKind } from '../data/files.js';
import { writeSafetensors, type TensorToWrite } from '../io/safetensors.js';
import { hfTokenizerJson } from '../text/hf-tokenizer.js';

import { parameterNames, type EncoderConfig, type RetrieverConfig } from './config.js';
import type { TextSettings } from './model-dir.js';
import { encoderOnnx } from './onnx-export.js';
import { WordPieceTokenizer } from '../text/tokenizer.js';
import { mustBeModelLike, mustBeObject, mustBeString } from '../validate.js';
import { parameterShapes } from './parameters.js';

/** What an export reads: a retriever's configuration, encoders and parameters, with its tokenizer and text settings. */
export interface ExportSource {
  /** The retriever's configuration (preset, encoder, tasks). */
  readonly config: RetrieverConfig;
  /** Its encoders' parameter-name prefixes. */
  encoderNames(): string[];
  /** One parameter's values by its full name. */
  getParameter(name: string): Float32Array;
}

/** What was written: the directories or graphs, by encoder name. */
export interface ExportResult {
  /** Written paths relative to the output directory, by encoder ('encoder', 'query', 'passage', ...) or side. */
  files: Record<string, string>;
}

const writeJson = (path: string, value: unknown) => writeFileAtomic(path, Buffer.from(JSON.stringify(value, null, 2) + '\n'));

function checkTokenizer(tokenizer: unknown): void {
  if (!(tokenizer instanceof WordPieceTokenizer)) throw new QuorumError('ERR_ARG', 'tokenizer must be a WordPieceTokenizer');
}

// What both exports read, checked before a file is written.
function checkExport(model: unknown, tokenizer: unknown, text: unknown, out: unknown): void {
  mustBeModelLike(model, ['encoderNames', 'getParameter'], 'model', 'encoder');
  checkTokenizer(tokenizer);
  mustBeObject(text, 'text settings');
  const t = text as Partial<TextSettings>;
  for (const k of ['maxQueryLength', 'maxPassageLength'] as const)
    if (!Number.isInteger(t[k]) || (t[k] as number) < 2) throw new QuorumError('ERR_ARG', `text.${k} must be an integer >= 2`);
  mustBeString(out, 'output directory');
}

/**
 * vocab.txt, tokenizer.json (Hugging Face's), tokenizer_config.json and special_tokens_map.json; `markers` task
 * markers as added tokens (see hfTokenizerJson).
 */
export function writeHfTokenizerFiles(dir: string, tokenizer: WordPieceTokenizer, maxLength: number, markers = 0): void {
  mustBeString(dir, 'directory');
  checkTokenizer(tokenizer);
  if (!Number.isInteger(maxLength) || maxLength < 2) throw new QuorumError('ERR_ARG', 'maxLength must be an integer >= 2');
  writeFileAtomic(join(dir, 'vocab.txt'), Buffer.from(tokenizer.vocabulary.join('\n') + '\n'));
  writeJson(join(dir, 'tokenizer.json'), hfTokenizerJson(tokenizer, { markers }));
  const n = tokenizer.normalization;
  writeJson(join(dir, 'tokenizer_config.json'), {
    tokenizer_class: 'BertTokenizer',
    do_lower_case: n.lowercase,
    strip_accents: n.stripAccents === n.lowercase ? null : n.stripAccents,
    tokenize_chinese_chars: n.chineseChars,
    model_max_length: maxLength,
    unk_token: '[UNK]',
    sep_token: '[SEP]',
    pad_token: '[PAD]',
    cls_token: '[CLS]',
    mask_token: '[MASK]',
  });
  writeJson(join(dir, 'special_tokens_map.json'), {
    cls_token: '[CLS]',
    mask_token: '[MASK]',
    pad_token: '[PAD]',
    sep_token: '[SEP]',
    unk_token: '[UNK]',
  });
}

// Parts of Quorum's encoder that BertModel + sentence-transformers' Pooling / Dense / Normalize cannot express.
function hfBlockers(c: EncoderConfig): string[] {
  const out: string[] = [];
  if (c.taser) out.push('TASER routed blocks');
  if (c.embeddingSize !== c.hiddenSize) out.push(`factorized embeddings (embeddingSize ${c.embeddingSize})`);
  if (c.tokenWeights) out.push('token-weighted pooling (tokenWeights)');
  if (c.center) out.push('a centred pooled state (center)');
  if ((c.projectionHidden ?? 0) > 0) out.push('an MLP head (projectionHidden)');
  if ((c.attentionWindow ?? 0) > 0) out.push('windowed attention (attentionWindow)');
  return out;
}

/**
 * Writes each encoder as a Hugging Face BertModel + sentence-transformers directory: config.json, model.safetensors
 * (f32, BertModel's names), the tokenizer files, modules.json, 1_Pooling/config.json, a 2_Dense module for a linear
 * head and a Normalize module for unit-length outputs. A Siamese model is written into `out` itself; a bi-encoder's
 * encoders into `out/query`, `out/passage` (and `out/query.<task>`), as DPR ships question and context encoders.
 * ERR_ARG for an encoder BertModel cannot express (TASER, factorized embeddings, token weights, a centre, an MLP
 * head, windowed attention): export it with `format: 'onnx'` instead.
 *
 * @example
 * exportHf(model, tokenizer, model.loaded!.card.text, 'export/hf');
 * // python: SentenceTransformer('export/hf').encode(['who wrote hamlet?'])
 */
export function exportHf(model: ExportSource, tokenizer: WordPieceTokenizer, text: TextSettings, out: string): ExportResult {
  checkExport(model, tokenizer, text, out);
  const c = model.config.encoder;
  const blockers = hfBlockers(c);
  if (blockers.length)
    throw new QuorumError('ERR_ARG', `a Hugging Face BertModel cannot hold ${blockers.join(', ')}: export this model with --format onnx`);
  if (tokenizer.size > c.vocabSize)
    throw new QuorumError('ERR_SHAPE', `the tokenizer has ${tokenizer.size} tokens, the model ${c.vocabSize}`);
  const names = model.encoderNames();
  const files: Record<string, string> = {};
  replaceDirectorySync(
    out,
    (tmp) => {
      for (const e of names) {
        const rel = names.length === 1 ? '.' : e;
        const dir = join(tmp, rel);
        makeDirs(dir);
        writeEncoderHf(
          model,
          e,
          c,
          tokenizer,
          e.startsWith('query') ? text.maxQueryLength : text.maxPassageLength,
          dir,
          text.taskMarkers ? model.config.tasks.length : 0,
        );
        files[e] = rel;
      }
    },
    { keepOthers: true },
  );
  return { files };
}

function writeEncoderHf(
  model: ExportSource,
  prefix: string,
  c: EncoderConfig,
  tokenizer: WordPieceTokenizer,
  maxLength: number,
  dir: string,
  markers: number,
): void {
  const shapes = parameterShapes(c);
  const bert = parameterNames(c).filter((n) => !n.startsWith('projection.'));
  writeFileAtomic(
    join(dir, 'model.safetensors'),
    writeSafetensors(
      new Map<string, TensorToWrite>(bert.map((n) => [n, { shape: shapes.get(n)!, data: model.getParameter(`${prefix}.${n}`) }])),
      { format: 'pt' },
    ),
  );
  writeJson(join(dir, 'config.json'), {
    architectures: ['BertModel'],
    model_type: 'bert',
    attention_probs_dropout_prob: c.dropout,
    hidden_act: 'gelu',
    hidden_dropout_prob: c.dropout,
    hidden_size: c.hiddenSize,
    initializer_range: 0.02,
    intermediate_size: c.ffnSize,
    layer_norm_eps: c.layerNormEps,
    max_position_embeddings: c.maxPositions,
    num_attention_heads: c.heads,
    num_hidden_layers: c.layers,
    pad_token_id: tokenizer.padId,
    position_embedding_type: 'absolute',
    torch_dtype: 'float32',
    type_vocab_size: c.typeVocabSize,
    vocab_size: c.vocabSize,
  });
  writeHfTokenizerFiles(dir, tokenizer, maxLength, markers);
  const modules: Array<{ idx: number; name: string; path: string; type: string }> = [
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
  ];
  makeDirs(join(dir, '1_Pooling'));
  writeJson(join(dir, '1_Pooling', 'config.json'), {
    word_embedding_dimension: c.hiddenSize,
    pooling_mode_cls_token: c.pooling === 'cls',
    pooling_mode_mean_tokens: c.pooling === 'mean',
    pooling_mode_max_tokens: c.pooling === 'max',
    pooling_mode_mean_sqrt_len_tokens: false,
    pooling_mode_weightedmean_tokens: false,
    pooling_mode_lasttoken: false,
    include_prompt: true,
  });
  if (c.projectionDim > 0) {
    const path = `${modules.length}_Dense`;
    modules.push({ idx: modules.length, name: String(modules.length), path, type: 'sentence_transformers.models.Dense' });
    makeDirs(join(dir, path));
    writeJson(join(dir, path, 'config.json'), {
      in_features: c.hiddenSize,
      out_features: c.projectionDim,
      bias: true,
      activation_function: 'torch.nn.modules.linear.Identity',
    });
    writeFileAtomic(
      join(dir, path, 'model.safetensors'),
      writeSafetensors(
        new Map<string, TensorToWrite>([
          ['linear.weight', { shape: [c.projectionDim, c.hiddenSize], data: model.getParameter(`${prefix}.projection.weight`) }],
          ['linear.bias', { shape: [c.projectionDim], data: model.getParameter(`${prefix}.projection.bias`) }],
        ]),
        { format: 'pt' },
      ),
    );
  }
  if (c.normalize) {
    const path = `${modules.length}_Normalize`;
    modules.push({ idx: modules.length, name: String(modules.length), path, type: 'sentence_transformers.models.Normalize' });
    makeDirs(join(dir, path));
  }
  writeJson(join(dir, 'modules.json'), modules);
  writeJson(join(dir, 'sentence_bert_config.json'), { max_seq_length: maxLength, do_lower_case: false });
}

/** What every quorum-onnx.json starts with. */
export interface OnnxCardHead<M extends string> {
  /** Always 'quorum-onnx'. */
  format: 'quorum-onnx';
  /** The card's format version. */
  version: 1;
  /** What was exported: 'retriever' (a retriever's encoders), 'came', 'rom' or 'muf'. */
  method: M;
}

/** The quorum-onnx.json card of a retriever's ONNX export: which graph encodes which side, how texts become ids. */
export interface OnnxExportCard extends OnnxCardHead<'retriever'> {
  /** Graph file per side: both the same file for a Siamese encoder without Det-R routing. */
  graphs: { query: string; passage: string; tasks?: Record<string, string> };
  /** Output width. */
  dim: number;
  /** How texts become ids (as model.json's). */
  text: TextSettings;
  /** Task names, in marker order (task i's questions start with [unused<i+1>] when `text.taskMarkers`). */
  tasks: string[];
  /** The encoder's pooling (already inside the graph; for readers of the card). */
  pooling: EncoderConfig['pooling'];
  /** Whether `sentence_embedding` rows are unit length. */
  normalize: boolean;
}

/**
 * Writes ONNX graphs of the model (opset 17; inputs input_ids, attention_mask, token_type_ids; output
 * sentence_embedding, see {@link encoderOnnx}) with Hugging Face tokenizer files and quorum-onnx.json. One
 * model.onnx for a Siamese encoder; query.onnx and passage.onnx for a bi-encoder and for TASER Det-R (whose
 * specialized blocks choose their expert by side); query.<task>.onnx per task for per-task question encoders.
 *
 * @example
 * exportOnnx(model, tokenizer, model.loaded!.card.text, 'export/onnx');
 */
export function exportOnnx(model: ExportSource, tokenizer: WordPieceTokenizer, text: TextSettings, out: string): OnnxExportCard {
  checkExport(model, tokenizer, text, out);
  const c = model.config.encoder;
  return replaceDirectorySync(
    out,
    (tmp) => {
      const graphs = retrieverGraphs(model, (file, bytes) => writeFileAtomic(join(tmp, file), bytes()));
      writeHfTokenizerFiles(
        tmp,
        tokenizer,
        Math.max(text.maxQueryLength, text.maxPassageLength),
        text.taskMarkers ? model.config.tasks.length : 0,
      );
      const dim = c.projectionDim > 0 ? c.projectionDim : c.hiddenSize;
      const card: OnnxExportCard = {
        format: 'quorum-onnx',
        version: 1,
        method: 'retriever',
        graphs,
        dim,
        text,
        tasks: model.config.tasks,
        pooling: c.pooling,
        normalize: !!c.normalize,
      };
      writeOnnxCard(tmp, card);
      return card;
    },
    { keepOthers: true, kind: onnxExportKind },
  );
}

/**
 * A retriever's graphs by file name, handed to `emit` (which writes or keeps them): one model.onnx for a Siamese
 * encoder; query.onnx and passage.onnx for a bi-encoder and for TASER Det-R (whose specialized blocks choose their
 * expert by side); query.<task>.onnx per task for per-task question encoders. Returns which file encodes which side.
 */
export function retrieverGraphs(model: ExportSource, emit: (file: string, bytes: () => Uint8Array) => void): OnnxExportCard['graphs'] {
  const c = model.config.encoder;
  const names = model.encoderNames();
  const meta = { producer: 'quorum', pooling: c.pooling, normalize: String(!!c.normalize) };
  const graph = (file: string, prefix: string, side: 'query' | 'passage') => {
    emit(file, () => encoderOnnx(model, c, { prefix, side, metadata: { ...meta, side } }));
    return file;
  };
  if (names.length === 1 && c.taser?.routing !== 'det') {
    const f = graph('model.onnx', names[0]!, 'query');
    return { query: f, passage: f };
  }
  if (names.length === 1) return { query: graph('query.onnx', names[0]!, 'query'), passage: graph('passage.onnx', names[0]!, 'passage') };
  const tasks: Record<string, string> = {};
  for (const e of names.filter((n) => n.startsWith('query.'))) tasks[e.slice('query.'.length)] = graph(`${e}.onnx`, e, 'query');
  return {
    query: names.includes('query') ? graph('query.onnx', 'query', 'query') : Object.values(tasks)[0]!,
    passage: graph('passage.onnx', 'passage', 'passage'),
    ...(Object.keys(tasks).length ? { tasks } : {}),
  };
}

/** An ONNX export's directory: its card, quorum-onnx.json, says so (re-exporting replaces it whole). */
export const onnxExportKind: OutputKind = { card: 'quorum-onnx.json', format: 'quorum-onnx' };

/** Writes an ONNX export's quorum-onnx.json (format and version first). */
export function writeOnnxCard(out: string, card: OnnxCardHead<string>): void {
  mustBeString(out, 'output directory');
  mustBeObject(card, 'card');
  if (card.format !== 'quorum-onnx' || card.version !== 1 || typeof card.method !== 'string')
    throw new QuorumError('ERR_ARG', "card must start with format 'quorum-onnx', version 1 and a method");
  writeJson(join(out, 'quorum-onnx.json'), card);
}
