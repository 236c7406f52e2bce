// The `quorum` CLI end to end (through tsx, from the sources): eval on the embedded dataset, fuse, and the
// non-zero exits with one-line messages on bad input.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { packageRoot } from '../lib/native.js';

const out = mkdtempSync(join(tmpdir(), 'quorum-cli-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

function quorum(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(packageRoot, 'lib', 'cli', 'main.ts'), ...args], {
    cwd: packageRoot,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const data = join(packageRoot, 'data', 'xquad-en');

describe('quorum CLI', () => {
  it('eval runs BM25 and the dense stand-in on a BEIR-layout dataset and writes runs and metrics.json', () => {
    const r = quorum('eval', '--data', data, '--methods', 'bm25,dense', '--metrics', 'ndcg@10,recall@20', '--k', '50', '--out', out);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/bm25\s+0\.9\d\d\s+0\.9\d\d/);
    const metrics = JSON.parse(readFileSync(join(out, 'metrics.json'), 'utf8')) as { queries: number; metrics: Record<string, Record<string, number>> };
    expect(metrics.queries).toBe(1190);
    expect(metrics.metrics.bm25!['ndcg@10']).toBeGreaterThan(metrics.metrics.dense!['ndcg@10']!);
    const lines = readFileSync(join(out, 'bm25.trec'), 'utf8').trim().split('\n');
    // BM25 returns only passages some query term reaches: at most 50 per query, ranks from 1.
    const perQuery = new Map<string, number>();
    for (const l of lines) {
      const [q, q0, , rank, , tag] = l.split(' ');
      expect([q0, tag]).toEqual(['Q0', 'bm25']);
      perQuery.set(q!, (perQuery.get(q!) ?? 0) + 1);
      expect(Number(rank)).toBe(perQuery.get(q!));
    }
    expect(perQuery.size).toBe(1190);
    expect(Math.max(...perQuery.values())).toBe(50);
  });

  it('fuse reads run files, writes the fused run and scores it against qrels', () => {
    const qrels = readFileSync(join(data, 'qrels', 'test.tsv'), 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.split('\t'))
      .map(([q, d, s]) => `${q} 0 ${d} ${s}`)
      .join('\n');
    writeFileSync(join(out, 'qrels.txt'), qrels + '\n');
    const r = quorum('fuse', join(out, 'bm25.trec'), join(out, 'dense.trec'), '--method', 'rrf', '--out', join(out, 'rrf.trec'), '--qrels', join(out, 'qrels.txt'));
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('fused (rrf)');
    expect(existsSync(join(out, 'rrf.trec'))).toBe(true);
  });

  it("eval --by-task reports each task of the embedded multi-domain benchmark", () => {
    const r = quorum('eval', '--data', join(packageRoot, 'data', 'multidomain-mini'), '--methods', 'bm25', '--metrics', 'ndcg@10', '--k', '20', '--by-task');
    expect(r.status).toBe(0);
    for (const task of ['covid', 'selqa', 'xquad']) expect(r.stdout).toMatch(new RegExp(`bm25\\s+${task}\\s+\\d+\\s+0\\.\\d{3}`));
  });

  it('exits 1 with a one-line message on bad input', () => {
    const cases: Array<[string[], RegExp]> = [
      [['eval', '--data', join(out, 'none'), '--methods', 'bm25'], /ERR_IO: cannot read/],
      [['eval', '--data', data, '--methods', 'bm25', '--metrics', 'foo@3'], /ERR_ARG: unknown metric 'foo@3'/],
      [['eval', '--data', data, '--methods', 'splade'], /ERR_ARG: unknown method 'splade'/],
      [['eval', '--data', data, '--k', '0'], /argument '0' is invalid/],
      [['fuse', join(out, 'bm25.trec'), '--method', 'nope', '--out', join(out, 'x.trec')], /ERR_ARG: unknown fusion method 'nope'/],
      [['fuse', join(out, 'missing.trec'), '--method', 'rrf', '--out', join(out, 'x.trec')], /ERR_IO/],
      [['bogus'], /unknown command 'bogus'/],
      [['data', 'build', '--data', join(out, 'none'), '--out', join(out, 'md'), '--tasks', 'xquad'], /ERR_IO/],
      [['data', 'build', '--data', out, '--out', join(out, 'md'), '--tasks', 'nq'], /ERR_ARG: unknown task 'nq'/],
    ];
    for (const [args, message] of cases) {
      const r = quorum(...args);
      expect(r.status, args.join(' ')).toBe(1);
      expect(r.stderr, args.join(' ')).toMatch(message);
    }
  });

  it('--help describes every command', () => {
    const r = quorum('--help');
    expect(r.status).toBe(0);
    for (const c of ['demo', 'eval', 'fuse']) expect(r.stdout).toContain(c);
    expect(quorum('eval', '--help').stdout).toContain('--metrics');
  });
});
