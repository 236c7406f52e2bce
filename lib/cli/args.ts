// Option parsers shared by the CLI's commands: a bad value becomes commander's InvalidArgumentError, which the
// CLI reports as one `quorum: ERR_ARG: ...` line.
import { InvalidArgumentError } from 'commander';

export const list = (v: string): string[] => v.split(',').map((x) => x.trim()).filter(Boolean);

export const int = (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive integer');
  return n;
};

export const count = (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a non-negative integer');
  return n;
};

export const num = (v: string): number => {
  const n = Number(v);
  if (!Number.isFinite(n)) throw new InvalidArgumentError('expected a number');
  return n;
};

export const numbers = (v: string): number[] => list(v).map(num);
