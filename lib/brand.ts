// A process that both imports and requires the package loads two copies of it (ESM and CommonJS: the dual-package
// hazard), so two copies of each class. The classes users hand back to the library (Tensor, WordPieceTokenizer) and
// the error they catch (QuorumError) answer `instanceof` by a brand under a global symbol, which both copies share.

/** Marks `cls`'s instances with the brand `name` and makes `instanceof cls` test for it (either copy's instances). */
export function brandClass(cls: { prototype: object }, name: string): void {
  const brand = Symbol.for(`quorum-retrieval.${name}`);
  Object.defineProperty(cls.prototype, brand, { value: true });
  Object.defineProperty(cls, Symbol.hasInstance, {
    value: (x: unknown) => typeof x === 'object' && x !== null && (x as Record<symbol, unknown>)[brand] === true,
  });
}
