// CAME handed to ONNX consumers: each model's three experts as one graph (lib/models/onnx-export.ts's cameOnnx),
// with the tokenizer files and a card (docs/guides/bring-your-own-model.md#export).

import { join } from 'node:path';

import { QuorumError } from '../../errors.js';
import { replaceDirectorySync, writeFileAtomic } from '../../data/files.js';
import { mustBeString } from '../../validate.js';
import { onnxExportKind, writeHfTokenizerFiles, writeOnnxCard, type OnnxCardHead } from '../../models/export.js';
import { cameOnnx } from '../../models/onnx-export.js';
import type { CameTextSettings } from './format.js';
import { CameRetriever } from './retriever.js';

/** CAME's quorum-onnx.json. */
export interface CameOnnxCard extends OnnxCardHead<'came'> {
  /** One graph per model (one for the joint model; one per expert for independently trained experts). */
  graphs: Array<{ file: string; experts: string[] }>;
  /** How texts become ids (question and passage lengths). */
  text: CameTextSettings;
  /** The learned linear fusion's weights and bias, when dev fitted one. */
  linear?: { weights: number[]; bias: number };
}

/**
 * Writes CAME's graphs (outputs `lexical`, `local`, `global`; see cameOnnx) with the tokenizer files and
 * quorum-onnx.json. The scores and their fusion run on the outputs: SPLADE dot product, MaxSim, dot product.
 *
 * @example
 * cameExportOnnx(await CameRetriever.load('came/'), 'export/came');
 */
export function cameExportOnnx(came: CameRetriever, out: string): CameOnnxCard {
  if (!(came instanceof CameRetriever)) throw new QuorumError('ERR_ARG', 'came must be a CameRetriever');
  mustBeString(out, 'output directory');
  return replaceDirectorySync(
    out,
    (tmp) => {
      const graphs = came.models.map((m, i) => {
        const file = came.models.length === 1 ? 'came.onnx' : `came-${i}.onnx`;
        writeFileAtomic(join(tmp, file), cameOnnx(m, m.config));
        return { file, experts: [...m.experts] };
      });
      writeHfTokenizerFiles(tmp, came.tokenizer, Math.max(came.text.maxQueryLength, came.text.maxPassageLength));
      const card: CameOnnxCard = {
        format: 'quorum-onnx',
        version: 1,
        method: 'came',
        graphs,
        text: came.text,
        ...(came.linear ? { linear: came.linear } : {}),
      };
      writeOnnxCard(tmp, card);
      return card;
    },
    { keepOthers: true, kind: onnxExportKind },
  );
}
