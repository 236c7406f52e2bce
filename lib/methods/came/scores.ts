// Every expert's exact scores of encoded questions against encoded passages: sparse dot products (lexical), MaxSim
// over every token (local), dot products (global). Validation ranks its pool with them, and they are the brute force
// the indexes are tested against.
import { score } from '../../dense.js';
import { maxSim } from '../../maxsim.js';
import { sparseScores } from '../../splade.js';
import { Tensor } from '../../tensor.js';
import type { CameEncoding } from './encode.js';
import { QuorumError } from '../../errors.js';
import { mustBeArray, mustBeObject } from '../../validate.js';
import { CAME_EXPERTS, type CameExpertName } from './format.js';

/** Packed token vectors `[sum of lengths, dim]` as a padded `[rows, Lmax, dim]` tensor and its token mask. */
function padTokens(local: NonNullable<CameEncoding['local']>): { tokens: Tensor<'f32'>; mask: Uint8Array; maxLength: number } {
  const { vectors, lengths, dim } = local;
  const rows = lengths.length;
  const maxLength = Math.max(1, ...lengths);
  const out = new Float32Array(rows * maxLength * dim);
  const mask = new Uint8Array(rows * maxLength);
  let at = 0;
  for (let r = 0; r < rows; r++) {
    const n = lengths[r] as number;
    out.set(vectors.subarray(at * dim, (at + n) * dim), r * maxLength * dim);
    mask.fill(1, r * maxLength, r * maxLength + n);
    at += n;
  }
  return { tokens: Tensor.wrap(out, [rows, maxLength, dim], 'f32'), mask, maxLength };
}

/**
 * `[q.rows, p.rows]` scores per expert, row-major.
 *
 * @example
 * const s = await expertScores(qEnc, pEnc, ['lexical', 'local', 'global']);
 * s.local![i * pEnc.rows + j]; // MaxSim of question i and passage j
 */
export async function expertScores(
  q: CameEncoding,
  p: CameEncoding,
  experts: readonly CameExpertName[],
): Promise<Partial<Record<CameExpertName, Float32Array>>> {
  mustBeObject(q, 'question encoding');
  mustBeObject(p, 'passage encoding');
  mustBeArray(experts, 'experts');
  for (const e of experts) {
    if (!CAME_EXPERTS.includes(e)) throw new QuorumError('ERR_ARG', `a CAME expert is 'lexical', 'local' or 'global', got '${String(e)}'`);
    if (!q[e] || !p[e]) throw new QuorumError('ERR_ARG', `both encodings need the ${e} expert's part`);
  }
  const out: Partial<Record<CameExpertName, Float32Array>> = {};
  for (const e of experts) {
    if (e === 'lexical') out.lexical = (await sparseScores(q.lexical!, p.lexical!)).data;
    else if (e === 'global') {
      const G = q.global!.length / Math.max(q.rows, 1);
      out.global = (await score(Tensor.wrap(q.global!, [q.rows, G], 'f32'), Tensor.wrap(p.global!, [p.rows, G], 'f32'))).data;
    } else {
      const { tokens, mask } = padTokens(q.local!);
      const d = p.local!;
      const docs = { tokens: Tensor.wrap(d.vectors, [d.vectors.length / d.dim, d.dim], 'f32'), lengths: d.lengths };
      out.local = (await maxSim(tokens, docs, { queryMask: mask })).scores.data;
    }
  }
  return out;
}
