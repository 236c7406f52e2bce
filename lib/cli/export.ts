// `quorum export`: a trained retriever (or a Hugging Face directory) as a Hugging Face / sentence-transformers
// directory or as ONNX graphs; a CAME, ROM or MUF directory, or a user's ColBERT checkpoint, as ONNX graphs
// (docs/guides/bring-your-own-model.md#export, docs/methods/colbert.md#checkpoints).
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { QuorumError } from '../errors.js';
import { exportHf, exportOnnx } from '../models/export.js';
import { modelDir } from '../models/model-dir.js';
import { Retriever } from '../models/retriever.js';
import { cameExportOnnx } from '../methods/came/export.js';
import { isColbertDir } from '../methods/colbert/checkpoint.js';
import { colbertExportOnnx } from '../methods/colbert/export.js';
import { CameRetriever } from '../methods/came/retriever.js';
import { mufExportOnnx } from '../methods/muf/export.js';
import { MufRetriever } from '../methods/muf/retriever.js';
import { romExportOnnx } from '../methods/rom/export.js';
import { RomModel } from '../methods/rom/model.js';
import { hfModelOptions } from './encode.js';

export interface ExportCommandOptions {
  model: string;
  format: string;
  out: string;
  pooling?: string;
  normalize?: boolean;
}

// A method's directory, by its card; anything else is a retriever (Quorum's or Hugging Face's).
const METHOD_CARDS = [
  ['came.json', 'CAME'],
  ['rom.json', 'ROM'],
  ['muf.json', 'MUF'],
] as const;

export async function exportCommand(o: ExportCommandOptions, log: (line: string) => void = console.log): Promise<void> {
  if (o.format !== 'hf' && o.format !== 'onnx') throw new QuorumError('ERR_ARG', `--format must be hf or onnx, got '${o.format}'`);
  // A user's ColBERT checkpoint (either layout): its token-vector graph.
  if (isColbertDir(o.model)) {
    if (o.format !== 'onnx')
      throw new QuorumError('ERR_ARG', 'a ColBERT checkpoint exports as its ONNX token-vector graph only (--format onnx)');
    if (o.pooling !== undefined || o.normalize !== undefined)
      throw new QuorumError(
        'ERR_ARG',
        '--pooling and --normalize do not apply to a ColBERT checkpoint (its vectors are per token, unit length)',
      );
    const card = await colbertExportOnnx(o.model, o.out);
    log(
      `wrote ${o.out}: ${card.graph} (opset 17, ${card.settings.dim}-d token_vectors, ${card.settings.layout} layout), tokenizer and settings files, quorum-onnx.json`,
    );
    return;
  }
  const dir = modelDir(o.model);
  const method = METHOD_CARDS.find(([card]) => existsSync(join(dir, card)))?.[1];
  if (method) {
    if (o.format === 'hf')
      throw new QuorumError(
        'ERR_ARG',
        `a ${method} directory exports as ONNX graphs only (--format onnx): Hugging Face's BertModel holds one encoder without heads`,
      );
    if (o.pooling !== undefined || o.normalize !== undefined)
      throw new QuorumError('ERR_ARG', `--pooling and --normalize are for Hugging Face directories, not a ${method} directory`);
    if (method === 'CAME') {
      const card = cameExportOnnx(await CameRetriever.load(dir), o.out);
      log(`wrote ${o.out}: ${card.graphs.map((g) => `${g.file} (${g.experts.join(', ')})`).join(', ')}, tokenizer files, quorum-onnx.json`);
    } else if (method === 'ROM') {
      const rom = await RomModel.load(dir);
      const card = romExportOnnx(rom, o.out);
      log(`wrote ${o.out}: ${card.graphs.retrieval}, ${card.graphs.reader}, tokenizer files, quorum-onnx.json`);
    } else {
      const muf = await MufRetriever.load(dir);
      try {
        const card = mufExportOnnx(muf, o.out);
        log(
          `wrote ${o.out}: ${card.experts.map((e) => `${e.dir}/ (encoder, heads.onnx with ${e.members} members)`).join(', ')}, quorum-onnx.json`,
        );
      } finally {
        muf.dispose();
      }
    }
    return;
  }
  const model = await Retriever.load(o.model, hfModelOptions(o));
  const { tokenizer, card } = model.loaded!;
  if (o.format === 'hf') {
    const { files } = exportHf(model, tokenizer, card.text, o.out);
    log(
      `wrote ${o.out}: ${Object.entries(files)
        .map(([e, d]) => (d === '.' ? 'a sentence-transformers directory' : `${e} -> ${d}/`))
        .join(', ')} (${model.config.encoder.pooling} pooling${model.config.encoder.normalize ? ', normalized' : ''})`,
    );
  } else {
    const exported = exportOnnx(model, tokenizer, card.text, o.out);
    const files = [...new Set([exported.graphs.query, exported.graphs.passage, ...Object.values(exported.graphs.tasks ?? {})])];
    log(`wrote ${o.out}: ${files.join(', ')} (opset 17, ${exported.dim}-d sentence_embedding), tokenizer files, quorum-onnx.json`);
  }
}
