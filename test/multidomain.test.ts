// The multi-domain benchmark builder on a tiny fixture in the layout of ../shared/data (tests never read it).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { buildMultiDomain, loadBeir, writeMultiDomain } from '../lib/entries/data.js';
import { code } from './helpers.js';

const root = mkdtempSync(join(tmpdir(), 'quorum-md-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function put(path: string, value: unknown) {
  mkdirSync(join(root, path, '..'), { recursive: true });
  writeFileSync(join(root, path), typeof value === 'string' ? value : JSON.stringify(value));
}

const squad = (prefix: string, articles: number, paragraphs: number) => ({
  data: Array.from({ length: articles }, (_, a) => ({
    title: `${prefix}_Article_${a}`,
    paragraphs: Array.from({ length: paragraphs }, (_, p) => ({
      context: `${prefix} article ${a} paragraph ${p} text`,
      qas: [{ id: `${prefix}${a}${p}`, question: `question about ${prefix} ${a} ${p}?`, answers: [{ text: `paragraph ${p}`, answer_start: 0 }] }],
    })),
  })),
});

// A 250-word paper: answers in window 0 (word 3) and window 2 (word 210).
const words = Array.from({ length: 250 }, (_, i) => `w${i}`);
const paper = words.join(' ');
put('squadshifts/new_wiki_v1.0.json', squad('wiki', 12, 2));
put('squadshifts/reddit_v1.0.json', squad('reddit', 1, 10));
put('xquad/xquad.en.json', squad('xquad', 2, 2));
put('covid-qa/200423_covidQA.json', {
  data: [
    {
      paragraphs: [
        {
          context: paper,
          qas: [
            { id: 1, question: 'early?', answers: [{ text: 'w3', answer_start: paper.indexOf('w3 ') }], is_impossible: false },
            { id: 2, question: 'late?', answers: [{ text: 'w210', answer_start: paper.indexOf('w210') }], is_impossible: false },
          ],
        },
      ],
    },
  ],
});
put(
  'climate-fever/climate-fever.jsonl',
  [
    { claim_id: '0', claim: 'one article', evidences: [{ evidence_id: 'A:1', evidence_label: 'SUPPORTS', article: 'A', evidence: 'a1' }, { evidence_id: 'A:2', evidence_label: 'REFUTES', article: 'A', evidence: 'a2' }] },
    { claim_id: '1', claim: 'two articles', evidences: [{ evidence_id: 'A:1', evidence_label: 'SUPPORTS', article: 'A', evidence: 'a1' }, { evidence_id: 'B:1', evidence_label: 'SUPPORTS', article: 'B', evidence: 'b1' }] },
    { claim_id: '2', claim: 'no gold', evidences: [{ evidence_id: 'C:1', evidence_label: 'NOT_ENOUGH_INFO', article: 'C', evidence: 'c1' }] },
  ]
    .map((c) => JSON.stringify(c))
    .join('\n'),
);
put('selqa/selqa-ass-dev.json', [
  { article: 'Israel', section: 'Museums', question: 'q1', candidates: ['s1', 's2'], answers: [1] },
  { article: 'Israel', section: 'Museums', question: 'q2', candidates: ['s1', 's2'], answers: [0] },
  { article: 'Israel', section: 'Climate', question: 'q3', candidates: ['s3'], answers: [0] },
]);

describe('buildMultiDomain', () => {
  const b = buildMultiDomain(root);

  it('is deterministic and tags every query with its task', () => {
    expect(buildMultiDomain(root)).toEqual(b);
    expect(new Set(b.queries.map((q) => q.task))).toEqual(new Set(['wiki', 'xquad', 'reddit', 'covid', 'climate', 'selqa']));
    expect(new Set(b.corpus.map((p) => p.id)).size).toBe(b.corpus.length);
  });

  it('splits by document: all queries of a document share one split; XQuAD is test only', () => {
    const splitOfDoc = new Map<string, string>();
    for (const split of ['train', 'dev', 'test'] as const)
      for (const [qid, rel] of b.qrels[split])
        for (const pid of rel.keys()) {
          const doc = pid.split('-').slice(0, 2).join('-'); // <task>-<doc>
          expect(splitOfDoc.get(doc) ?? split, `${qid} -> ${pid}`).toBe(split);
          splitOfDoc.set(doc, split);
          if (doc.startsWith('xquad')) expect(split).toBe('test');
        }
    const wikiSplits = new Set([...splitOfDoc].filter(([d]) => d.startsWith('wiki')).map(([, s]) => s));
    expect(wikiSplits.size).toBeGreaterThan(1); // 12 articles spread over the splits
    const total = ['train', 'dev', 'test'].reduce((n, s) => n + b.qrels[s as 'train'].size, 0);
    expect(total).toBe(b.queries.length);
  });

  it('cuts COVID-QA papers into windows and points each question at the window holding its answer', () => {
    const windows = b.corpus.filter((p) => p.id.startsWith('covid-'));
    expect(windows.map((w) => w.text.split(' ').length)).toEqual([100, 100, 50]);
    const goldOf = (qid: string) => [...(['train', 'dev', 'test'] as const).map((s) => b.qrels[s].get(qid)).find(Boolean)!.keys()];
    expect(goldOf('covid-1')).toEqual(['covid-0-0']);
    expect(goldOf('covid-2')).toEqual(['covid-0-2']);
    expect(b.corpus.find((p) => p.id === 'covid-0-2')!.text).toContain('w210');
  });

  it('CLIMATE-FEVER keeps claims whose evidence lies in one article; SelQA sections are passages', () => {
    expect(b.queries.filter((q) => q.task === 'climate').map((q) => q.id)).toEqual(['climate-0']);
    expect(b.metadata.droppedClimateClaims).toBe(1);
    expect(b.corpus.filter((p) => p.id.startsWith('selqa-')).map((p) => p.text)).toEqual(['s1 s2', 's3']);
    expect(b.queries.find((q) => q.id === 'selqa-0')!.answers).toEqual(['s2']);
  });

  it('writes the BEIR layout with three qrels splits and metadata', () => {
    const dir = join(root, 'out');
    writeMultiDomain(dir, b);
    for (const split of ['train', 'dev', 'test'] as const) {
      const ds = loadBeir(dir, split);
      expect(ds.qrels).toEqual(b.qrels[split]);
      expect(ds.queries.find((q) => q.id === 'climate-0')!.task).toBe('climate');
    }
  });

  it('subsets with maxDocs and task lists; rejects bad options', () => {
    const small = buildMultiDomain(root, { tasks: ['wiki'], maxDocs: { wiki: 3 } });
    expect(new Set(small.corpus.map((p) => p.id.split('-')[1])).size).toBe(3);
    expect(code(() => buildMultiDomain(root, { tasks: ['nq' as never] }))).toBe('ERR_ARG');
    expect(code(() => buildMultiDomain(root, { fractions: [0.5, 0.5, 0.5] }))).toBe('ERR_RANGE');
    expect(code(() => buildMultiDomain(join(root, 'nowhere'), { tasks: ['wiki'] }))).toBe('ERR_IO');
  });
});

describe('the embedded multi-domain subset (data/multidomain-mini)', () => {
  it('loads in every split and matches its metadata', async () => {
    const { readFileSync } = await import('node:fs');
    const { packageRoot } = await import('../lib/native.js');
    const dir = join(packageRoot, 'data', 'multidomain-mini');
    const meta = JSON.parse(readFileSync(join(dir, 'metadata.json'), 'utf8')) as { tasks: Record<string, Record<string, number>> };
    for (const split of ['train', 'dev', 'test'] as const) {
      const ds = loadBeir(dir, split);
      const byTask = new Map<string, number>();
      const task = new Map(ds.queries.map((q) => [q.id, q.task]));
      for (const qid of ds.qrels.keys()) byTask.set(task.get(qid)!, (byTask.get(task.get(qid)!) ?? 0) + 1);
      for (const [t, c] of Object.entries(meta.tasks)) expect(byTask.get(t) ?? 0, `${split} ${t}`).toBe(c[split]);
    }
  });
});
