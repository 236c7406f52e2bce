// `quorum export`: a trained retriever (or a Hugging Face directory) as a Hugging Face / sentence-transformers
// directory or as ONNX graphs (docs/guides/bring-your-own-model.md#export).
import { QuorumError } from '../errors.js';
import type { Pooling } from '../models/config.js';
import { exportHf, exportOnnx } from '../models/export.js';
import { Retriever } from '../models/retriever.js';
import { hfModelOptions } from './encode.js';

export interface ExportCommandOptions {
  model: string;
  format: string;
  out: string;
  pooling?: string;
  normalize?: boolean;
}

export async function exportCommand(o: ExportCommandOptions, log: (line: string) => void = console.log): Promise<void> {
  if (o.format !== 'hf' && o.format !== 'onnx') throw new QuorumError('ERR_ARG', `--format must be hf or onnx, got '${o.format}'`);
  const model = await Retriever.load(o.model, hfModelOptions(o));
  const { tokenizer, card } = model.loaded!;
  if (o.format === 'hf') {
    const { files } = exportHf(model, tokenizer, card.text, o.out);
    log(`wrote ${o.out}: ${Object.entries(files).map(([e, d]) => (d === '.' ? 'a sentence-transformers directory' : `${e} -> ${d}/`)).join(', ')} (${model.config.encoder.pooling} pooling${model.config.encoder.normalize ? ', normalized' : ''})`);
  } else {
    const exported = exportOnnx(model, tokenizer, card.text, o.out);
    const files = [...new Set([exported.graphs.query, exported.graphs.passage, ...Object.values(exported.graphs.tasks ?? {})])];
    log(`wrote ${o.out}: ${files.join(', ')} (opset 17, ${exported.dim}-d sentence_embedding), tokenizer files, quorum-onnx.json`);
  }
}

