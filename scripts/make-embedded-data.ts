// Regenerates data/xquad-en/ (BEIR layout) from XQuAD's English file:
//   node --import tsx scripts/make-embedded-data.ts ../shared/data/xquad/xquad.en.json
// Deterministic: ids follow the file's order.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

interface Squad {
  data: Array<{ title: string; paragraphs: Array<{ context: string; qas: Array<{ id: string; question: string; answers: Array<{ text: string }> }> }> }>;
}

const src = process.argv[2] ?? '../shared/data/xquad/xquad.en.json';
const out = join(import.meta.dirname, '..', 'data', 'xquad-en');
const squad = JSON.parse(readFileSync(src, 'utf8')) as Squad;
const corpus: string[] = [];
const queries: string[] = [];
const qrels: string[] = ['query-id\tcorpus-id\tscore'];
squad.data.forEach((article, a) => {
  article.paragraphs.forEach((p, i) => {
    const id = `xquad-${a}-${i}`;
    corpus.push(JSON.stringify({ _id: id, title: article.title.replace(/_/g, ' '), text: p.context }));
    for (const qa of p.qas) {
      const answers = [...new Set(qa.answers.map((x) => x.text))];
      queries.push(JSON.stringify({ _id: qa.id, text: qa.question, answers, task: 'xquad' }));
      qrels.push(`${qa.id}\t${id}\t1`);
    }
  });
});
mkdirSync(join(out, 'qrels'), { recursive: true });
writeFileSync(join(out, 'corpus.jsonl'), corpus.join('\n') + '\n');
writeFileSync(join(out, 'queries.jsonl'), queries.join('\n') + '\n');
writeFileSync(join(out, 'qrels', 'test.tsv'), qrels.join('\n') + '\n');
console.log(`wrote ${corpus.length} passages, ${queries.length} queries to ${out}`);
