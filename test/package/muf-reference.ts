// The package check's reference (scripts/check-package.sh): a MUF directory's hits and confidences through the
// checkout's libtorch MufRetriever, written as JSON for serve.mjs to compare the packed package's MufServer with.
//   node --import tsx test/package/muf-reference.ts MUF_DIR OUT.json
import { writeFileSync } from 'node:fs';

import { MufRetriever } from '../../lib/methods/muf/retriever.js';

export const QUESTIONS = ['what is the incubation period of the coronavirus', 'how many people live in tokyo', 'symptoms of covid-19 in children'];
const [dir, out] = process.argv.slice(2);
const muf = await MufRetriever.load(dir!);
const results = await muf.search(QUESTIONS, 10);
writeFileSync(out!, JSON.stringify({ questions: QUESTIONS, results: results.map((r) => ({ ids: r.hits.map((h) => h.id), scores: r.hits.map((h) => h.score), confidence: r.confidence })) }));
muf.dispose();
