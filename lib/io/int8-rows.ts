// Symmetric int8 storage of a matrix, one scale per row: a row's largest magnitude maps to 127. A shipped
// embedding table is mostly such rows (41,837 x 100 for the default model), and per-row scales keep the relative
// error of every row under 1/254 of its largest entry, whatever the spread of norms between rows.
import { QuorumError } from '../errors.js';

/**
 * A matrix as int8 codes and one scale per row. The codes are held in a Float32Array of integers in [-127, 127]
 * because that is what the safetensors writer and reader exchange (it stores them as I8 bytes).
 */
interface Int8Rows {
  codes: Float32Array;
  scales: Float32Array;
}

const MIN_NORMAL_F32 = 2 ** -126;

function checkShape(length: number, rows: number, cols: number): void {
  if (!Number.isSafeInteger(rows) || !Number.isSafeInteger(cols) || rows < 0 || cols < 0 || rows * cols !== length)
    throw new QuorumError('ERR_SHAPE', `a ${rows} x ${cols} matrix needs ${rows * cols} values, got ${length}`);
}

/**
 * Rounds each row to int8 codes with the scale max|x| / 127 (a row of zeros gets scale 0). ERR_ARG for a non-finite
 * value, ERR_SHAPE when `data` is not rows x cols.
 *
 * @example
 * const { codes, scales } = quantizeRowsInt8(embeddings, 41837, 100);
 */
export function quantizeRowsInt8(data: Float32Array, rows: number, cols: number): Int8Rows {
  checkShape(data.length, rows, cols);
  const codes = new Float32Array(data.length);
  const scales = new Float32Array(rows);
  for (let r = 0; r < rows; r++) {
    const row = data.subarray(r * cols, (r + 1) * cols);
    let max = 0;
    for (const [c, v] of row.entries()) {
      if (!Number.isFinite(v)) throw new QuorumError('ERR_ARG', `row ${r}, column ${c}: ${v} cannot be stored as int8`);
      max = Math.max(max, Math.abs(v));
    }
    // The scale is rounded to f32 first, so that decoding (code * scale in f32) sees the same scale as encoding.
    // Below the smallest normal f32 the scale would be too coarse to bound the error: such a row is stored as
    // zeros. Near f32's maximum, 127 * scale could round to infinity: the scale steps down one ulp.
    let scale = Math.fround(max / 127);
    if (scale < MIN_NORMAL_F32) scale = 0;
    while (Math.fround(127 * scale) === Infinity) scale = Math.fround(scale * (1 - 2 ** -23));
    scales[r] = scale;
    if (scale === 0) continue;
    for (let c = 0; c < cols; c++) codes[r * cols + c] = Math.max(-127, Math.min(127, Math.round((row[c] as number) / scale)));
  }
  return { codes, scales };
}

/**
 * The matrix back from {@link quantizeRowsInt8}'s codes and scales. ERR_SHAPE when the lengths disagree, ERR_FORMAT
 * for a code outside [-127, 127] or a negative or non-finite scale (a corrupt file).
 */
export function dequantizeRowsInt8(codes: Float32Array, scales: Float32Array, cols: number): Float32Array {
  checkShape(codes.length, scales.length, cols);
  const out = new Float32Array(codes.length);
  for (let r = 0; r < scales.length; r++) {
    const scale = scales[r]!;
    if (!(scale >= 0 && Number.isFinite(scale))) throw new QuorumError('ERR_FORMAT', `row ${r} has scale ${scale}`);
    for (let c = r * cols, end = c + cols; c < end; c++) {
      const q = codes[c]!;
      // An integer in [-127, 127] (q | 0 truncates; NaN fails the comparisons).
      if (!(q >= -127 && q <= 127 && q === (q | 0))) throw new QuorumError('ERR_FORMAT', `row ${r} holds code ${q}, outside [-127, 127]`);
      out[c] = q * scale;
    }
  }
  return out;
}
