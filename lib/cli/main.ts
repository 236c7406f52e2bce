#!/usr/bin/env node
// The `quorum` command line.
import { QuorumError } from '../errors.js';
import { demo } from './demo.js';

const usage = `usage: quorum <command> [options]

commands:
  demo [--data DIR] [--dim N] [--no-bench]   retrieval over the embedded dataset (or a BEIR-layout DIR), then a speed check
  help                                       this text`;

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const v = args[i + 1];
  if (v === undefined || v.startsWith('--')) throw new QuorumError('ERR_ARG', `${name} needs a value`);
  return v;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  switch (command) {
    case 'demo': {
      const dim = option(args, '--dim');
      const data = option(args, '--data');
      await demo({ ...(data ? { data } : {}), ...(dim ? { dim: Number(dim) } : {}), bench: !args.includes('--no-bench') });
      return 0;
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      console.log(usage);
      return 0;
    default:
      console.error(`quorum: unknown command '${command}'\n\n${usage}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(`quorum: ${e instanceof QuorumError ? `${e.code}: ${e.message}` : e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  },
);
