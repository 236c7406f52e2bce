// Lucene stores each document's length in one byte (SmallFloat.intToByte4) and BM25 scores with the decoded
// value; matching Anserini's scores needs the same rounding. Lengths below 24 are exact; above, 3 mantissa bits.

const NUM_FREE_VALUES = 255 - longToInt4(2 ** 31 - 1); // 24

function longToInt4(i: number): number {
  const numBits = i === 0 ? 0 : Math.floor(Math.log2(i)) + 1;
  if (numBits < 4) return i;
  const shift = numBits - 4;
  let encoded = Math.floor(i / 2 ** shift) & 0x07;
  encoded |= (shift + 1) << 3;
  return encoded;
}

function int4ToLong(i: number): number {
  const bits = i & 0x07;
  const shift = (i >>> 3) - 1;
  return shift === -1 ? bits : (bits | 0x08) * 2 ** shift;
}

/**
 * The document length Lucene's BM25 sees for a document of `n` terms.
 *
 * @example
 * luceneQuantizedLength(3);      // 3: small lengths are exact
 * luceneQuantizedLength(100);    // 96
 * luceneQuantizedLength(1000);   // 984
 */
export function luceneQuantizedLength(n: number): number {
  const b = n < NUM_FREE_VALUES ? n : NUM_FREE_VALUES + longToInt4(n - NUM_FREE_VALUES);
  return b < NUM_FREE_VALUES ? b : NUM_FREE_VALUES + int4ToLong(b - NUM_FREE_VALUES);
}
