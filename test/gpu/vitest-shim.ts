// The part of vitest's API that test/cuda.test.ts uses, over node:test and node:assert: the GPU machine has Node
// but no node_modules, so scripts/gpu-tests.sh bundles the suite with this module in vitest's place.
import assert from 'node:assert/strict';
import { describe as nodeDescribe, it as nodeIt } from 'node:test';

type Body = () => unknown;

function describeFn(name: string, fn: Body): void {
  void nodeDescribe(name, fn as () => void);
}
describeFn.skipIf = (cond: boolean) => (name: string, fn: Body) => {
  void nodeDescribe(name, { skip: cond }, fn as () => void);
};
export const describe = describeFn;

function itFn(name: string, fn: Body, _timeout?: number): void {
  void nodeIt(name, async () => {
    await fn();
  });
}
itFn.skipIf = (cond: boolean) => (name: string, fn: Body) => {
  void nodeIt(name, { skip: cond }, async () => {
    await fn();
  });
};
export const it = itFn;
export const test = itFn;

export function expect(actual: unknown) {
  return {
    toBe: (e: unknown) => assert.ok(Object.is(actual, e), `expected ${String(e)}, got ${String(actual)}`),
    toEqual: (e: unknown) => assert.deepStrictEqual(actual, e),
    toBeLessThan: (e: number) => assert.ok((actual as number) < e, `expected ${String(actual)} < ${e}`),
    toBeLessThanOrEqual: (e: number) => assert.ok((actual as number) <= e, `expected ${String(actual)} <= ${e}`),
    toBeGreaterThan: (e: number) => assert.ok((actual as number) > e, `expected ${String(actual)} > ${e}`),
    toBeGreaterThanOrEqual: (e: number) => assert.ok((actual as number) >= e, `expected ${String(actual)} >= ${e}`),
  };
}
