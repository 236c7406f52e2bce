// The reader's rows and answers in terms of the passage's own text. A passage is tokenized word by word (BERT splits
// at whitespace before anything else, so the pieces equal those of the whole text), which keeps, for every piece,
// the whitespace word it came from: a predicted span of pieces maps back to a substring of the original passage,
// and a gold answer string maps to pieces by matching its own pieces.
import { QuorumError } from '../../errors.js';
import { type TokenBatchArg } from '../../bindings/torch_addon.js';
import { WordPieceTokenizer } from '../../text/tokenizer.js';
import { checkOptions, mustBeArray, mustBeObject, optionKeys } from '../../validate.js';

const rowKeys = optionKeys<{ maxLength?: number; maxQuestion?: number; markMatches?: boolean }>()([
  'maxLength',
  'maxQuestion',
  'markMatches',
]);

/** A passage's pieces and, for each, the character range of the whitespace word it belongs to. */
export interface PassagePieces {
  /** The passage's text. */
  text: string;
  /** Its WordPiece ids (no framing). */
  ids: Int32Array;
  /** Per piece: the start offset in `text` of its word. */
  wordStart: Int32Array;
  /** Per piece: the end offset (exclusive) in `text` of its word. */
  wordEnd: Int32Array;
}

function checkTokenizer(t: unknown): void {
  if (!(t instanceof WordPieceTokenizer)) throw new QuorumError('ERR_ARG', 'tokenizer must be a WordPieceTokenizer');
}

function checkPieces(p: unknown): void {
  mustBeObject(p, 'passage pieces');
  const x = p as PassagePieces;
  if (
    typeof x.text !== 'string' ||
    !(x.ids instanceof Int32Array) ||
    !(x.wordStart instanceof Int32Array) ||
    !(x.wordEnd instanceof Int32Array)
  )
    throw new QuorumError('ERR_ARG', 'passage pieces must come from passagePieces()');
}

/**
 * Tokenizes a passage word by word, keeping where each piece's word lies (for mapping predicted spans back to text).
 *
 * @example
 * const p = passagePieces(tokenizer, 'Hamlet was written by Shakespeare.');
 * p.text.slice(p.wordStart[0], p.wordEnd[0]);   // 'Hamlet'
 */
export function passagePieces(tokenizer: WordPieceTokenizer, text: string): PassagePieces {
  checkTokenizer(tokenizer);
  if (typeof text !== 'string') throw new QuorumError('ERR_ARG', 'passage text must be a string');
  const ids: number[] = [];
  const ws: number[] = [];
  const we: number[] = [];
  for (const m of text.matchAll(/\S+/g)) {
    const pieces = tokenizer.ids(m[0]);
    for (const id of pieces) {
      ids.push(id);
      ws.push(m.index!);
      we.push(m.index! + m[0].length);
    }
  }
  return { text, ids: Int32Array.from(ids), wordStart: Int32Array.from(ws), wordEnd: Int32Array.from(we) };
}

/** The first occurrence of `needle` in `ids` (from `from`), or -1. */
function indexOfRun(ids: Int32Array, needle: Int32Array, limit: number): number {
  if (needle.length === 0) return -1;
  outer: for (let i = 0; i + needle.length <= limit; i++) {
    for (let k = 0; k < needle.length; k++) if (ids[i + k] !== needle[k]) continue outer;
    return i;
  }
  return -1;
}

/**
 * The first gold answer found among the passage's first `limit` pieces, as an inclusive piece range.
 *
 * @example
 * findAnswer(tok, passagePieces(tok, 'Paris is the capital.'), ['the capital']) // { start: 2, end: 3 }
 */
export function findAnswer(
  tokenizer: WordPieceTokenizer,
  passage: PassagePieces,
  answers: readonly string[],
  limit?: number,
): { start: number; end: number } | undefined {
  checkTokenizer(tokenizer);
  checkPieces(passage);
  mustBeArray(answers, 'answers');
  for (const a of answers) {
    if (typeof a !== 'string') throw new QuorumError('ERR_ARG', 'answers must be strings');
    const needle = tokenizer.ids(a);
    const at = indexOfRun(passage.ids, needle, Math.min(limit ?? passage.ids.length, passage.ids.length));
    if (at >= 0) return { start: at, end: at + needle.length - 1 };
  }
  return undefined;
}

/** The original text of pieces start..end (inclusive): from the first piece's word to the last piece's word. */
export function spanText(passage: PassagePieces, start: number, end: number): string {
  checkPieces(passage);
  if (!(start >= 0 && end >= start && end < passage.ids.length))
    throw new QuorumError('ERR_RANGE', `span ${start}..${end} outside the passage's ${passage.ids.length} pieces`);
  return passage.text.slice(passage.wordStart[start]!, passage.wordEnd[end]!);
}

/** Rows of "[CLS] question [SEP] passage [SEP]" and where each row's passage pieces begin. */
export interface ReaderRows {
  /** The rows, ready for {@link RomNetwork.read} or a reader batch. */
  inputs: TokenBatchArg;
  /** Row r's passage piece k is at position offset[r] + k, for k < count[r]. */
  offset: Int32Array;
  /** Row r's passage pieces kept (the rest was truncated). */
  count: Int32Array;
}

/**
 * Builds reader rows: row i pairs question `questionOf[i]` with `passages[i]`, the question cut to `maxQuestion`
 * pieces and the passage to what fits in `maxLength`. With `markMatches`, a passage piece that also occurs in the
 * question gets type 2 instead of 1 (DrQA's exact-match feature: a model read from scratch finds the question's
 * words in the passage at once instead of learning to).
 */
export function readerRows(
  tokenizer: WordPieceTokenizer,
  questions: readonly Int32Array[],
  questionOf: readonly number[],
  passages: readonly PassagePieces[],
  options: { maxLength?: number; maxQuestion?: number; markMatches?: boolean } = {},
): ReaderRows {
  checkTokenizer(tokenizer);
  mustBeArray(questions, 'questions');
  mustBeArray(questionOf, 'questionOf');
  mustBeArray(passages, 'passages');
  passages.forEach(checkPieces);
  checkOptions(options, rowKeys, 'readerRows options');
  const maxLength = options.maxLength ?? 256;
  const maxQuestion = options.maxQuestion ?? 32;
  if (!Number.isInteger(maxLength) || maxLength < 8) throw new QuorumError('ERR_RANGE', 'maxLength must be an integer >= 8');
  if (questionOf.length !== passages.length)
    throw new QuorumError('ERR_SHAPE', `${questionOf.length} question indices for ${passages.length} passages`);
  const rows = passages.length;
  const lengths = new Int32Array(rows);
  const offset = new Int32Array(rows);
  const count = new Int32Array(rows);
  for (let r = 0; r < rows; r++) {
    const q = questions[questionOf[r]!];
    if (!q) throw new QuorumError('ERR_RANGE', `question ${questionOf[r]} of row ${r} does not exist`);
    if (!(q instanceof Int32Array)) throw new QuorumError('ERR_ARG', 'questions must be Int32Arrays of token ids (tokenizer.ids)');
    const ql = Math.min(q.length, maxQuestion, maxLength - 4);
    offset[r] = ql + 2;
    count[r] = Math.max(0, Math.min(passages[r]!.ids.length, maxLength - ql - 3));
    lengths[r] = offset[r]! + count[r]! + 1;
  }
  const seqLen = Math.max(1, ...lengths);
  const ids = new Int32Array(rows * seqLen).fill(tokenizer.padId);
  const typeIds = new Int32Array(rows * seqLen);
  for (let r = 0; r < rows; r++) {
    const q = questions[questionOf[r]!]!;
    const base = r * seqLen;
    ids[base] = tokenizer.clsId;
    ids.set(q.subarray(0, offset[r]! - 2), base + 1);
    ids[base + offset[r]! - 1] = tokenizer.sepId;
    ids.set(passages[r]!.ids.subarray(0, count[r]!), base + offset[r]!);
    ids[base + lengths[r]! - 1] = tokenizer.sepId;
    typeIds.fill(1, base + offset[r]!, base + lengths[r]!);
    if (options.markMatches) {
      const inQuestion = new Set(q.subarray(0, offset[r]! - 2));
      for (let k = 0; k < count[r]!; k++) if (inQuestion.has(ids[base + offset[r]! + k]!)) typeIds[base + offset[r]! + k] = 2;
    }
  }
  return { inputs: { ids, typeIds, lengths, rows, seqLen }, offset, count };
}
