// Checks of the option objects and plain inputs the TypeScript API takes, so that every bad value becomes a
// QuorumError with a code: ERR_ARG for a wrong type or an unknown key, ERR_RANGE for a value out of range (NaN and
// infinities included). Schemas (zod) where an object's values need checking; checkOptions where only its keys do,
// the values being checked where they are used. Large arrays (runs, hit lists) are checked by the loops below
// instead: a schema per element costs too much on a 100k-document run.
import { z } from 'zod';

import { QuorumError } from './errors.js';

export { z };

/** A finite number (NaN and infinities are out of range). */
export const finite = z.number().finite();
/** An integer >= 1. */
export const positiveInt = z.number().int().positive();
/** An integer >= 0. */
export const count = z.number().int().nonnegative();

function codeOf(issue: z.ZodIssue): 'ERR_ARG' | 'ERR_RANGE' {
  switch (issue.code) {
    case 'too_small':
    case 'too_big':
    case 'not_finite':
    case 'not_multiple_of':
      return 'ERR_RANGE';
    case 'invalid_type':
      // NaN for a number, and a fraction for an integer, are values out of range rather than wrong types
      return issue.received === 'nan' || (issue.expected === 'integer' && issue.received === 'float') ? 'ERR_RANGE' : 'ERR_ARG';
    case 'custom':
      return (issue.params as { code?: string } | undefined)?.code === 'ERR_RANGE' ? 'ERR_RANGE' : 'ERR_ARG';
    default:
      return 'ERR_ARG';
  }
}

/**
 * `value` checked against `schema`; the first problem is a QuorumError naming `what` and the path to the bad
 * field, e.g. "fuse options.rrfK: Number must be greater than or equal to 0".
 */
export function parse<S extends z.ZodTypeAny>(schema: S, value: unknown, what: string): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  let issue = r.error.issues[0] as z.ZodIssue;
  // Of a union (an array or a Map of them), report why the first alternative failed.
  while (issue.code === 'invalid_union' && issue.unionErrors[0]?.issues[0]) issue = issue.unionErrors[0].issues[0];
  const path = issue.path.length ? `.${issue.path.join('.')}` : '';
  throw new QuorumError(codeOf(issue), `${what}${path}: ${issue.message}`);
}

/** A ranked list of `{ id, score }` with string (or number / bigint, `ids`) ids and finite (or any, `finite` false) number scores. */
export function checkHits(list: unknown, what: string, ids: 'string' | 'any' = 'any', finite = true): void {
  if (!Array.isArray(list)) throw new QuorumError('ERR_ARG', `${what} must be an array of { id, score }`);
  for (let i = 0; i < list.length; i++) {
    const h = list[i] as { id?: unknown; score?: unknown } | null;
    if (h === null || typeof h !== 'object') throw new QuorumError('ERR_ARG', `${what}[${i}] must be { id, score }`);
    const t = typeof h.id;
    if (ids === 'string' ? t !== 'string' : t !== 'string' && t !== 'number' && t !== 'bigint')
      throw new QuorumError('ERR_ARG', `${what}[${i}].id must be a ${ids === 'string' ? 'string' : 'string, number or bigint'}`);
    if (typeof h.score !== 'number') throw new QuorumError('ERR_ARG', `${what}[${i}].score must be a number, got ${typeof h.score}`);
    if (finite ? !Number.isFinite(h.score) : Number.isNaN(h.score))
      throw new QuorumError('ERR_RANGE', `${what}[${i}].score must be ${finite ? 'finite' : 'a number'}, got ${h.score}`);
  }
}

/** A run: a Map from query id to its `{ id, score }` list (scores finite unless `finite` is false). */
export function checkRun(run: unknown, what: string, finite = true): void {
  if (!(run instanceof Map)) throw new QuorumError('ERR_ARG', `${what} must be a Map from query id to [{ id, score }]`);
  for (const [qid, list] of run) {
    if (typeof qid !== 'string') throw new QuorumError('ERR_ARG', `${what} has a query id that is not a string`);
    checkHits(list, `${what}[${qid}]`, 'string', finite);
  }
}

/** Throws QuorumError(code, message) unless `ok`: a command's option checks, one line each. */
export function check(ok: boolean, code: 'ERR_ARG' | 'ERR_RANGE', message: string): void {
  if (!ok) throw new QuorumError(code, message);
}

/** ERR_ARG unless `v` is a string. */
export function mustBeString(v: unknown, what: string): asserts v is string {
  if (typeof v !== 'string') throw new QuorumError('ERR_ARG', `${what} must be a string, got ${v === null ? 'null' : typeof v}`);
}

/** ERR_ARG unless `v` is an array (or, with `arrayLike`, a typed array too). */
export function mustBeArray(v: unknown, what: string, arrayLike = false): void {
  if (!Array.isArray(v) && !(arrayLike && ArrayBuffer.isView(v)))
    throw new QuorumError('ERR_ARG', `${what} must be an array, got ${v === null ? 'null' : typeof v}`);
}

/**
 * ERR_ARG unless `rows` is an array (or Int32Array) of integer row numbers, ERR_RANGE for one outside [0, n): a
 * fraction or a string ('3') would be read as another row, or as row 0 (issue 65).
 */
export function checkRowNumbers(rows: unknown, n: number, what: string): void {
  if (!(rows instanceof Int32Array) && !Array.isArray(rows)) throw new QuorumError('ERR_ARG', `${what} must be an array of row numbers`);
  for (let i = 0; i < rows.length; i++) {
    const r: unknown = rows[i];
    if (typeof r !== 'number' || !Number.isInteger(r))
      throw new QuorumError('ERR_ARG', `${what}[${i}] must be an integer row number, got ${JSON.stringify(r) ?? String(r)}`);
    if (r < 0 || r >= n) throw new QuorumError('ERR_RANGE', `${what}[${i}] = ${r} is not a row of the ${n} passages`);
  }
}

/**
 * Training examples `{ query, task, positives, hardNegatives }` over a corpus of `n` passages, each field checked:
 * the query and task strings, the rows as {@link checkRowNumbers}. The first bad field is the error, named.
 */
export function checkTrainingExamples(examples: unknown, n: number, what = 'examples'): void {
  mustBeArray(examples, what);
  (examples as unknown[]).forEach((x, i) => {
    mustBeObject(x, `${what}[${i}]`);
    const e = x as Record<string, unknown>;
    if (typeof e.query !== 'string') throw new QuorumError('ERR_ARG', `${what}[${i}].query must be a string`);
    if (typeof e.task !== 'string') throw new QuorumError('ERR_ARG', `${what}[${i}].task must be a string`);
    checkRowNumbers(e.positives, n, `${what}[${i}].positives`);
    checkRowNumbers(e.hardNegatives, n, `${what}[${i}].hardNegatives`);
  });
}

/**
 * The ids of a corpus a method saves one per line (MUF's corpus-ids.txt, CAME's ids.txt, run files): each a
 * non-empty string without line breaks, none twice. ERR_ARG naming the first bad one: a missing id was written as
 * "undefined", an empty or repeated one names no passage, or two (issue 65).
 */
export function checkPassageIds(passages: readonly unknown[], what = 'corpus'): void {
  const seen = new Set<string>();
  passages.forEach((p, i) => {
    mustBeObject(p, `${what}[${i}]`);
    const id = (p as { id?: unknown }).id;
    if (typeof id !== 'string' || id === '' || /[\r\n]/.test(id))
      throw new QuorumError(
        'ERR_ARG',
        `${what}[${i}].id must be a non-empty string without line breaks, got ${JSON.stringify(id) ?? 'undefined'}`,
      );
    if (seen.has(id)) throw new QuorumError('ERR_ARG', `${what}[${i}].id ${JSON.stringify(id)} appears twice`);
    seen.add(id);
  });
}

/** ERR_ARG unless `v` is a Map. */
export function mustBeMap(v: unknown, what: string): void {
  if (!(v instanceof Map)) throw new QuorumError('ERR_ARG', `${what} must be a Map, got ${v === null ? 'null' : typeof v}`);
}

/** ERR_ARG unless `v` is a non-null object. */
export function mustBeObject(v: unknown, what: string): void {
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw new QuorumError('ERR_ARG', `${what} must be an object, got ${v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v}`);
}

/**
 * ERR_ARG unless `v` is an object with these methods and an object `config` (with `config.<field>` an object when
 * `field` is given): what the exporters and loaders read from a model, checked before they touch it.
 */
export function mustBeModelLike(v: unknown, methods: readonly string[], what: string, field?: string): void {
  mustBeObject(v, what);
  const o = v as Record<string, unknown>;
  for (const m of methods) if (typeof o[m] !== 'function') throw new QuorumError('ERR_ARG', `${what} must have a ${m}() method (a model)`);
  const config = o.config as Record<string, unknown> | undefined;
  if (
    config === null ||
    typeof config !== 'object' ||
    (field !== undefined && (config[field] === null || typeof config[field] !== 'object'))
  )
    throw new QuorumError('ERR_ARG', `${what} must have a config${field ? ` with an ${field}` : ''} object`);
}

type MissingKeys<T, K extends readonly PropertyKey[]> = Exclude<keyof T, K[number]>;

/**
 * The option names of `T`, for {@link checkOptions}. The list must name every key of `T`: one left out is a compile
 * error ("Expected 2 arguments"), so an option added to the interface cannot be refused at run time.
 *
 * @example
 * const denseKeys = optionKeys<DenseOptions>()(['checkFinite']);
 */
export function optionKeys<T>() {
  return <const K extends readonly (keyof T & string)[]>(
    keys: K,
    ..._complete: [MissingKeys<T, K>] extends [never] ? [] : [`missing: ${MissingKeys<T, K> & string}`]
  ): ReadonlySet<string> => new Set<string>(keys);
}

/**
 * ERR_ARG unless `v` is undefined or an object whose own keys are all in `known`: a misspelt option
 * (`{ efsearch: 64 }`) fails instead of being ignored. A key whose value is undefined counts too.
 */
export function checkOptions(v: unknown, known: ReadonlySet<string>, what: string): void {
  if (v === undefined) return;
  mustBeObject(v, what);
  for (const k of Object.keys(v as object)) {
    if (!known.has(k)) throw new QuorumError('ERR_ARG', `${what}: unknown option '${k}' (known: ${[...known].join(', ') || 'none'})`);
    // Callbacks (onProgress, onEpoch, ...) are called deep inside long work: a value that is not a function would be
    // a TypeError there, after minutes, rather than a typed error now (issue 65).
    const value = (v as Record<string, unknown>)[k];
    // No option takes null: `?? default` would read it as left out, so { factory: null } built a Flat index silently.
    if (value === null) throw new QuorumError('ERR_ARG', `${what}: ${k} is null (leave it out for the default)`);
    if (/^on[A-Z]/.test(k) && value !== undefined && typeof value !== 'function')
      throw new QuorumError('ERR_ARG', `${what}: ${k} must be a function, got ${value === null ? 'null' : typeof value}`);
  }
}

const MIN_I64 = -(2n ** 63n);
const MAX_I64 = 2n ** 63n - 1n;

/**
 * `v` as a signed 64-bit integer: a bigint that fits, or a number that is a safe integer. Anything else is an
 * error (ERR_RANGE for a number or bigint out of range, ERR_ARG for another type) rather than a silent wrap
 * (BigInt64Array.from turns 2^64 + 5 into 5) or a RangeError (BigInt(1.7)).
 */
export function int64(v: unknown, what: string): bigint {
  if (typeof v === 'bigint') {
    if (v < MIN_I64 || v > MAX_I64) throw new QuorumError('ERR_RANGE', `${what} = ${v} does not fit in a signed 64-bit integer`);
    return v;
  }
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  throw new QuorumError(
    typeof v === 'number' ? 'ERR_RANGE' : 'ERR_ARG',
    `${what} must be an integer (a safe-integer number or a bigint), got ${typeof v === 'number' ? v : typeof v}`,
  );
}

/** Whether every value is a finite number: a plain loop (`every(Number.isFinite)` took 45 ms over 3.9M weights, this 6). */
export function allFinite(values: ArrayLike<number>): boolean {
  for (let i = 0; i < values.length; i++) if (!Number.isFinite(values[i])) return false;
  return true;
}
