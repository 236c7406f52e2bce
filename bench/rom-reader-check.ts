// Can ROM's reader learn spans on real text? Reader-only training on covid (data/multidomain-mini), then EM / F1 on dev with the
// gold passage among 4 (bench/RESULTS.md, ROM).
//   node --import tsx bench/rom-reader-check.ts [epochs=6] [lr=1e-3]
import { RomModel } from '../lib/methods/rom/model.js';
import { RomNetwork } from '../lib/methods/rom/network.js';
import { squadScores } from '../lib/methods/rom/squad.js';
import { trainRom } from '../lib/methods/rom/train.js';
import { initFromGlove } from '../lib/train/init.js';
import { prepareTraining } from '../lib/train/prepare.js';
import { Retriever } from '../lib/train/retriever.js';
const epochs = Number(process.argv[2] ?? 6);
const lr = Number(process.argv[3] ?? 1e-3);
const d = await prepareTraining('data/multidomain-mini', { glove: true, wordVocab: true, tasks: ['covid'] });
Retriever.seed(1);
const enc = { encoder: { hiddenSize: 100, embeddingSize: 100, layers: 2, ffnSize: 400, maxPositions: 256 } };
const rom = RomModel.create({ tokenizer: d.tokenizer, network: enc });
await initFromGlove(rom.network, d.tokenizer.vocabulary, { glove: d.glove!, seed: 1 });
const side = RomNetwork.create({ ...enc, encoder: { ...enc.encoder, vocabSize: d.tokenizer.size } });
rom.retrieval = { kind: 'rom', network: side };
const evalDev = async () => {
  const qs = d.dev.filter((e) => e.answers?.length);
  const cands = qs.map((e) => [e.positives[0]!, ...e.hardNegatives.slice(0, 3)].map((id) => ({ id, score: 0 })));
  const a = await rom.read(qs.map((e) => e.query), cands, d.passages);
  let em = 0, f1 = 0, pick = 0;
  a.forEach((x, i) => { const s = squadScores(x.answer, qs[i]!.answers!); em += s.em; f1 += s.f1; pick += x.passage === qs[i]!.positives[0] ? 1 : 0; });
  return `dev EM ${(em / qs.length).toFixed(3)} F1 ${(f1 / qs.length).toFixed(3)} gold passage picked ${(pick / qs.length).toFixed(3)} (${qs.length} q)`;
};
console.log('step 0:', await evalDev());
const rec = await trainRom(rom, { passages: d.passages, train: d.train }, { retrievalEpochs: 0, jointEpochs: epochs, readerPassages: 4, readerQuestions: 8, lr, log: console.log });
console.log(await evalDev(), `${Math.round(rec.seconds)} s`);
