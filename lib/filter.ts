// Metadata filters for search (docs/methods/kernels.md#filtered-search): passages carry keyword and numeric fields; a
// filter (equals, in, range, and / or / not) compiles once against a MetadataTable to the ascending list of allowed
// rows, which the search reads instead of the whole corpus (scoreTopK's `rows`): exactly the filtered top-k, at the
// cost of the allowed rows only, where searching everything and filtering afterwards pays for every row and may come
// back short.
import { QuorumError } from './errors.js';

/** One metadata value: a keyword (string) or a number. */
type FieldValue = string | number;

/** A passage's metadata: each field one value or several (a multi-valued field matches when any value does). */
export type PassageMetadata = Readonly<Record<string, FieldValue | readonly FieldValue[] | null | undefined>>;

/** Bounds of a numeric range (any subset). */
interface RangeBounds {
  /** Greater than. */
  gt?: number;
  /** Greater than or equal. */
  gte?: number;
  /** Less than. */
  lt?: number;
  /** Less than or equal. */
  lte?: number;
}

/**
 * A filter over passage metadata. A row without the field matches no `eq`, `in` or `range` (and so matches their
 * `not`); numbers and strings never equal each other.
 *
 * @example
 * const f: Filter = { and: [{ field: 'lang', eq: 'en' }, { field: 'year', range: { gte: 2019 } }, { not: { field:
 * 'tag', in: ['draft', 'spam'] } }] };
 */
export type Filter =
  | { field: string; eq: FieldValue }
  | { field: string; in: readonly FieldValue[] }
  | { field: string; range: RangeBounds }
  | { and: readonly Filter[] }
  | { or: readonly Filter[] }
  | { not: Filter };

const isValue = (v: unknown): v is FieldValue => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));

/**
 * The metadata of a corpus, one record per row, stored by field (each value's rows) for filters to compile against.
 *
 * @example
 * const table = MetadataTable.from(corpus.map((p) => ({ lang: p.lang, year: p.year })));
 * const rows = compileFilter({ field: 'lang', eq: 'en' }, table);   // Int32Array of allowed rows, ascending
 * const top = await scoreTopK(q, passages, 10, { rows });
 */
export class MetadataTable {
  private constructor(
    /** Rows in the table. */
    readonly size: number,
    /** field -> value -> its rows, ascending (keys: 's:' + keyword or 'n:' + number). */
    private readonly postings: ReadonlyMap<string, ReadonlyMap<string, Int32Array>>,
    /** field -> each numeric value with its row, by value. */
    private readonly numbers: ReadonlyMap<string, { values: Float64Array; rows: Int32Array }>,
  ) {}

  /** From one record per row. ERR_ARG for a record that is not an object or a value that is not a string or finite number. */
  static from(records: readonly PassageMetadata[]): MetadataTable {
    if (!Array.isArray(records)) throw new QuorumError('ERR_ARG', 'metadata must be an array of records, one per row');
    if (records.length === 0) throw new QuorumError('ERR_ARG', 'metadata holds no rows');
    const postings = new Map<string, Map<string, number[]>>();
    const numbers = new Map<string, Array<[number, number]>>();
    records.forEach((rec, row) => {
      if (rec === null || typeof rec !== 'object' || Array.isArray(rec))
        throw new QuorumError('ERR_ARG', `metadata[${row}] must be an object of fields`);
      for (const [field, raw] of Object.entries(rec)) {
        if (raw === null || raw === undefined) continue;
        const values = Array.isArray(raw) ? (raw as readonly unknown[]) : [raw];
        for (const v of values) {
          if (!isValue(v))
            throw new QuorumError('ERR_ARG', `metadata[${row}].${field} must be strings or finite numbers, got ${JSON.stringify(v)}`);
          let byValue = postings.get(field);
          if (!byValue) postings.set(field, (byValue = new Map()));
          const key = valueKey(v);
          const list = byValue.get(key);
          // A value repeated within one record counts once.
          if (!list) byValue.set(key, [row]);
          else if (list[list.length - 1] !== row) list.push(row);
          if (typeof v === 'number') {
            let nums = numbers.get(field);
            if (!nums) numbers.set(field, (nums = []));
            nums.push([v, row]);
          }
        }
      }
    });
    const frozen = new Map([...postings].map(([f, m]) => [f, new Map([...m].map(([k, rows]) => [k, Int32Array.from(rows)]))]));
    const sorted = new Map(
      [...numbers].map(([f, pairs]) => {
        pairs.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
        return [f, { values: Float64Array.from(pairs, (p) => p[0]), rows: Int32Array.from(pairs, (p) => p[1]) }];
      }),
    );
    return new MetadataTable(records.length, frozen, sorted);
  }

  /** The fields present in any row. */
  get fields(): string[] {
    return [...this.postings.keys()];
  }

  /** @internal Rows whose field holds value v. */
  valueRows(field: string, v: FieldValue): Int32Array | undefined {
    return this.postings.get(field)?.get(valueKey(v));
  }

  /** @internal Rows whose numeric field has a value within the bounds (a row may appear more than once). */
  rangeRows(field: string, b: RangeBounds): Int32Array {
    const nums = this.numbers.get(field);
    if (!nums) return new Int32Array(0);
    const lo = lowerBound(nums.values, b.gte ?? b.gt ?? -Infinity, b.gte === undefined && b.gt !== undefined);
    const hi = lowerBound(nums.values, b.lte ?? b.lt ?? Infinity, b.lte !== undefined || b.lt === undefined);
    return nums.rows.subarray(lo, Math.max(lo, hi));
  }
}

const valueKey = (v: FieldValue) => (typeof v === 'number' ? `n:${v}` : `s:${v}`);

/** First index whose value is >= x (or > x when `strict`). */
function lowerBound(values: Float64Array, x: number, strict: boolean): number {
  let lo = 0,
    hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (strict ? values[mid]! <= x : values[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** One byte per row: 1 where the filter matches. */
/** How deep and / or / not may nest: far beyond any real filter, far below the stack's limit (issue 65). */
const MAX_FILTER_DEPTH = 64;

function evaluate(f: Filter, t: MetadataTable, path: string, depth = 0): Uint8Array {
  if (depth > MAX_FILTER_DEPTH)
    throw new QuorumError('ERR_RANGE', `filters nest at most ${MAX_FILTER_DEPTH} levels deep (at ${path.slice(0, 60)}...)`);
  if (f === null || typeof f !== 'object' || Array.isArray(f)) throw new QuorumError('ERR_ARG', `${path} must be a filter object`);
  const keys = Object.keys(f);
  const out = new Uint8Array(t.size);
  const mark = (rows: ArrayLike<number> | undefined) => {
    if (rows) for (let i = 0; i < rows.length; i++) out[rows[i]!] = 1;
  };
  if ('and' in f || 'or' in f) {
    const op = 'and' in f ? 'and' : 'or';
    const parts = (f as { and?: readonly Filter[]; or?: readonly Filter[] })[op];
    if (keys.length !== 1 || !Array.isArray(parts) || parts.length === 0)
      throw new QuorumError('ERR_ARG', `${path}.${op} must be a non-empty array of filters, alone in its object`);
    if (op === 'and') out.fill(1);
    parts.forEach((p, i) => {
      const m = evaluate(p, t, `${path}.${op}[${i}]`, depth + 1);
      for (let r = 0; r < t.size; r++) out[r] = op === 'and' ? out[r]! & m[r]! : out[r]! | m[r]!;
    });
    return out;
  }
  if ('not' in f) {
    if (keys.length !== 1) throw new QuorumError('ERR_ARG', `${path}.not must be alone in its object`);
    const m = evaluate(f.not, t, `${path}.not`, depth + 1);
    for (let r = 0; r < t.size; r++) out[r] = 1 - m[r]!;
    return out;
  }
  if (!('field' in f) || typeof f.field !== 'string' || keys.length !== 2)
    throw new QuorumError(
      'ERR_ARG',
      `${path} must be { field, eq | in | range }, { and }, { or } or { not }, got keys ${keys.join(', ') || '(none)'}`,
    );
  if ('eq' in f) {
    if (!isValue(f.eq)) throw new QuorumError('ERR_ARG', `${path}.eq must be a string or a finite number`);
    mark(t.valueRows(f.field, f.eq));
  } else if ('in' in f) {
    if (!Array.isArray(f.in) || !f.in.every(isValue))
      throw new QuorumError('ERR_ARG', `${path}.in must be an array of strings or finite numbers`);
    for (const v of f.in) mark(t.valueRows(f.field, v));
  } else if ('range' in f) {
    const b = f.range;
    if (
      b === null ||
      typeof b !== 'object' ||
      Object.keys(b).length === 0 ||
      !Object.entries(b).every(([k, v]) => ['gt', 'gte', 'lt', 'lte'].includes(k) && typeof v === 'number' && !Number.isNaN(v))
    )
      throw new QuorumError('ERR_ARG', `${path}.range must hold numeric gt / gte / lt / lte bounds`);
    if ((b.gt !== undefined && b.gte !== undefined) || (b.lt !== undefined && b.lte !== undefined))
      throw new QuorumError('ERR_ARG', `${path}.range takes one lower and one upper bound`);
    mark(t.rangeRows(f.field, b));
  } else {
    throw new QuorumError('ERR_ARG', `${path} needs eq, in or range beside its field`);
  }
  return out;
}

/**
 * Compiles a filter against a table to its allowed rows, ascending: what scoreTopK's `rows` takes. ERR_ARG for a
 * malformed filter (it names the offending part). The result may be empty (nothing matches).
 *
 * @example
 * compileFilter({ or: [{ field: 'lang', eq: 'en' }, { field: 'lang', eq: 'de' }] }, table);   // Int32Array [0, 3, 4, ...]
 */
export function compileFilter(filter: Filter, table: MetadataTable): Int32Array {
  if (!(table instanceof MetadataTable)) throw new QuorumError('ERR_ARG', 'compileFilter needs a MetadataTable');
  const m = evaluate(filter, table, 'filter');
  let n = 0;
  for (let r = 0; r < m.length; r++) n += m[r]!;
  const rows = new Int32Array(n);
  for (let r = 0, i = 0; r < m.length; r++) if (m[r]) rows[i++] = r;
  return rows;
}
