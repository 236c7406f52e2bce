// ROM handed to ONNX consumers: the retrieval encoder and the reader as graphs (lib/models/onnx-export.ts's
// romOnnx), with the tokenizer files and a card (docs/guides/bring-your-own-model.md#export).

import { join } from 'node:path';

import { QuorumError } from '../../errors.js';
import { replaceDirectorySync, writeFileAtomic } from '../../data/files.js';
import { mustBeString } from '../../validate.js';
import { exportOnnx, onnxExportKind, writeHfTokenizerFiles, writeOnnxCard, type OnnxCardHead } from '../../models/export.js';
import { romOnnx } from '../../models/onnx-export.js';
import type { RomTextSettings } from './format.js';
import { RomModel } from './model.js';

/** ROM's quorum-onnx.json. */
export interface RomOnnxCard extends OnnxCardHead<'rom'> {
  /** `retrieval`: question and passage vectors; `reader`: span logits and relevance over reader rows. */
  graphs: { retrieval: string; reader: string };
  /** How texts become ids (retrieval and reader row lengths). */
  text: RomTextSettings;
}

/**
 * Writes ROM's retrieval graph (output `embedding`; for a separate retrieval model, that model's encoder graph
 * as `exportOnnx` writes it, under `retrieval/`) and reader graph (`start_logits`, `end_logits`, `relevance`) with
 * the tokenizer files and quorum-onnx.json.
 *
 * @example
 * romExportOnnx(await RomModel.load('rom/'), 'export/rom');
 */
export function romExportOnnx(rom: RomModel, out: string): RomOnnxCard {
  if (!(rom instanceof RomModel)) throw new QuorumError('ERR_ARG', 'rom must be a RomModel');
  mustBeString(out, 'output directory');
  return replaceDirectorySync(
    out,
    (tmp) => {
      let retrieval = 'retrieval.onnx';
      const side = rom.retrieval;
      if (side?.kind === 'retriever') {
        const text = { maxQueryLength: rom.text.maxQueryLength, maxPassageLength: rom.text.maxPassageLength, taskMarkers: false };
        const card = exportOnnx(side.model, rom.tokenizer, text, join(tmp, 'retrieval'));
        retrieval = join('retrieval', card.graphs.query);
      } else {
        const net = side?.kind === 'rom' ? side.network : rom.network;
        writeFileAtomic(join(tmp, retrieval), romOnnx(net, net.config, 'retrieval'));
      }
      writeFileAtomic(join(tmp, 'reader.onnx'), romOnnx(rom.network, rom.network.config, 'reader'));
      writeHfTokenizerFiles(tmp, rom.tokenizer, Math.max(rom.text.readerLength, rom.text.maxPassageLength));
      const card: RomOnnxCard = {
        format: 'quorum-onnx',
        version: 1,
        method: 'rom',
        graphs: { retrieval, reader: 'reader.onnx' },
        text: rom.text,
      };
      writeOnnxCard(tmp, card);
      return card;
    },
    { keepOthers: true, kind: onnxExportKind },
  );
}
