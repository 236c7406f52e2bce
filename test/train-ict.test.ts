import { describe, expect, it } from 'vitest';

import { ictTrainingExamples } from '../bench/lib/ict.js';
import { asyncCode } from './basics.js';

// Five passages of three sentences each, one topic word apiece, and a passage of one sentence (no example); row 1
// has no task (no example either).
const topics = ['apples', 'rivers', 'engines', 'violins', 'glaciers'];
const passages = [
  ...topics.map((t, i) => ({ title: t, text: `The ${t} grow here. Many ${t} sleep at night number ${i}. Old ${t} sing in winter.` })),
  { title: 'short', text: 'Only one sentence without an end' },
];
const taskOf = (r: number) => (r === 1 ? undefined : r < 3 ? 'a' : 'b');
const sources = [0, 2, 3, 4];

describe('ictTrainingExamples (ROM\'s ICT as training questions)', () => {
  it('one example per passage of 2+ sentences with a task: a sentence against the rest, appended as a new row', async () => {
    const { passages: out, examples } = await ictTrainingExamples(passages, { taskOf, keepRate: 0, seed: 3, k: 4 });
    expect(examples).toHaveLength(4);
    expect(out.slice(0, passages.length)).toEqual(passages);
    expect(out).toHaveLength(passages.length + 4);
    examples.forEach((e, j) => {
      const i = sources[j]!;
      expect(e.task).toBe(taskOf(i));
      const gold = out[e.positives[0]!]!;
      expect(e.positives).toEqual([passages.length + j]);
      // The question is one sentence of passage i; the gold row is that passage without it, same title.
      expect(passages[i]!.text).toContain(e.query);
      expect(gold.title).toBe(passages[i]!.title);
      expect(gold.text).not.toContain(e.query);
      expect(gold.text.length).toBeLessThan(passages[i]!.text.length);
      // Hard negatives are original rows, never the source passage (it holds the evidence) nor the gold row.
      expect(e.hardNegatives.length).toBeGreaterThan(0);
      expect(e.hardNegatives.length).toBeLessThanOrEqual(4);
      for (const r of e.hardNegatives) {
        expect(r).toBeLessThan(passages.length);
        expect(r).not.toBe(i);
      }
    });
    expect(passages).toHaveLength(6); // the input is not modified
  });

  it('keepRate 1 keeps each sentence in its passage: the gold row is the source, no row is added', async () => {
    const { passages: out, examples } = await ictTrainingExamples(passages, { taskOf, keepRate: 1, seed: 3 });
    expect(out).toHaveLength(passages.length);
    expect(examples.map((e) => e.positives)).toEqual(sources.map((i) => [i]));
    examples.forEach((e, j) => expect(e.hardNegatives).not.toContain(sources[j]));
  });

  it('is reproducible from its seed and refuses bad options with typed errors', async () => {
    const a = await ictTrainingExamples(passages, { taskOf, seed: 9 });
    const b = await ictTrainingExamples(passages, { taskOf, seed: 9 });
    expect(b).toEqual(a);
    expect(await asyncCode(ictTrainingExamples(passages, {} as never))).toBe('ERR_ARG');
    expect(await asyncCode(ictTrainingExamples(passages, { taskOf, keepRate: 2 }))).toBe('ERR_RANGE');
    expect(await asyncCode(ictTrainingExamples(passages, { taskOf, k: -1 }))).toBe('ERR_RANGE');
    expect(await asyncCode(ictTrainingExamples(null as never, { taskOf }))).toBe('ERR_ARG');
    expect(await asyncCode(ictTrainingExamples([...passages, null] as never, { taskOf }))).toBe('ERR_ARG');
    expect(await asyncCode(ictTrainingExamples([{ title: 'x', text: 3 }] as never, { taskOf }))).toBe('ERR_ARG');
  });
});
