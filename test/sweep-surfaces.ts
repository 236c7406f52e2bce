// The surfaces test/sweep-inputs.ts puts bad values into: per public function, option, CLI option and saved file, a
// valid call with one slot. `accepts` lists the kinds of value the slot rightly takes (an optional option left out, a
// negative score); `values` replaces the generated kinds with named inputs (damaged files, odd paths).
import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { packageRoot } from '../lib/native.js';
import type { Kind } from './sweep-inputs.js';

export type Outcome = 'typed' | 'accepted' | 'untyped' | 'silent' | 'crash' | 'hang';

export interface Field {
  name: string;
  call: (bad: unknown) => unknown;
  /** Kinds of value (or names of `values`) the slot rightly takes. */
  accepts?: readonly (Kind | string)[];
  values?: Record<string, unknown>;
}
export interface Surface {
  name: string;
  fields: Field[];
}

const mini = join(packageRoot, 'data', 'multidomain-mini');
const shipped = join(packageRoot, 'data', 'models', 'default');
const OPTIONAL: readonly Kind[] = ['undefined'];

/** What the surfaces read and change: a trained MUF directory, a Hugging Face export, built once per sweep. */
export async function prepare(scratch: string): Promise<void> {
  const { mufTrainCommand } = await import('../lib/methods/muf/cli.js');
  const muf = await mufTrainCommand(
    { data: mini, experts: ['default:covid', 'default:selqa'], out: join(scratch, 'muf'), members: 2, hidden: 16, layers: 0, epochs: 1, batch: 64, lr: 1e-3, hardNegatives: 1, topL: 20, hitTopK: 1, seed: 1 },
    () => undefined,
  );
  muf?.dispose();
  // A small BERT as a Hugging Face directory (what users bring): config.json, modules.json, weights, tokenizer.
  const { Retriever, WordPieceTokenizer } = await import('../lib/index.js');
  const { exportHf } = await import('../lib/models/export.js');
  const vocab = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'hello', 'world', 'what', 'is'];
  const bert = Retriever.create({ preset: 'siamese', encoder: { vocabSize: vocab.length, hiddenSize: 8, embeddingSize: 8, layers: 1, heads: 2, ffnSize: 16, maxPositions: 32 } });
  exportHf(bert, new WordPieceTokenizer(vocab), { maxQueryLength: 16, maxPassageLength: 16, taskMarkers: false }, join(scratch, 'hf'));
  bert.dispose();
  const { Tensor } = await import('../lib/tensor.js');
  await Tensor.from(new Float32Array(64 * 8).map((_, i) => Math.sin(i)), [64, 8]).save(join(scratch, 'corpus.qtns'));
  const { quantize } = await import('../lib/quantized.js');
  await (await quantize(Tensor.from(new Float32Array(64 * 8).map((_, i) => Math.sin(i)), [64, 8]), 'int8')).save(join(scratch, 'q8'));
  writeFileSync(join(scratch, 'notes.txt'), 'precious data\n');
  spawnSync('mkfifo', [join(scratch, 'fifo')]);
  symlinkSync('/dev/zero', join(scratch, 'zero'));
}

/** A copy of `from` under scratch with `file` replaced by `text` (or changed by `edit`), for one case. */
let copies = 0;
function damaged(scratch: string, from: string, file: string, change: string | ((old: string) => string)): string {
  const dir = join(scratch, `copy-${process.pid}-${copies++}`);
  rmSync(dir, { recursive: true, force: true });
  cpSync(from, dir, { recursive: true });
  const path = join(dir, file);
  writeFileSync(path, typeof change === 'string' ? change : change(readFileSync(path, 'utf8')));
  return dir;
}

/** A value built once per worker, on first use. */
function once<T>(make: () => Promise<T> | T): () => Promise<T> {
  let p: Promise<T> | undefined;
  return () => (p ??= Promise.resolve(make()));
}

export function surfaces(scratch: string): Surface[] {
  const core = once(() => import('../lib/index.js'));
  const q = once(async () => (await core()).Tensor.from(new Float32Array(8).fill(0.5), [1, 8]));
  const corpus = once(async () => (await core()).Tensor.map(join(scratch, 'corpus.qtns')));
  const dense = once(async () => {
    const { DenseIndex } = await core();
    const ix = DenseIndex.create({ dim: 8 });
    await ix.add(new Float32Array(64 * 8).map((_, i) => Math.cos(i)), Array.from({ length: 64 }, (_, i) => i));
    return ix;
  });
  const bm25 = once(async () => (await core()).Bm25Index.build([{ id: 'a', text: 'hello world' }, { id: 'b', text: 'other words' }]));
  const runs = [new Map([['q', [{ id: 'a', score: 2 }, { id: 'b', score: 1 }]]]), new Map([['q', [{ id: 'b', score: 3 }]]])];
  const mufServer = once(async () => (await import('../lib/methods/muf/serve.js')).MufServer.load(join(scratch, 'muf')));
  const encoder = once(async () => (await core()).ServingEncoder.load(shipped));
  const retriever = once(async () => (await core()).Retriever.load(shipped));
  const mufDir = join(scratch, 'muf');
  const hf = join(scratch, 'hf');
  const kernels = once(() => import('../lib/entries/kernels.js'));
  const bits = once(async () => (await kernels()).quantize(await corpus(), 'binary'));
  const q8Dir = join(scratch, 'q8');

  const withKey = (o: object, key: string, v: unknown) => ({ ...o, [key]: v });
  const option = (name: string, call: (o: object) => unknown, base: object, key: string, accepts: readonly Kind[] = OPTIONAL): Field => ({
    name,
    call: (v) => call(withKey(base, key, v)),
    accepts,
  });

  return [
    {
      name: 'scoreTopK',
      fields: [
        { name: 'k', call: async (v) => (await core()).scoreTopK(await q(), await corpus(), v as number), accepts: ['number'] },
        { name: 'queries', call: async (v) => (await core()).scoreTopK(v as never, await corpus(), 3) },
        { name: 'queries values', call: async (v) => (await core()).scoreTopK((await core()).Tensor.from(new Float32Array(8).fill(v as number), [1, 8]), await corpus(), 3), accepts: ['number', 'negative', 'huge', 'fractional', 'null', 'empty', 'string', 'object', 'array', 'undefined'] },
      ],
    },
    {
      name: 'DenseIndex',
      fields: [
        option('create dim', async (o) => (await core()).DenseIndex.create(o as never), {}, 'dim', ['number']),
        option('create factory', async (o) => (await core()).DenseIndex.create(o as never), { dim: 8 }, 'factory', ['undefined']),
        option('create quantization', async (o) => (await core()).DenseIndex.create(o as never), { dim: 8 }, 'quantization', ['undefined']),
        { name: 'search k', call: async (v) => (await dense()).search(new Float32Array(8), v as number), accepts: ['number'] },
        option('search options efSearch', async (o) => (await dense()).search(new Float32Array(8), 3, o), {}, 'efSearch', ['undefined', 'number', 'huge']),
        option('search options nprobe', async (o) => (await dense()).search(new Float32Array(8), 3, o), {}, 'nprobe', ['undefined', 'number', 'huge']),
        option('map verify', async (o) => (await core()).DenseIndex.map(join(scratch, 'nowhere'), o), {}, 'verify'),
        {
          name: 'path',
          call: async (v) => (await core()).DenseIndex.load(v as string),
          values: { fifo: join(scratch, 'fifo'), 'link to /dev/zero': join(scratch, 'zero'), 'NUL byte': `${scratch}/a\0b`, empty: '', directory: scratch, 'a text file': join(scratch, 'notes.txt') },
        },
        {
          name: 'save path',
          call: async (v) => (await dense()).save(v as string),
          values: { fifo: join(scratch, 'fifo'), 'NUL byte': `${scratch}/a\0b`, empty: '', directory: scratch, '/dev/null': '/dev/null' },
        },
      ],
    },
    {
      name: 'Bm25Index',
      fields: [
        option('build k1', async (o) => (await core()).Bm25Index.build([{ id: 'a', text: 'x' }], o), {}, 'k1', ['undefined', 'number', 'fractional', 'huge']),
        option('build b', async (o) => (await core()).Bm25Index.build([{ id: 'a', text: 'x' }], o), {}, 'b', ['undefined']),
        { name: 'build passage', call: async (v) => (await core()).Bm25Index.build([v as never]) },
        { name: 'build passage id', call: async (v) => (await core()).Bm25Index.build([{ id: v as string, text: 'x' }]), accepts: ['string'] },
        { name: 'search k', call: async (v) => (await bm25()).search(['hello'], v as number), accepts: ['number'] },
        { name: 'search query', call: async (v) => (await bm25()).search([v as string], 2), accepts: ['string', 'empty'] },
      ],
    },
    {
      name: 'fuse',
      fields: [
        option('rrf k', async (o) => (await core()).fuse(runs, 'rrf', o), {}, 'k', ['undefined', 'number', 'huge']),
        option('rrf rrfK', async (o) => (await core()).fuse(runs, 'rrf', o), {}, 'rrfK', ['undefined', 'number', 'huge', 'fractional']),
        { name: 'method', call: async (v) => (await core()).fuse(runs, v as never) },
        { name: 'run', call: async (v) => (await core()).fuse([v as never], 'rrf') },
      ],
    },
    {
      name: 'hybridFuse',
      fields: [
        option('alpha', async (o) => (await core()).hybridFuse([{ id: 'a', score: 1 }], [{ id: 'b', score: 2 }], o), {}, 'alpha', ['undefined', 'fractional', 'number', 'huge']),
        option('k', async (o) => (await core()).hybridFuse([{ id: 'a', score: 1 }], [{ id: 'b', score: 2 }], o), {}, 'k', ['undefined', 'number', 'huge']),
      ],
    },
    {
      name: 'RequestBatcher',
      fields: ['maxBatch', 'maxWaitMs', 'maxQueue', 'timeoutMs'].map((key) =>
        option(key, async (o) => new (await core()).RequestBatcher(async (xs: unknown[]) => xs, o as never), {}, key, ['undefined', 'number', ...(key.endsWith('Ms') ? (['fractional'] as const) : (['huge'] as const))]),
      ),
    },
    {
      name: 'compileFilter',
      fields: [
        {
          name: 'filter',
          call: async (v) => {
            const { MetadataTable, compileFilter } = await core();
            return compileFilter(v as never, MetadataTable.from([{ lang: 'en' }, { lang: 'de' }]));
          },
          values: {
            'nested 10000 deep': Array.from({ length: 10_000 }).reduce<object>((f) => ({ not: f }), { field: 'lang', eq: 'en' }),
            'in: a string': { field: 'lang', in: 'en' },
            'range: empty': { field: 'lang', range: {} },
            null: null,
          },
        },
      ],
    },
    {
      name: 'Live',
      fields: [
        {
          name: 'swap',
          call: async (v) => {
            const { Live } = await core();
            const value = { dispose() {} };
            const live = new Live(value);
            await live.swap(v === 'same' ? value : (v as never));
          },
          values: { 'the value it serves': 'same' },
        },
      ],
    },
    {
      name: 'TermIdf.fit',
      fields: [{ name: 'passages', call: async (v) => (await import('../lib/entries/train.js')).TermIdf.fit(v as never), accepts: ['empty'] }],
    },
    {
      name: 'MlpEnsemble',
      fields: [
        {
          name: 'score L',
          call: async (v) => {
            const { MlpEnsemble } = await import('../lib/entries/methods/muf.js');
            const e = MlpEnsemble.create({ dim: 8, members: 2, hidden: 8, layers: 0 });
            return e.score(new Float32Array(8), new Float32Array(64), new Int32Array(2), v as number);
          },
        },
        {
          name: 'train positives',
          call: async (v) => {
            const { MlpEnsemble } = await import('../lib/entries/methods/muf.js');
            const e = MlpEnsemble.create({ dim: 8, members: 2, hidden: 8, layers: 0 });
            return e.train({ questions: new Float32Array(32).fill(0.1), passages: new Float32Array(32).fill(0.2), positives: Int32Array.of(0, 1, 2, 3), hardNegatives: [[v as number], [0], [1], [2]] }, { epochs: 1, batchSize: 4 });
          },
          accepts: [],
        },
        {
          name: 'train questions values',
          call: async (v) => {
            const { MlpEnsemble } = await import('../lib/entries/methods/muf.js');
            const e = MlpEnsemble.create({ dim: 8, members: 2, hidden: 8, layers: 0 });
            return e.train({ questions: new Float32Array(32).fill(v as number), passages: new Float32Array(32).fill(0.2), positives: Int32Array.of(0, 1, 2, 3) }, { epochs: 1, batchSize: 4 });
          },
          accepts: ['number', 'negative', 'huge', 'fractional', 'null', 'empty', 'string', 'object', 'array', 'undefined'],
        },
      ],
    },
    {
      name: 'Retriever',
      fields: [
        option('create encoder.hiddenSize', async (o) => (await core()).Retriever.create({ preset: 'siamese', encoder: { vocabSize: 16, layers: 0, ...o } }), {}, 'hiddenSize', ['undefined', 'number']),
        option('create encoder.layers', async (o) => (await core()).Retriever.create({ preset: 'siamese', encoder: { vocabSize: 16, hiddenSize: 8, embeddingSize: 8, ...o } }), {}, 'layers', ['undefined', 'number']),
        { name: 'seed', call: async (v) => (await core()).Retriever.seed(v as number), accepts: ['number', 'huge'] },
        option('encodeQueries task', async (o) => (await retriever()).encodeQueries(['hello'], o), {}, 'task', ['undefined']),
        { name: 'encodePassages passage', call: async (v) => (await retriever()).encodePassages([v as never]), accepts: ['string', 'empty'] },
        option('encodePassages onProgress', async (o) => (await retriever()).encodePassages([{ title: '', text: 'x' }], o), {}, 'onProgress'),
      ],
    },
    {
      name: 'CameModel.create',
      fields: [
        option('experts', async (o) => (await import('../lib/entries/methods/came.js')).CameModel.create(o as never), { encoder: { vocabSize: 16, hiddenSize: 8, layers: 0 } }, 'experts'),
        option('localDim', async (o) => (await import('../lib/entries/methods/came.js')).CameModel.create(o as never), { encoder: { vocabSize: 16, hiddenSize: 8, layers: 0 } }, 'localDim', ['undefined', 'number']),
        option('expertLayers', async (o) => (await import('../lib/entries/methods/came.js')).CameModel.create(o as never), { encoder: { vocabSize: 16, hiddenSize: 8, layers: 0 } }, 'expertLayers', ['undefined', 'number']),
      ],
    },
    {
      name: 'RomNetwork.create',
      fields: [
        option('headDim', async (o) => (await import('../lib/entries/methods/rom.js')).RomNetwork.create(o as never), { encoder: { vocabSize: 16, hiddenSize: 8, layers: 0 } }, 'headDim', ['undefined', 'number']),
        { name: 'options', call: async (v) => (await import('../lib/entries/methods/rom.js')).RomNetwork.create(v as never), accepts: ['undefined', 'object'] },
      ],
    },
    {
      name: 'ServingEncoder',
      fields: [
        option('load threads', async (o) => (await core()).ServingEncoder.load(shipped, o), {}, 'threads', ['undefined', 'number']),
        option('encodeQueries task', async (o) => (await encoder()).encodeQueries(['hello'], o), {}, 'task', ['undefined']),
        {
          name: 'HF config.json',
          call: async (v) => (await core()).ServingEncoder.load(damaged(scratch, hf, 'config.json', (t) => JSON.stringify({ ...JSON.parse(t), ...(v as object) }))),
          values: {
            'num_hidden_layers 1e6': { num_hidden_layers: 1e6 },
            'layer_norm_eps -1': { layer_norm_eps: -1 },
            'hidden_size "x"': { hidden_size: 'x' },
            'vocab_size 0': { vocab_size: 0 },
          },
        },
        {
          name: 'HF modules.json',
          call: async (v) => (await core()).ServingEncoder.load(damaged(scratch, hf, 'modules.json', JSON.stringify(v))),
          values: { 'a path outside the directory': [{ idx: 0, name: '0', path: '../x', type: 'sentence_transformers.models.Transformer' }, { idx: 1, name: '1', path: '../../etc', type: 'sentence_transformers.models.Pooling' }] },
        },
      ],
    },
    {
      name: 'MufServer',
      fields: [
        { name: 'search k', call: async (v) => (await mufServer()).search(['what is covid'], v as number), accepts: ['number'] },
        option('search abstain', async (o) => (await mufServer()).search(['what is covid'], 3, o), {}, 'abstain', ['undefined', 'fractional']),
        option('search fusion', async (o) => (await mufServer()).search(['what is covid'], 3, o), {}, 'fusion', ['undefined']),
        option('load heads', async (o) => (await import('../lib/methods/muf/serve.js')).MufServer.load(mufDir, o), {}, 'heads', ['undefined']),
        {
          name: 'corpus-ids.txt',
          call: async (v) => (await import('../lib/methods/muf/serve.js')).MufServer.load(damaged(scratch, mufDir, 'corpus-ids.txt', v as (t: string) => string)),
          accepts: ['CRLF'],
          values: {
            CRLF: (t: string) => t.replace(/\n/g, '\r\n'),
            'an empty id': (t: string) => t.replace(/\n[^\n]*\n/, '\n\n'),
            'an id twice': (t: string) => t.replace(/^([^\n]*)\n([^\n]*)\n/, '$1\n$1\n'),
            'one id short': (t: string) => t.replace(/[^\n]*\n$/, ''),
          },
        },
        {
          name: 'muf.json',
          call: async (v) => (await import('../lib/methods/muf/serve.js')).MufServer.load(damaged(scratch, mufDir, 'muf.json', (t) => JSON.stringify({ ...JSON.parse(t), ...(v as object) }))),
          values: { 'topL 0': { topL: 0 }, 'hitTopK "x"': { hitTopK: 'x' }, 'experts null': { experts: null }, 'format quorum-came': { format: 'quorum-came' } },
        },
      ],
    },
    {
      name: 'trainMufHeads',
      fields: [
        {
          name: 'example positives',
          call: async (v) => {
            const { MufRetriever } = await import('../lib/methods/muf/retriever.js');
            const { trainMufHeads } = await import('../lib/methods/muf/train.js');
            const muf = await MufRetriever.load(mufDir);
            try {
              await trainMufHeads(muf, [{ query: 'q', task: 'covid', positives: [v as number], hardNegatives: [] }], { epochs: 1 });
            } finally {
              muf.dispose();
            }
          },
        },
      ],
    },
    {
      name: 'saveModel',
      fields: [
        {
          name: 'dir',
          call: async (v) => (await retriever()).saveModel(v as string, { tokenizer: (await retriever()).loaded!.tokenizer, ...(await retriever()).loaded!.card.text }),
          values: { 'a regular file': join(scratch, 'notes.txt'), fifo: join(scratch, 'fifo'), '/dev/null': '/dev/null', 'NUL byte': `${scratch}/m\0x`, empty: '' },
        },
      ],
    },
    {
      name: 'Tensor',
      fields: [
        { name: 'from shape', call: async (v) => (await core()).Tensor.from(new Float32Array(4), [v as number, 2]), accepts: [] },
        { name: 'from values', call: async (v) => (await core()).Tensor.from([v as number, 1], [2]), accepts: ['number', 'negative', 'huge', 'fractional', 'NaN', 'Infinity'] },
        { name: 'zeros dtype', call: async (v) => (await core()).Tensor.zeros([2], v as never), accepts: ['undefined'] },
        option('map options verify', async (o) => (await core()).Tensor.map(join(scratch, 'corpus.qtns'), o), {}, 'verify', ['undefined']),
        {
          name: 'map path',
          call: async (v) => (await core()).Tensor.map(v as string),
          values: { fifo: join(scratch, 'fifo'), 'link to /dev/zero': join(scratch, 'zero'), 'NUL byte': `${scratch}/a\0b`, empty: '', directory: scratch, 'a text file': join(scratch, 'notes.txt') },
        },
      ],
    },
    {
      name: 'scoreTopK options',
      fields: [
        option('rows', async (o) => (await core()).scoreTopK(await q(), await corpus(), 3, o), {}, 'rows', ['undefined', 'array']),
        option('checkFinite', async (o) => (await core()).scoreTopK(await q(), await corpus(), 3, o), {}, 'checkFinite', ['undefined']),
      ],
    },
    {
      name: 'DenseIndex add',
      fields: [
        { name: 'id', call: async (v) => (await dense()).add(new Float32Array(8), [v as number]), accepts: ['number', 'huge'] },
        { name: 'remove id', call: async (v) => (await dense()).remove([v as number]), accepts: ['number', 'negative', 'huge', 'empty', 'array'] },
      ],
    },
    {
      name: 'MetadataTable.from',
      fields: [{ name: 'record', call: async (v) => (await core()).MetadataTable.from([v as never]), accepts: ['object'] }],
    },
    {
      name: 'writeRun',
      fields: [
        {
          name: 'ids',
          call: async (v) => (await import('../lib/entries/data.js')).writeRun(join(scratch, `run-${process.pid}.trec`), v as never),
          values: { 'an id with a space': new Map([['q 1', [{ id: 'a', score: 1 }]]]), 'an empty passage id': new Map([['q', [{ id: '', score: 1 }]]]) },
        },
      ],
    },
    {
      name: 'ProcessGroup.join',
      // One rank alone on a port of its own (a valid join returns at once; 2 s bounds a wait for missing ranks).
      fields: (['rank', 'size', 'port', 'timeoutMs'] as const).map((key) =>
        option(
          key,
          async (o) => {
            const g = await (await import('../lib/entries/train.js')).ProcessGroup.join({ rank: 0, size: 1, port: 29_611, timeoutMs: 2000, ...o } as never);
            g.dispose();
          },
          {},
          key,
          { rank: [], size: [], port: ['number', 'undefined'], timeoutMs: ['number', 'huge', 'undefined'] }[key] as readonly Kind[],
        ),
      ),
    },
    {
      name: 'Live',
      fields: [{ name: 'refresh build', call: async (v) => new (await core()).Live({ dispose() {} }).refresh(v as never) }],
    },
    {
      name: 'RequestBatcher.submit',
      fields: [
        {
          name: 'after close',
          call: async () => {
            const b = new (await core()).RequestBatcher(async (xs: unknown[]) => xs);
            b.close();
            return b.submit(1);
          },
          values: { 'a closed batcher': 1 },
        },
      ],
    },
    {
      name: 'quantized corpora',
      fields: [
        { name: 'quantize vectors', call: async (v) => (await kernels()).quantize(v as never, 'int8') },
        { name: 'quantize kind', call: async (v) => (await kernels()).quantize(await corpus(), v as never) },
        option('quantize clip', async (o) => (await kernels()).quantize(await corpus(), 'int8', o), {}, 'clip'),
        option('quantize center', async (o) => (await kernels()).quantize(await corpus(), 'binary', o), {}, 'center'),
        option('quantize rotate', async (o) => (await kernels()).quantize(await corpus(), 'binary', o), {}, 'rotate'),
        option('scoreTopK queryBits', async (o) => (await core()).scoreTopK(await q(), await bits(), 3, o), {}, 'queryBits'),
        option('scoreTopK rescore', async (o) => (await core()).scoreTopK(await q(), await bits(), 3, o), {}, 'rescore'),
        option('scoreTopK oversample', async (o) => (await core()).scoreTopK(await q(), await bits(), 3, { ...o, rescore: await corpus() }), {}, 'oversample', ['undefined', 'number', 'fractional']),
        { name: 'encode vectors', call: async (v) => (await bits()).encode(v as never) },
        option('load options verify', async (o) => (await core()).QuantizedTensor.load(q8Dir, o), {}, 'verify'),
        {
          name: 'load path',
          call: async (v) => (await core()).QuantizedTensor.load(v as string),
          values: {
            'another dimension': damaged(scratch, q8Dir, 'quantized.json', (t) => t.replace('"dim": 8', '"dim": 9')),
            'no scale table': damaged(scratch, q8Dir, 'quantized.json', (t) => t.replace('"scale": "scale.qtns",', '')),
            'a scale table out of the directory': damaged(scratch, q8Dir, 'quantized.json', (t) => t.replace('"scale.qtns"', '"../scale.qtns"')),
            'a corrupt scale table': damaged(scratch, q8Dir, 'scale.qtns', 'QTNS not a tensor'),
            'more rows than the codes': damaged(scratch, q8Dir, 'quantized.json', (t) => t.replace('"rows": 64', '"rows": 65')),
            'a directory without a card': scratch,
            empty: '',
          },
        },
      ],
    },
    {
      name: 'MufServer.load options',
      fields: [
        option('passages', async (o) => (await import('../lib/methods/muf/serve.js')).MufServer.load(mufDir, o), {}, 'passages', ['undefined']),
        option('threads', async (o) => (await import('../lib/methods/muf/serve.js')).MufServer.load(mufDir, o), {}, 'threads', ['undefined', 'number']),
      ],
    },
    {
      name: 'lifecycle',
      fields: [
        {
          name: 'ServingEncoder',
          accepts: ['dispose twice', 'dispose during a call'],
          call: async (v) => {
            const enc = await (await core()).ServingEncoder.load(shipped);
            if (v === 'dispose twice') return Promise.all([enc.dispose(), enc.dispose()]);
            if (v === 'encode after dispose') {
              await enc.dispose();
              return enc.encodeQueries(['hello']);
            }
            const call = enc.encodePassages([{ title: 't', text: 'a passage '.repeat(50) }]);
            await enc.dispose();
            return call;
          },
          values: { 'dispose twice': 'dispose twice', 'encode after dispose': 'encode after dispose', 'dispose during a call': 'dispose during a call' },
        },
        {
          name: 'MufServer',
          accepts: ['dispose twice', 'dispose during a call'],
          call: async (v) => {
            const m = await (await import('../lib/methods/muf/serve.js')).MufServer.load(mufDir);
            if (v === 'dispose twice') return Promise.all([m.dispose(), m.dispose()]);
            if (v === 'search after dispose') {
              await m.dispose();
              return m.search(['covid'], 3);
            }
            const call = m.search(['what is covid'], 3);
            await m.dispose();
            return call;
          },
          values: { 'dispose twice': 'dispose twice', 'search after dispose': 'search after dispose', 'dispose during a call': 'dispose during a call' },
        },
        {
          name: 'updateMufPassages',
          accepts: ['two at once'],
          call: async () => {
            const { updateMufPassages } = await import('../lib/methods/muf/passages.js');
            const dir = damaged(scratch, mufDir, 'notes.txt', '');
            await Promise.all([
              updateMufPassages(dir, { add: [{ id: 'new-a', text: 'a new passage' }] }),
              updateMufPassages(dir, { add: [{ id: 'new-b', text: 'another new passage' }] }),
            ]);
            const ids = readFileSync(join(dir, 'corpus-ids.txt'), 'utf8');
            if (!ids.includes('new-a') || !ids.includes('new-b')) throw new Error('one update was lost');
          },
          values: { 'two at once': 1 },
        },
        {
          name: 'QUORUM_CUDA_PATH',
          call: async () => {
            const script = `import('${join(packageRoot, 'dist', 'lib', 'index.js')}').then(async (q) => { try { q.Tensor.from(new Float32Array(4), [2, 2]).to('cuda'); console.log('ok'); } catch (e) { console.log(e instanceof q.QuorumError ? 'typed ' + e.code : 'untyped ' + e); } })`;
            const r = spawnSync(process.execPath, ['-e', script], {
              encoding: 'utf8',
              env: { ...process.env, QUORUM_CUDA_PATH: join(packageRoot, 'build', 'Release', 'quorum_core.node') },
              timeout: 25_000,
            });
            const line = r.stdout.trim();
            if (line.startsWith('typed ')) throw new (await core()).QuorumError(line.slice(6) as never, 'from the child');
            throw new Error(line || r.stderr.slice(0, 100));
          },
          values: { 'the core module': 1 },
        },
      ],
    },
    {
      name: 'saveModel options',
      fields: [
        option('maxQueryLength', async (o) => (await retriever()).saveModel(join(scratch, `saved-${process.pid}`), { tokenizer: (await retriever()).loaded!.tokenizer, ...o }), {}, 'maxQueryLength', ['undefined', 'number', 'huge']),
        option('dtype', async (o) => (await retriever()).saveModel(join(scratch, `saved-${process.pid}`), { tokenizer: (await retriever()).loaded!.tokenizer, ...o }), {}, 'dtype', ['undefined']),
      ],
    },
    {
      name: 'CLI',
      fields: [
        ...(
          [
            ['eval --k', ['eval', '--data', mini, '--methods', 'bm25', '--k'], ['number', 'huge']],
            ['eval --metrics', ['eval', '--data', mini, '--methods', 'bm25', '--metrics'], []],
            ['eval --alpha', ['eval', '--data', mini, '--methods', 'bm25', '--alpha'], ['fractional', 'number', 'huge']],
            // Any non-empty string names a directory to create: String(v) of every kind but [] and ''.
            ['eval --out', ['eval', '--data', mini, '--methods', 'bm25', '--out'], ['string', 'number', 'object', 'null', 'undefined', 'NaN', 'Infinity', 'negative', 'huge', 'fractional']],
            ['search --k', ['search', '--index', join(scratch, 'nowhere'), '--data', mini, '--out', join(scratch, 'run.trec'), '--k'], []],
            ['index bm25 --k1', ['index', 'bm25', '--data', mini, '--out', join(scratch, 'ix.bm25'), '--k1'], ['number', 'fractional', 'huge']],
            ['muf train --budget', ['muf', 'train', '--data', mini, '--experts', `${shipped}:covid`, '--out', join(scratch, 'never'), '--epochs', '0', '--budget'], []],
            ['muf train --top-l', ['muf', 'train', '--data', mini, '--experts', `${shipped}:covid`, '--out', join(scratch, 'never'), '--epochs', '0', '--top-l'], []],
          ] as const
        ).map(
          ([name, args, accepts]): Field => ({
            name,
            accepts: accepts as readonly Kind[],
            // Typed: exit 1 with one line `quorum: ERR_X: ...`, as a user sees it.
            call: async (v) => {
              const r = spawnSync(process.execPath, [join(packageRoot, 'dist', 'lib', 'cli', 'main.js'), ...args, String(v)], { cwd: scratch, encoding: 'utf8', timeout: 25_000 });
              if (r.status === 0) return;
              const line = r.stderr.trim();
              const m = /^quorum: (ERR_[A-Z_]+): (.*)$/.exec(line);
              if (r.status === 1 && m) throw new (await core()).QuorumError(m[1] as never, m[2]!);
              throw new Error(`exit ${r.status} ${r.signal ?? ''}: ${line.slice(0, 120)}`);
            },
          }),
        ),
      ],
    },
  ];
}
