// DPR-MUF's heads training (docs/methods/muf.md#ensemble-training), in the training layer: each expert's K heads on
// its own task's questions, with the expert's frozen question and passage vectors, and the familiarity bank of its
// own and the other tasks' questions. The retriever (lib/methods/muf/retriever.ts) searches and calibrates; this
// module only trains, so a server's imports never reach it.
import { taskIfKnown } from '../../models/model-dir.js';
import { QuorumError } from '../../errors.js';
import { checkTrainingExamples } from '../../validate.js';
import { MlpEnsemble, type EnsembleTrainOptions } from './ensemble.js';
import { FamiliarityBank, sampleTexts } from './familiarity.js';
import { MufRetriever, type MufTrainData } from './retriever.js';

/**
 * Trains each expert's heads on the training questions of its task, with the expert's frozen question and passage
 * vectors (positive first, then the hard negatives), and builds each expert's familiarity bank when other tasks'
 * questions are given. ERR_ARG when an expert's task has no question.
 *
 * @example
 * const muf = await MufRetriever.build([{ model: 'models/covid' }, { model: 'models/selqa' }], corpus);
 * await trainMufHeads(muf, trainExamples);   // examplesFromQrels + addBm25Negatives, every task's questions
 * await muf.calibrate(devQueries);
 */
export async function trainMufHeads(muf: MufRetriever, examples: MufTrainData, options: EnsembleTrainOptions = {}): Promise<void> {
  if (!(muf instanceof MufRetriever)) throw new QuorumError('ERR_ARG', 'trainMufHeads needs a MufRetriever');
  checkTrainingExamples(examples, muf.corpusIds.length, 'training examples');
  const log = muf.log;
  for (let i = 0; i < muf.experts.length; i++) {
    const e = muf.expertParts(i);
    const mine = examples.filter((x) => x.task === e.task && x.positives.length > 0);
    if (mine.length === 0) throw new QuorumError('ERR_ARG', `no training question of task '${e.task}' for expert '${e.name}'`);
    const q = await e.model.encodeQueries(
      mine.map((x) => x.query),
      { task: taskIfKnown(e.model.config.tasks, e.task) },
    );
    // Until the retriever owns them, the new heads and bank are this loop's to free on a failure.
    let heads: MlpEnsemble | undefined;
    let familiarity: FamiliarityBank | undefined;
    try {
      heads = MlpEnsemble.create({ dim: muf.dim, ...muf.headsConfig });
      log(`${e.name}: training ${heads.members} heads on ${mine.length.toLocaleString()} questions`);
      const r = await heads.train(
        {
          questions: q.data,
          passages: e.passages.data,
          positives: Int32Array.from(mine, (x) => x.positives[0]!),
          hardNegatives: mine.map((x) => x.hardNegatives),
        },
        {
          ...options,
          onEpoch: (ep) => {
            options.onEpoch?.(ep);
            if (ep.epoch === 0 || (ep.epoch + 1) % 10 === 0)
              log(`${e.name}: epoch ${ep.epoch + 1}, loss ${ep.loss.toFixed(4)}, accuracy ${(ep.accuracy * 100).toFixed(1)}%`);
          },
        },
      );
      // The familiarity bank: this task's and the other tasks' training questions, as this expert encodes them.
      const others = examples.filter((x) => x.task !== e.task).map((x) => x.query);
      if (others.length) {
        const encode = async (texts: string[]) => {
          const v = await e.model.encodeQueries(texts, { task: taskIfKnown(e.model.config.tasks, e.task) });
          const d = v.data.slice();
          v.dispose();
          return d;
        };
        familiarity = FamiliarityBank.fromVectors(
          await encode(sampleTexts(mine.map((x) => x.query))),
          await encode(sampleTexts(others)),
          muf.dim,
        );
        const [a, b] = familiarity.sizes;
        log(`${e.name}: familiarity bank of ${a.toLocaleString()} own and ${b.toLocaleString()} other questions`);
      }
      muf.setTrainedHeads(i, { heads, training: { ...r, questions: mine.length }, ...(familiarity ? { familiarity } : {}) });
    } catch (err) {
      heads?.dispose();
      familiarity?.dispose();
      throw err;
    } finally {
      q.dispose();
    }
  }
}
