// DPR-MUF handed to ONNX consumers: each expert's encoder graphs (as exportOnnx writes them) and its ensemble heads
// as one graph (lib/models/onnx-export.ts's mufHeadsOnnx), with a card naming each expert's task and temperature
// (docs/guides/bring-your-own-model.md#export).

import { join } from 'node:path';

import { QuorumError } from '../../errors.js';
import { replaceDirectorySync, writeFileAtomic } from '../../data/files.js';
import { mustBeString } from '../../validate.js';
import { exportOnnx, onnxExportKind, writeOnnxCard, type OnnxCardHead } from '../../models/export.js';
import { mufHeadsOnnx } from '../../models/onnx-export.js';
import { MufRetriever } from './retriever.js';

/** MUF's quorum-onnx.json. */
export interface MufOnnxCard extends OnnxCardHead<'muf'> {
  /** Per expert, in fusion order: its directory (an encoder export of its own), heads graph and temperature. */
  experts: Array<{ name: string; task: string; dir: string; heads: string; members: number; temperature?: number }>;
  /** Passages each expert retrieves and its heads score. */
  topL: number;
}

/**
 * Writes `experts/<name>/` per expert (its encoder graphs and tokenizer, `exportOnnx`) with `heads.onnx` (input
 * `query_embedding`, output `member_embeddings` [batch, K, dim]) and quorum-onnx.json. ERR_STATE before the heads
 * are trained.
 *
 * @example
 * mufExportOnnx(await MufRetriever.load('muf/'), 'export/muf');
 */
export function mufExportOnnx(muf: MufRetriever, out: string): MufOnnxCard {
  if (!(muf instanceof MufRetriever)) throw new QuorumError('ERR_ARG', 'muf must be a MufRetriever');
  mustBeString(out, 'output directory');
  return replaceDirectorySync(
    out,
    (tmp) => {
      const experts = muf.experts.map((_, i) => {
        const e = muf.expertParts(i);
        if (!e.heads) throw new QuorumError('ERR_STATE', `expert ${e.name} has no trained heads: train the MUF first`);
        const dir = join('experts', e.name);
        const card = e.model.loaded?.card;
        exportOnnx(
          e.model,
          e.model.loaded!.tokenizer,
          card?.text ?? { maxQueryLength: 32, maxPassageLength: 128, taskMarkers: false },
          join(tmp, dir),
        );
        writeFileAtomic(join(tmp, dir, 'heads.onnx'), mufHeadsOnnx(e.heads, e.heads.config));
        return {
          name: e.name,
          task: e.task,
          dir,
          heads: join(dir, 'heads.onnx'),
          members: e.heads.config.members,
          ...(e.calibration ? { temperature: e.calibration.temperature } : {}),
        };
      });
      const card: MufOnnxCard = { format: 'quorum-onnx', version: 1, method: 'muf', experts, topL: muf.topL };
      writeOnnxCard(tmp, card);
      return card;
    },
    { keepOthers: true, kind: onnxExportKind },
  );
}
