/** The number of elements of an array of this shape (1 for a scalar's empty shape). */
export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}
