// DPR-MUF search without libtorch (docs/methods/muf.md, docs/guides/bring-your-own-model.md#serving-without-libtorch):
// a saved MUF directory's experts encode questions through ServingEncoder (0-layer experts in the process, others in
// ONNX Runtime), their K heads run as one ONNX graph each,
// and retrieval, the heads' candidate scores, mutual information and fusion run on the core's kernels (scoreTopK,
// gatherScores, ensembleMI) and in TypeScript. The same hits and confidences as MufRetriever.search.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { readFileBytes } from '../../data/files.js';
import { gatherScores, scoreTopK } from '../../dense.js';
import { QuorumError } from '../../errors.js';
import type { ScoredDoc } from '../../eval/ranking.js';
import { mufHeadsOnnx } from '../../models/onnx-export.js';
import { ServingEncoder, onnxRuntime, servingSessionOptions, type OrtSession } from '../../models/serving-encoder.js';
import { Tensor } from '../../tensor.js';
import { ensembleMI } from '../../uncertainty.js';
import { checkOptions, mustBeArray, mustBeString, optionKeys } from '../../validate.js';
import { readEnsembleFile } from './ensemble.js';
import { expertRun, fuseCollected, readExpertPassages, readMufDir, type Collected, type MufHits } from './retriever.js';

interface ServedExpert {
  name: string;
  task: string;
  encoder: ServingEncoder;
  passages: Tensor<'f32'>;
  heads: OrtSession;
  members: number;
  temperature?: number;
}

const loadKeys = optionKeys<{ threads?: number }>()(['threads']);
const searchKeys = optionKeys<{ fusion?: 'muf' | 'uniform' }>()(['fusion']);

/**
 * A saved MUF directory served without libtorch: the prebuilt core and onnxruntime-node (an optional peer
 * dependency) are all it needs.
 *
 * @example
 * const muf = await MufServer.load('muf/');
 * const [r] = await muf.search(['what is the incubation period of covid-19?'], 10);
 * r.hits;         // fused top-10
 * r.confidence;   // per expert
 */
export class MufServer {
  private constructor(
    private readonly experts: ServedExpert[],
    private readonly corpusIds: string[],
    /** Passages each expert retrieves and its heads score. */
    readonly topL: number,
  ) {}

  /** Expert names and tasks, in fusion order. */
  get names(): Array<{ name: string; task: string }> {
    return this.experts.map((e) => ({ name: e.name, task: e.task }));
  }

  /**
   * Loads the directory: per expert its model (ServingEncoder), corpus vectors and heads (one ONNX graph). ERR_IO /
   * ERR_FORMAT for a missing or damaged file, ERR_STATE for an expert without trained heads,
   * ERR_BACKEND_UNAVAILABLE without onnxruntime-node.
   */
  static async load(dir: string, options: { threads?: number } = {}): Promise<MufServer> {
    mustBeString(dir, 'MUF directory');
    checkOptions(options, loadKeys, 'MufServer options');
    const ort = onnxRuntime();
    const { card, cardPath, ids, experts: folders } = readMufDir(dir);
    if (!Number.isInteger(card.topL) || card.topL < 2) throw new QuorumError('ERR_FORMAT', `${cardPath}: topL must be an integer >= 2`);
    const experts: ServedExpert[] = [];
    try {
      for (const { expert: x, base } of folders) {
        const encoder = await ServingEncoder.load(join(base, 'model'), options);
        const passages = readExpertPassages(base, ids.length, encoder.dim);
        const headsPath = join(base, 'heads.safetensors');
        if (!existsSync(headsPath)) throw new QuorumError('ERR_STATE', `expert '${x.name}' has no trained heads (${headsPath})`);
        const { config, tensors } = readEnsembleFile(readFileBytes(headsPath), headsPath);
        if (config?.dim !== encoder.dim) throw new QuorumError('ERR_FORMAT', `${headsPath}: heads of width ${config?.dim} for a ${encoder.dim}-d expert`);
        const full = { hidden: 512, layers: 2, members: 20, ...config };
        const graph = mufHeadsOnnx(
          {
            getParameter: (name) => {
              const t = tensors.get(name);
              if (!t) throw new QuorumError('ERR_FORMAT', `${headsPath}: no tensor ${name}`);
              return t.data;
            },
          },
          full,
        );
        const heads = await ort.InferenceSession.create(graph, servingSessionOptions(options.threads));
        experts.push({ name: x.name, task: x.task, encoder, passages, heads, members: full.members, ...(x.calibration ? { temperature: x.calibration.temperature } : {}) });
      }
    } catch (e) {
      for (const x of experts) {
        x.passages.dispose();
        await x.heads.release();
        await x.encoder.dispose();
      }
      throw e;
    }
    return new MufServer(experts, ids, card.topL);
  }

  /**
   * Every expert's top-L, its heads' scores of them, its confidence (mutual information at its calibrated
   * temperature), fused by confidence ('muf') or uniformly: as MufRetriever.search.
   */
  async search(queries: readonly string[], k: number, options: { fusion?: 'muf' | 'uniform' } = {}): Promise<MufHits[]> {
    checkOptions(options, searchKeys, 'MUF search options');
    mustBeArray(queries, 'queries');
    queries.forEach((q, i) => mustBeString(q, `queries[${i}]`));
    if (queries.length === 0) throw new QuorumError('ERR_ARG', 'give at least one query');
    if (!Number.isInteger(k) || k < 1) throw new QuorumError('ERR_RANGE', `k must be a positive integer, got ${k}`);
    const fusion = options.fusion ?? 'muf';
    if (fusion !== 'muf' && fusion !== 'uniform') throw new QuorumError('ERR_ARG', `fusion must be 'muf' or 'uniform', got '${String(fusion)}'`);
    if (fusion === 'muf') {
      const uncalibrated = this.experts.find((e) => e.temperature === undefined);
      if (uncalibrated) throw new QuorumError('ERR_STATE', `expert '${uncalibrated.name}' is not calibrated`);
    }
    const B = queries.length;
    const L = Math.min(this.topL, this.corpusIds.length);
    const runs: Array<Map<string, ScoredDoc[]>> = [];
    const conf: Float32Array[] = [];
    for (const e of this.experts) {
      const q = await e.encoder.encodeQueries(queries, { task: e.task });
      const top = await scoreTopK(Tensor.from(q, [B, e.encoder.dim]), e.passages, L);
      runs.push(expertRun(top, B, this.corpusIds));
      if (fusion === 'uniform' || e.members === 1) {
        // One member cannot disagree with itself: MI is 0 and the confidence 1.
        conf.push(new Float32Array(B).fill(1));
        continue;
      }
      const out = await e.heads.run({ query_embedding: new (onnxRuntime().Tensor)('float32', q, [B, e.encoder.dim]) }, ['member_embeddings']);
      const members = out.member_embeddings!.data as Float32Array; // [B, K, dim]
      // z[b, k, l] = member k of question b . passage top[b, l]: one gather over B * K rows.
      const K = e.members;
      const ids = new Int32Array(B * K * L);
      for (let b = 0; b < B; b++) for (let m = 0; m < K; m++) ids.set(top.ids.subarray(b * top.k, b * top.k + L), (b * K + m) * L);
      const z = await gatherScores(Tensor.from(members, [B * K, e.encoder.dim]), e.passages, ids);
      const r = await ensembleMI(Tensor.from(z.data, [B, K, L]), { temperature: e.temperature! });
      conf.push(r.confidence.data.slice());
      r.mi.dispose();
      r.confidence.dispose();
      z.dispose();
    }
    const c: Collected = { size: B, runs, conf };
    return fuseCollected(c, this.experts.map((e) => e.task), fusion, k);
  }

  /** Releases the sessions and the corpus vectors. */
  async dispose(): Promise<void> {
    for (const e of this.experts) {
      e.passages.dispose();
      await e.heads.release();
      await e.encoder.dispose();
    }
  }
}
