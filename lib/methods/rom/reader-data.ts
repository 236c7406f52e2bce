// The reader's training data: which training questions it can learn from (an answer string found in a gold passage,
// within what fits next to the question in a reader row), the negatives it reads them with (BM25's until the first
// retrieval, then the retrieval's top non-gold passages), and its batches: each question with its positive first and
// negatives drawn from its list.
import type { WordPieceTokenizer } from '../../text/tokenizer.js';
import type { PassageText, TrainingExample } from '../../train/examples.js';
import type { ReaderBatchArg } from './network.js';
import { findAnswer, readerRows, type PassagePieces } from './reader-inputs.js';

/** A training question the reader learns from: its gold passage holding an answer, and where (passage pieces). */
interface ReaderExample {
  example: number;
  positive: number;
  start: number;
  end: number;
}

interface ReaderDataOptions {
  readerLength: number;
  maxQuestion: number;
  /** Passages per question in a batch: the positive and passages - 1 negatives. */
  passages: number;
  /** Negatives kept per question (the retrieval depth they come from). */
  depth: number;
  /** Mark passage tokens that occur in the question (type 2). */
  markMatches: boolean;
}

export class ReaderData {
  readonly examples: ReaderExample[] = [];
  /** Per training question: its negatives, best first. */
  negatives: number[][];
  private readonly questionCache = new Map<number, Int32Array>();

  constructor(
    private readonly tokenizer: WordPieceTokenizer,
    private readonly passages: readonly PassageText[],
    /** A passage's pieces by its row in `passages` (RomModel.passagePieces caches them). */
    readonly pieces: (row: number) => PassagePieces,
    private readonly train: readonly TrainingExample[],
    private readonly o: ReaderDataOptions,
  ) {
    this.negatives = train.map((e) => e.hardNegatives.slice(0, o.depth));
    train.forEach((e, i) => {
      if (!e.answers?.length) return;
      const budget = o.readerLength - Math.min(this.question(i).length, o.maxQuestion, o.readerLength - 4) - 3;
      for (const p of e.positives) {
        const span = findAnswer(tokenizer, this.pieces(p), e.answers, budget);
        if (span) {
          this.examples.push({ example: i, positive: p, ...span });
          return;
        }
      }
    });
  }

  question(i: number): Int32Array {
    let q = this.questionCache.get(i);
    if (!q) {
      q = this.tokenizer.ids(this.train[i]!.query);
      this.questionCache.set(i, q);
    }
    return q;
  }

  /** Each question's retrieved top rows (best first) become its negatives, gold left out. */
  setRetrieved(top: readonly (readonly number[])[]): void {
    this.negatives = this.train.map((e, i) => {
      const gold = new Set(e.positives);
      return (top[i] ?? []).filter((r) => !gold.has(r)).slice(0, this.o.depth);
    });
  }

  /** A reader batch of `chosen` questions, negatives drawn at random from each one's list. */
  batch(chosen: readonly ReaderExample[], random: () => number, lossScale: number, normalize: boolean): ReaderBatchArg {
    const P = this.o.passages;
    const rowsPassages: PassagePieces[] = [];
    const questionOf: number[] = [];
    chosen.forEach((x, q) => {
      const pool = this.negatives[x.example]!.slice();
      const picks = [x.positive];
      while (picks.length < P && pool.length) picks.push(pool.splice(Math.floor(random() * pool.length), 1)[0]!);
      // Too few negatives (a tiny corpus): any other non-gold passages, then repeats.
      const gold = new Set(this.train[x.example]!.positives);
      for (let tries = 0; picks.length < P && tries < 100; tries++) {
        const r = Math.floor(random() * this.passages.length);
        if (!gold.has(r) && !picks.includes(r)) picks.push(r);
      }
      while (picks.length < P) picks.push(picks[picks.length - 1]!);
      for (const r of picks) {
        rowsPassages.push(this.pieces(r));
        questionOf.push(q);
      }
    });
    const rows = readerRows(
      this.tokenizer,
      chosen.map((x) => this.question(x.example)),
      questionOf,
      rowsPassages,
      {
        maxLength: this.o.readerLength,
        maxQuestion: this.o.maxQuestion,
        markMatches: this.o.markMatches,
      },
    );
    return {
      inputs: rows.inputs,
      passages: P,
      positive: new Int32Array(chosen.length),
      start: Int32Array.from(chosen.map((x, q) => rows.offset[q * P]! + x.start)),
      end: Int32Array.from(chosen.map((x, q) => rows.offset[q * P]! + x.end)),
      lossScale,
      normalize,
    };
  }
}
