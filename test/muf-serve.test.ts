// MufServer (lib/methods/muf/serve.ts): a saved MUF directory searched without libtorch (ServingEncoder, the core's
// scoreTopK and mufConfidence) gives MufRetriever.search's hits and confidences, and a process that serves this way
// maps no libtorch (nor, for 0-layer experts, ONNX Runtime).
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { mufTrainCommand } from '../lib/methods/muf/cli.js';
import { MufRetriever } from '../lib/methods/muf/retriever.js';
import { MufServer } from '../lib/methods/muf/serve.js';
import { updateMufPassages } from '../lib/methods/muf/passages.js';
import { mufPassagesCommand } from '../lib/methods/muf/cli.js';
import { readSafetensors } from '../lib/io/safetensors.js';
import { ServingEncoder } from '../lib/models/serving-encoder.js';
import { packageRoot } from '../lib/native.js';
import { asyncCode } from './basics.js';
import { runModuleScript } from './helpers.js';

const root = mkdtempSync(join(tmpdir(), 'quorum-muf-serve-'));
const mufDir = join(root, 'muf');
const mini = join(packageRoot, 'data', 'multidomain-mini');
const QUESTIONS = [
  'what is the incubation period of the coronavirus',
  'how many people live in tokyo',
  'who invented the telephone',
  'symptoms of covid-19 in children',
];

beforeAll(async () => {
  // A small DPR-MUF over the shipped multi-task model: one expert per task (covid, selqa), small heads.
  const muf = await mufTrainCommand(
    {
      data: mini,
      experts: ['default:covid', 'default:selqa'],
      out: mufDir,
      members: 4,
      hidden: 32,
      layers: 1,
      epochs: 3,
      batch: 128,
      lr: 1e-3,
      hardNegatives: 1,
      topL: 50,
      hitTopK: 1,
      seed: 7,
    },
    () => undefined,
  );
  muf?.dispose();
}, 300_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('MufServer', () => {
  it("gives MufRetriever.search's hits and confidences, for every fusion", async () => {
    const torch = await MufRetriever.load(mufDir);
    const served = await MufServer.load(mufDir);
    try {
      expect(served.names).toEqual(torch.experts.map((e) => ({ name: e.name, task: e.task })));
      // The fixture has familiarity (muf train builds the banks, calibrate fits them): 'muf' weighs by P(own task).
      expect(torch.familiarityCalibrated).toBe(true);
      expect(served.familiarityCalibrated).toBe(true);
      for (const fusion of ['muf', 'muf-mi', 'uniform'] as const) {
        const a = await torch.search(QUESTIONS, 10, { fusion });
        const b = await served.search(QUESTIONS, 10, { fusion });
        a.forEach((r, i) => {
          expect(
            b[i]!.hits.map((h) => h.id),
            `${fusion} ${QUESTIONS[i]}`,
          ).toEqual(r.hits.map((h) => h.id));
          b[i]!.hits.forEach((h, j) => expect(h.score).toBeCloseTo(r.hits[j]!.score, 4));
          b[i]!.confidence.forEach((c, j) => expect(c).toBeCloseTo(r.confidence[j]!, 4));
        });
      }
      // The confidences are not all 1: the heads and MI really ran.
      const [first] = await served.search(QUESTIONS.slice(0, 1), 5, { fusion: 'muf-mi' });
      expect(first!.confidence.some((c) => c < 0.999)).toBe(true);
      expect(await asyncCode(served.search([], 5))).toBe('ERR_ARG');
      expect(await asyncCode(served.search(['x'], 0))).toBe('ERR_RANGE');
      expect(await asyncCode(served.search(['x'], 5, { fusion: 'oracle' as never }))).toBe('ERR_ARG');
    } finally {
      torch.dispose();
      await served.dispose();
    }
    expect(await asyncCode(MufServer.load(join(root, 'nowhere')))).toBe('ERR_IO');
    expect(await asyncCode(MufServer.load(mufDir, { heads: 'f16' as never }))).toBe('ERR_ARG');
  }, 120_000);

  it("familiarity routes: each task's questions get a higher P(own task) from their own expert; abstention; a directory without it falls back to MI", async () => {
    const torch = await MufRetriever.load(mufDir);
    const served = await MufServer.load(mufDir);
    try {
      const covid = torch.experts.findIndex((e) => e.task === 'covid');
      const selqa = 1 - covid;
      for (const e of torch.experts) expect(e.calibration!.familiarity!.auroc).toBeGreaterThan(0.85); // dev, the mini set
      const [c, g] = await served.search(['what is the incubation period of covid-19?', 'who wrote the novel war and peace?'], 5);
      expect(c!.confidence[covid]!).toBeGreaterThan(c!.confidence[selqa]! + 0.3);
      expect(g!.confidence[selqa]!).toBeGreaterThan(g!.confidence[covid]! + 0.3);
      // Abstention: nobody reaches 1; everybody reaches 0. Same for the libtorch path.
      for (const m of [served, torch]) {
        const none = await m.search(QUESTIONS, 5, { abstain: 1 });
        expect(none.every((r) => r.abstained === true && r.hits.length === 0)).toBe(true);
        const all = await m.search(QUESTIONS, 5, { abstain: 0 });
        expect(all.every((r) => r.abstained === undefined && r.hits.length === 5)).toBe(true);
        expect(await asyncCode(m.search(QUESTIONS, 5, { abstain: 1.5 }))).toBe('ERR_RANGE');
        expect(await asyncCode(m.search(QUESTIONS, 5, { fusion: 'uniform', abstain: 0.5 }))).toBe('ERR_ARG');
      }
      // A filter inside the search: every expert retrieves among the allowed rows only.
      const rows = Int32Array.from({ length: 300 }, (_, i) => 10 * i);
      const allowed = new Set(Array.from(rows, (r) => served.corpusId(r)));
      for (const r of await served.search(QUESTIONS, 10, { rows })) {
        expect(r.hits).toHaveLength(10);
        expect(r.hits.every((h) => allowed.has(h.id))).toBe(true);
      }
      expect((await served.search(QUESTIONS, 5, { rows: [] })).every((r) => r.hits.length === 0)).toBe(true);
      // Rows follow the search-request contract (lib/search-request.ts): any order, repeats ignored, each a corpus row.
      const shuffled = Array.from(rows).reverse();
      expect(await served.search(QUESTIONS, 10, { rows: [...shuffled, ...shuffled.slice(0, 5)] })).toEqual(
        await served.search(QUESTIONS, 10, { rows }),
      );
      expect(await asyncCode(served.search(QUESTIONS, 5, { rows: [3, 1e9] }))).toBe('ERR_RANGE');
      expect(await asyncCode(served.search(QUESTIONS, 5, { rows: [1.5] }))).toBe('ERR_RANGE');
      expect(await asyncCode(served.search(QUESTIONS, 5, { rows: 'x' as never }))).toBe('ERR_ARG');
      expect(await asyncCode(served.search(QUESTIONS, 2 ** 31 - 1))).toBe('ERR_RANGE'); // k past MAX_K: no buffer sized by it
    } finally {
      torch.dispose();
      await served.dispose();
    }
    // Without the banks (a directory trained before familiarity), 'muf' is 'muf-mi'.
    const old = join(root, 'muf-old');
    cpSync(mufDir, old, { recursive: true });
    for (const name of readdirSync(join(old, 'experts'))) rmSync(join(old, 'experts', name, 'familiarity.safetensors'));
    const plain = await MufServer.load(old);
    try {
      expect(plain.familiarityCalibrated).toBe(false);
      const a = await plain.search(QUESTIONS, 10);
      const b = await plain.search(QUESTIONS, 10, { fusion: 'muf-mi' });
      a.forEach((r, i) => expect(r.confidence).toEqual(b[i]!.confidence));
    } finally {
      await plain.dispose();
    }
  }, 120_000);

  it('passages change without retraining: kept vectors as they were, new ones as each expert encodes them, removed ones never found', async () => {
    const dir = join(root, 'muf-passages');
    cpSync(mufDir, dir, { recursive: true });
    const ids = readFileSync(join(dir, 'corpus-ids.txt'), 'utf8').trim().split('\n');
    const vectors = (name: string) => readSafetensors(readFileSync(join(dir, 'experts', name, 'passages.safetensors'))).get('passages')!;
    const experts = readdirSync(join(dir, 'experts'));
    const before = new Map(experts.map((e) => [e, vectors(e)]));
    const snapshot = () => [
      readFileSync(join(dir, 'corpus-ids.txt')),
      ...experts.map((e) => readFileSync(join(dir, 'experts', e, 'passages.safetensors'))),
    ];
    // Refused changes leave every file as it was.
    const unchanged = snapshot();
    for (const bad of [
      {},
      { add: [{ id: ids[5]!, text: 'x' }] },
      { add: [{ id: 'a\nb', text: 'x' }] },
      { remove: ids },
      {
        add: [
          { id: 'n', text: 'x' },
          { id: 'n', text: 'y' },
        ],
      },
      { bogus: 1 },
    ])
      expect(await asyncCode(updateMufPassages(dir, bad as never)), JSON.stringify(bad)).toBe('ERR_ARG');
    expect(snapshot()).toEqual(unchanged);
    // Remove three (one of them comes back with a new text: an update), add two new.
    const removed = [ids[0]!, ids[1]!, ids[2]!];
    const added = [
      { id: ids[2]!, title: 'Zebra migration', text: 'Each year about a million wildebeest and zebra migrate across the Serengeti.' },
      { id: 'new-1', title: 'Quorum sensing', text: 'Quorum sensing lets bacteria regulate gene expression by population density.' },
      { id: 'new-2', text: 'The Great Barrier Reef is the largest coral reef system in the world.' },
    ];
    expect(await updateMufPassages(dir, { add: added, remove: [...removed, 'no-such-id'] })).toEqual({
      added: 3,
      removed: 3,
      passages: ids.length,
    });
    const now = readFileSync(join(dir, 'corpus-ids.txt'), 'utf8').trim().split('\n');
    expect(now).toEqual([...ids.slice(3), ...added.map((p) => p.id)]);
    for (const e of experts) {
      const old = before.get(e)!;
      const cur = vectors(e);
      const dim = old.shape[1]!;
      expect(cur.shape).toEqual([ids.length, dim]);
      expect(Array.from(cur.data.subarray(0, (ids.length - 3) * dim))).toEqual(Array.from(old.data.subarray(3 * dim)));
      const encoder = await ServingEncoder.load(join(dir, 'experts', e, 'model'));
      const fresh = await encoder.encodePassages(added.map((p) => ({ title: p.title ?? '', text: p.text })));
      await encoder.dispose();
      expect(Array.from(cur.data.subarray((ids.length - 3) * dim))).toEqual(Array.from(fresh));
    }
    // A server over the changed directory finds the new passages and never the removed ones.
    const served = await MufServer.load(dir);
    try {
      const results = await served.search([added[1]!.text, added[0]!.text, 'coral reef', ...QUESTIONS], 20, { fusion: 'uniform' });
      expect(results[0]!.hits.slice(0, 3).map((h) => h.id)).toContain('new-1');
      for (const r of results) for (const h of r.hits) expect(removed.slice(0, 2)).not.toContain(h.id);
    } finally {
      await served.dispose();
    }
    // The CLI: a corpus.jsonl to add, ids to remove.
    const file = join(root, 'more.jsonl');
    writeFileSync(file, JSON.stringify({ _id: 'new-3', title: '', text: 'Volcanoes form where tectonic plates meet.' }) + '\n');
    const lines: string[] = [];
    await mufPassagesCommand({ muf: dir, add: file, remove: ['new-2'] }, (l) => lines.push(l));
    expect(lines).toEqual([`${dir}: 1 passages added, 1 removed; ${ids.length} passages`]);
    expect(readFileSync(join(dir, 'corpus-ids.txt'), 'utf8').trim().split('\n').slice(-2)).toEqual(['new-1', 'new-3']);
  }, 120_000);

  it('dispose() during a multi-step call: the native step in flight ends, the call rejects with ERR_DISPOSED at its next step', async () => {
    const muf = await MufRetriever.load(mufDir);
    const inFlight = muf.search(QUESTIONS, 10);
    muf.dispose();
    expect(await asyncCode(inFlight)).toBe('ERR_DISPOSED');
    expect(await asyncCode(muf.search(QUESTIONS, 10))).toBe('ERR_DISPOSED');
  }, 60_000);

  it("heads: 'bf16' moves the confidences by rounding only", async () => {
    const f32 = await MufServer.load(mufDir);
    const bf16 = await MufServer.load(mufDir, { heads: 'bf16' });
    try {
      const a = await f32.search(QUESTIONS, 10, { fusion: 'muf-mi' });
      const b = await bf16.search(QUESTIONS, 10, { fusion: 'muf-mi' });
      a.forEach((r, i) => r.confidence.forEach((c, j) => expect(Math.abs(c - b[i]!.confidence[j]!)).toBeLessThan(0.02)));
      // Uniform fusion reads no heads: the same lists.
      const u = await bf16.search(QUESTIONS, 10, { fusion: 'uniform' });
      (await f32.search(QUESTIONS, 10, { fusion: 'uniform' })).forEach((r, i) =>
        expect(u[i]!.hits.map((h) => h.id)).toEqual(r.hits.map((h) => h.id)),
      );
    } finally {
      await f32.dispose();
      await bf16.dispose();
    }
  }, 120_000);

  /**
   * Searches QUESTIONS with f32's server and another under 'uniform' and 'muf-mi': each fused top 10 shares at least
   * `shared` passages with f32's, and a passage of f32's top 3 that both list moves its score by less than `move`
   * (under the fusions in `scored`). Returns the largest move of an expert's confidence.
   */
  async function compareToF32(f32: MufServer, other: MufServer, shared: number, move: number, scored: readonly string[] = ['uniform', 'muf-mi']) {
    let maxMove = 0;
    for (const fusion of ['uniform', 'muf-mi'] as const) {
      const a = await f32.search(QUESTIONS, 10, { fusion });
      const b = await other.search(QUESTIONS, 10, { fusion });
      a.forEach((r, i) => {
        const near = b[i]!.hits.filter((h) => r.hits.some((x) => x.id === h.id)).length;
        expect(near, `${fusion} q${i}`).toBeGreaterThanOrEqual(shared);
        if (scored.includes(fusion))
          r.hits.slice(0, 3).forEach((h) => {
            const same = b[i]!.hits.find((x) => x.id === h.id);
            if (same) expect(Math.abs(same.score - h.score)).toBeLessThan(move);
          });
        r.confidence.forEach((c, j) => (maxMove = Math.max(maxMove, Math.abs(c - b[i]!.confidence[j]!))));
      });
    }
    return maxMove;
  }

  it("passages: 'bf16' scans half the bytes; scores move by rounding, the lists hardly", async () => {
    const f32 = await MufServer.load(mufDir);
    const bf16 = await MufServer.load(mufDir, { passages: 'bf16', heads: 'bf16' });
    let maxMove = 0;
    try {
      // bf16 keeps 8 bits of mantissa: a unit vector's inner products move by a few thousandths.
      maxMove = await compareToF32(f32, bf16, 8, 0.02);
    } finally {
      await f32.dispose();
      await bf16.dispose();
    }
    // MI over a sharp softmax (temperature ~0.05) amplifies the scores' rounding: 0.063 at most on this directory.
    expect(maxMove).toBeGreaterThan(0);
    expect(maxMove).toBeLessThan(0.1);
    expect(await asyncCode(MufServer.load(mufDir, { passages: 'f16' as never }))).toBe('ERR_ARG');
  }, 120_000);

  it("passages: 'int8' holds a quarter of the bytes; the fused lists stay, the scores move by the codes' rounding", async () => {
    const f32 = await MufServer.load(mufDir);
    const q8 = await MufServer.load(mufDir, { passages: 'int8' });
    try {
      await compareToF32(f32, q8, 8, 0.02);
      // a filter works over int8 passages as over f32 ones
      const rows = [0, 2, 4, 6, 8, 10];
      const hits = await q8.search(QUESTIONS.slice(0, 2), 3, { fusion: 'uniform', rows });
      const ids = hits.flatMap((r) => r.hits.map((h) => h.id));
      const allowed = new Set(rows.map((r) => q8.corpusId(r)));
      expect(ids.length).toBeGreaterThan(0);
      for (const id of ids) expect(allowed.has(id)).toBe(true);
    } finally {
      await f32.dispose();
      await q8.dispose();
    }
    expect(await asyncCode(MufServer.load(mufDir, { passages: 'int4' as never }))).toBe('ERR_ARG');
  }, 120_000);

  it("passages: 'binary' scans 1-bit codes and rescores 4 x topL candidates with the mapped f32 vectors", async () => {
    const f32 = await MufServer.load(mufDir);
    const bits = await MufServer.load(mufDir, { passages: 'binary' });
    try {
      // a passage in both lists carries its exact f32 score (rescored), as fused by the same rule
      await compareToF32(f32, bits, 7, 0.05, ['uniform']);
      const hits = await bits.search(QUESTIONS.slice(0, 2), 3, { fusion: 'uniform', rows: [1, 3, 5, 7, 9] });
      const allowed = new Set([1, 3, 5, 7, 9].map((r) => bits.corpusId(r)));
      for (const id of hits.flatMap((r) => r.hits.map((h) => h.id))) expect(allowed.has(id)).toBe(true);
    } finally {
      await f32.dispose();
      await bits.dispose();
    }
  }, 120_000);

  it.each([
    ['bf16', 0.05],
    ['int8', 0.1],
  ] as const)("familiarity: '%s' holds smaller banks; P(own task) moves by rounding (< %f), the routing holds", async (dtype, most) => {
    const f32 = await MufServer.load(mufDir);
    const bf16 = await MufServer.load(mufDir, { familiarity: dtype });
    let maxMove = 0;
    try {
      expect(f32.familiarityCalibrated && bf16.familiarityCalibrated).toBe(true);
      const a = await f32.search(QUESTIONS, 10);
      const b = await bf16.search(QUESTIONS, 10);
      a.forEach((r, i) => {
        r.confidence.forEach((c, j) => (maxMove = Math.max(maxMove, Math.abs(c - b[i]!.confidence[j]!))));
        // Each question's most confident expert stays the same.
        const top = (w: number[]) => w.indexOf(Math.max(...w));
        if (Math.max(...r.confidence) - Math.min(...r.confidence) > 0.1) expect(top(b[i]!.confidence)).toBe(top(r.confidence));
        expect(b[i]!.hits.filter((h) => r.hits.some((x) => x.id === h.id)).length).toBeGreaterThanOrEqual(8);
      });
    } finally {
      await f32.dispose();
      await bf16.dispose();
    }
    expect(maxMove).toBeGreaterThan(0);
    expect(maxMove).toBeLessThan(most);
    expect(await asyncCode(MufServer.load(mufDir, { familiarity: 'f16' as never }))).toBe('ERR_ARG');
    expect(await asyncCode(MufServer.load(mufDir, { familiarity: 'binary' as never }))).toBe('ERR_ARG');
  }, 120_000);

  it('a process that serves a MUF directory of 0-layer experts through MufServer maps no libtorch, faiss or ONNX Runtime', () => {
    const script = `
      import { readFileSync } from 'node:fs';
      import { MufServer } from ${JSON.stringify(join(packageRoot, 'lib', 'methods', 'muf', 'serve.ts'))};
      const muf = await MufServer.load(${JSON.stringify(mufDir)});
      const [r] = await muf.search(['what is the incubation period of the coronavirus'], 5);
      const maps = readFileSync('/proc/self/maps', 'utf8');
      console.log(JSON.stringify({ hits: r.hits.length, torch: /libtorch|libc10/.test(maps), faiss: /libfaiss/.test(maps), ort: /onnxruntime/.test(maps) }));
    `;
    expect(runModuleScript(script)).toEqual({ hits: 5, torch: false, faiss: false, ort: false });
  }, 120_000);
});
