// A user's ColBERT checkpoint handed to ONNX consumers (docs/methods/colbert.md#checkpoints): the token-vector graph
// (BERT, projection, L2 per token), the checkpoint's tokenizer and settings files as they are, and a card saying how
// to frame texts, so that any ONNX Runtime reproduces ColbertEncoder's vectors.
import { copyFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

import { replaceDirectorySync, writeFileAtomic } from '../../data/files.js';
import { onnxExportKind, writeOnnxCard, type OnnxCardHead } from '../../models/export.js';
import { mustBeString } from '../../validate.js';
import { ColbertEncoder } from './encoder.js';
import type { ColbertSettings } from './checkpoint.js';

/** ColBERT's quorum-onnx.json. */
export interface ColbertOnnxCard extends OnnxCardHead<'colbert'> {
  /** The graph: inputs input_ids, attention_mask, token_type_ids; output token_vectors [batch, sequence, dim]. */
  graph: string;
  /** How texts become rows and which positions keep their vectors (markers and skiplist as token ids). */
  settings: Omit<ColbertSettings, 'skiplist'> & { skiplist: number[] };
  /** The model's name as ColbertEncoder gives it (an index built from these vectors checks it). */
  model: string;
}

// The checkpoint's own files a consumer frames texts with, copied when present.
const COPIED = [
  'tokenizer.json',
  'vocab.txt',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'artifact.metadata',
  'config_sentence_transformers.json',
];

/**
 * Writes a ColBERT checkpoint's token-vector graph (colbert.onnx, opset 17), its tokenizer and settings files and
 * quorum-onnx.json into `out` (an earlier ONNX export there is replaced; any other directory is written into).
 *
 * @example
 * await colbertExportOnnx('models/colbertv2.0', 'export/colbert');
 */
export async function colbertExportOnnx(dir: string, out: string): Promise<ColbertOnnxCard> {
  mustBeString(out, 'output directory');
  const enc = await ColbertEncoder.load(dir);
  try {
    const s = enc.settings;
    return replaceDirectorySync(
      out,
      (tmp) => {
        writeFileAtomic(join(tmp, 'colbert.onnx'), enc.graph);
        for (const f of COPIED) if (existsSync(join(dir, f))) copyFileSync(join(dir, f), join(tmp, f));
        const card: ColbertOnnxCard = {
          format: 'quorum-onnx',
          version: 1,
          method: 'colbert',
          graph: 'colbert.onnx',
          settings: { ...s, skiplist: Array.from(s.skiplist) },
          model: enc.model,
        };
        writeOnnxCard(tmp, card);
        return card;
      },
      { keepOthers: true, kind: onnxExportKind },
    );
  } finally {
    await enc.release();
  }
}
