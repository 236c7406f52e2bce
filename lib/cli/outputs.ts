// The file outputs of the commands (`index --out`, `search --out`, `fuse --out`, `report --out`) and how an earlier
// one is recognized: a command replaces an earlier output of its own kind and refuses any other file (issue 65).
import { checkOutputFile } from '../data/files.js';

const starts = (magic: string) => (head: Buffer) => head.subarray(0, magic.length).toString('latin1') === magic;

const kinds = {
  bm25: { what: 'a Quorum BM25 index', looksLike: starts('QBM25V01') },
  dense: { what: 'a Quorum dense index', looksLike: starts('QDNIDX01') },
  // A TREC run's first line: qid Q0 docid rank score tag.
  run: {
    what: 'a TREC run',
    looksLike: (head: Buffer) => /^\S+[ \t]+Q0[ \t]+\S+[ \t]+-?\d+[ \t]+\S+[ \t]+\S+/.test(head.toString('utf8')),
  },
  report: { what: 'an HTML report', looksLike: (head: Buffer) => /^\s*<!doctype html>/i.test(head.toString('utf8')) },
} as const;

/** ERR_IO (before any work) unless the command may write its `kind` of file at `path`: see {@link checkOutputFile}. */
export function checkCommandOutput(path: string, kind: keyof typeof kinds): void {
  checkOutputFile(path, kinds[kind].what, kinds[kind].looksLike);
}
