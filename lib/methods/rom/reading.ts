// ROM's reading step (docs/methods/rom.md#reading), written once for RomModel (libtorch) and RomServer (ONNX
// Runtime): each question's candidate passages become reader rows, the reader's forward comes in through RomReading,
// and the best span of the most relevant passage is the answer. Nothing here loads libtorch.
import { QuorumError } from '../../errors.js';
import { type TokenBatchArg } from '../../bindings/torch_addon.js';
import type { WordPieceTokenizer } from '../../text/tokenizer.js';
import { checkHits, checkOptions, mustBeArray, optionKeys } from '../../validate.js';
import type { ReaderLogits, RomTextSettings } from './format.js';
import { readerRows, spanText, type PassagePieces } from './reader-inputs.js';
import { bestSpans } from './spans.js';

const readKeys = optionKeys<{ batchQuestions?: number }>()(['batchQuestions']);

/** One answer of {@link RomModel.answer}. */
export interface RomAnswer {
  /** The span as it stands in the passage's text ('' when no passage had a span). */
  answer: string;
  /** Corpus row of the passage the answer comes from (-1 when none). */
  passage: number;
  /** The reader's relevance logit of that passage. */
  passageScore: number;
  /** The span's start + end logit. */
  spanScore: number;
  /** The passage's retrieval score for the question. */
  retrievalScore: number;
}

/** What {@link readCandidates} reads with: the tokenizer and lengths, a passage's pieces, the reader's forward. */
interface RomReading {
  tokenizer: WordPieceTokenizer;
  text: RomTextSettings;
  /** Reader rows mark passage tokens the question contains (type 2). */
  marksMatches: boolean;
  /** A corpus row's pieces. */
  pieces(row: number): PassagePieces;
  /** The reader's logits for a batch of reader rows (RomNetwork.read, or the reader graph in ONNX Runtime). */
  read(inputs: TokenBatchArg): Promise<ReaderLogits>;
}

/**
 * Reads each question's candidate passages and answers with the best span (at most maxAnswerLength pieces) of the
 * passage whose relevance logit is highest (RomModel.read and RomServer).
 */
export async function readCandidates(
  ctx: RomReading,
  questions: readonly string[],
  candidates: readonly (readonly { id: number; score: number }[])[],
  options: { batchQuestions?: number } = {},
): Promise<RomAnswer[]> {
  mustBeArray(questions, 'questions');
  mustBeArray(candidates, 'candidates');
  checkOptions(options, readKeys, 'read options');
  if (candidates.length !== questions.length)
    throw new QuorumError('ERR_SHAPE', `${candidates.length} candidate lists for ${questions.length} questions`);
  // Each candidate is a corpus row: '3' or 2.5 would read another passage, or none (issue 65).
  candidates.forEach((list, q) => {
    checkHits(list, `candidates[${q}]`);
    list.forEach((h, i) => {
      if (typeof h.id !== 'number' || !Number.isInteger(h.id) || h.id < 0)
        throw new QuorumError('ERR_ARG', `candidates[${q}][${i}].id must be a corpus row number, got ${JSON.stringify(h.id)}`);
    });
  });
  const per = options.batchQuestions ?? 8;
  if (!Number.isInteger(per) || per < 1) throw new QuorumError('ERR_RANGE', 'batchQuestions must be an integer >= 1');
  const out: RomAnswer[] = [];
  // Several questions per native call: one [rows, T] batch of every (question, passage) row.
  for (let s = 0; s < questions.length; s += per) {
    const qs = Array.from({ length: Math.min(per, questions.length - s) }, (_, i) => s + i);
    const pieces: PassagePieces[] = [];
    const questionOf: number[] = [];
    const first: number[] = [];
    qs.forEach((q, i) => {
      first.push(pieces.length);
      for (const h of candidates[q]!) {
        pieces.push(ctx.pieces(h.id));
        questionOf.push(i);
      }
    });
    const rows = pieces.length
      ? readerRows(
          ctx.tokenizer,
          qs.map((q) => ctx.tokenizer.ids(questions[q]!)),
          questionOf,
          pieces,
          {
            maxLength: ctx.text.readerLength,
            maxQuestion: ctx.text.maxQueryLength,
            markMatches: ctx.marksMatches,
          },
        )
      : undefined;
    const logits = rows ? await ctx.read(rows.inputs) : undefined;
    qs.forEach((q, i) => {
      const list = candidates[q]!;
      if (!list.length || !rows || !logits) {
        out.push({ answer: '', passage: -1, passageScore: -Infinity, spanScore: -Infinity, retrievalScore: -Infinity });
        return;
      }
      const T = rows.inputs.seqLen;
      let best = first[i]!;
      for (let r = first[i]! + 1; r < first[i]! + list.length; r++) if (logits.relevance[r]! > logits.relevance[best]!) best = r;
      const span = bestSpans(logits.start, logits.end, {
        offset: best * T + rows.offset[best]!,
        length: rows.count[best]!,
        maxLength: ctx.text.maxAnswerLength,
      })[0];
      const hit = list[best - first[i]!]!;
      out.push({
        answer: span ? spanText(pieces[best]!, span.start, span.end) : '',
        passage: hit.id,
        passageScore: logits.relevance[best]!,
        spanScore: span ? span.score : -Infinity,
        retrievalScore: hit.score,
      });
    });
  }
  return out;
}
