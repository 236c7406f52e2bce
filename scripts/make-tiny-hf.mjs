#!/usr/bin/env node
// Writes a tiny random BERT in the exact layout Hugging Face's `save_pretrained` gives (config.json,
// model.safetensors or shards with model.safetensors.index.json, vocab.txt / tokenizer.json / tokenizer_config.json,
// and optionally sentence-transformers' modules.json and 1_Pooling/config.json). It imports nothing from Quorum: it
// stands for "a checkpoint made by someone else's script", so that the tests read files Quorum did not write.
//
//   node scripts/make-tiny-hf.mjs --out /tmp/tiny-bert [--layers 2] [--hidden 32] [--heads 4] [--ffn 64]
//        [--vocab-size 8000] [--prefix bert.] [--shards 2] [--pooling mean|cls|max] [--normalize]
//        [--tokenizer json|vocab] [--cased] [--seed 1] [--positions 128] [--std 0.15] [--dtype F32|BF16|F16]
//        [--colbert DIM [--query-maxlen 32] [--doc-maxlen 180] [--attend-to-mask]] [--pylate DIM]
// --colbert writes a ColBERT-repository checkpoint (HF_ColBERT: the BERT weights under --prefix, `linear.weight`
// [DIM, hidden] without bias at the top level, artifact.metadata); --pylate a PyLate one (sentence-transformers
// modules: the Transformer at the root, a pylate Dense in 1_Dense with `linear.weight`, config_sentence_transformers
// .json with the "[Q] " / "[D] " prefixes added to the tokenizer as two new, non-special tokens).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? fallback : args[i + 1];
};
const flag = (name) => args.includes(`--${name}`);

const out = opt('out');
if (!out) {
  console.error('make-tiny-hf: --out DIR is required');
  process.exit(2);
}
const layers = Number(opt('layers', 2));
const hidden = Number(opt('hidden', 32));
const heads = Number(opt('heads', 4));
const ffn = Number(opt('ffn', 2 * hidden));
const positions = Number(opt('positions', 128));
const prefix = opt('prefix', '');
const shards = Number(opt('shards', 1));
const pooling = opt('pooling');
const tokenizerKind = opt('tokenizer', 'json');
const cased = flag('cased');
let seed = Number(opt('seed', 1)) >>> 0;

// BERT's own vocabulary (bundled with the package), cut to its first n tokens: ids keep BERT's layout ([PAD] 0,
// [unused0..] 1.., [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103, single characters, then words and ## pieces).
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const fullVocab = readFileSync(join(root, 'data', 'vocab', 'bert-base-uncased-vocab.txt'), 'utf8').split('\n').filter((t, i, a) => i < a.length - 1 || t);
const vocab = fullVocab.slice(0, Number(opt('vocab-size', 8000)));
const colbertDim = Number(opt('colbert', 0));
const pylateDim = Number(opt('pylate', 0));
// PyLate adds its prefixes to the tokenizer and resizes the embeddings: two rows past the WordPiece vocabulary.
const V = vocab.length + (pylateDim ? 2 : 0);

// mulberry32 and Box-Muller: reproducible normal draws.
function uniform() {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
function normal(std, mean = 0) {
  const u = Math.max(uniform(), 1e-12);
  return mean + std * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * uniform());
}
const randn = (n, std, mean = 0) => Float32Array.from({ length: n }, () => normal(std, mean));

// By default weights larger than BERT's init (0.02), so that every layer of a tiny model changes the vectors
// measurably; --std 0.02 gives BERT's own scale (a BERT-base shape with std 0.15 amplifies rounding at every layer).
const std = Number(opt('std', 0.15));
const tensors = [];
const add = (name, shape, data, dtype = 'F32') => tensors.push({ name: prefix + name, shape, data, dtype });
const linear = (name, o, i) => {
  add(`${name}.weight`, [o, i], randn(o * i, std));
  add(`${name}.bias`, [o], randn(o, 0.05));
};
const norm = (name) => {
  add(`${name}.weight`, [hidden], randn(hidden, 0.1, 1));
  add(`${name}.bias`, [hidden], randn(hidden, 0.05));
};
add('embeddings.word_embeddings.weight', [V, hidden], randn(V * hidden, 0.5));
add('embeddings.position_embeddings.weight', [positions, hidden], randn(positions * hidden, 0.1));
add('embeddings.token_type_embeddings.weight', [2, hidden], randn(2 * hidden, 0.1));
norm('embeddings.LayerNorm');
// Older transformers saved this buffer; a reader must skip it.
add('embeddings.position_ids', [1, positions], BigInt64Array.from({ length: positions }, (_, i) => BigInt(i)), 'I64');
for (let l = 0; l < layers; l++) {
  const p = `encoder.layer.${l}`;
  for (const m of ['query', 'key', 'value']) linear(`${p}.attention.self.${m}`, hidden, hidden);
  linear(`${p}.attention.output.dense`, hidden, hidden);
  norm(`${p}.attention.output.LayerNorm`);
  linear(`${p}.intermediate.dense`, ffn, hidden);
  linear(`${p}.output.dense`, hidden, ffn);
  norm(`${p}.output.LayerNorm`);
}
linear('pooler.dense', hidden, hidden);
// The ColBERT projection sits outside the BERT prefix (HF_ColBERT's own `linear`), with no bias.
if (colbertDim) tensors.push({ name: 'linear.weight', shape: [colbertDim, hidden], data: randn(colbertDim * hidden, std), dtype: 'F32' });

// Half-precision checkpoints (torch_dtype bfloat16 / float16), rounded to nearest even as torch's .to() does.
const dtype = opt('dtype', 'F32');
const f32bits = (x) => new Uint32Array(Float32Array.of(x).buffer)[0];
function toBf16(data) {
  return Uint16Array.from(data, (x) => {
    const b = f32bits(x);
    return (b + 0x7fff + ((b >>> 16) & 1)) >>> 16;
  });
}
function toF16(data) {
  return Uint16Array.from(data, (x) => {
    const b = f32bits(x);
    const sign = (b >>> 16) & 0x8000;
    const exp = ((b >>> 23) & 0xff) - 127 + 15;
    const mant = b & 0x7fffff;
    if (exp <= 0) {
      // Subnormal: the mantissa with its implicit 1, shifted right, rounded to nearest even.
      if (exp < -10) return sign;
      const m = mant | 0x800000;
      const shift = 14 - exp;
      const sub = m >>> shift;
      const rem = m & ((1 << shift) - 1);
      const halfway = 1 << (shift - 1);
      return sign | (rem > halfway || (rem === halfway && sub & 1) ? sub + 1 : sub);
    }
    if (exp >= 31) return sign | 0x7c00;
    const half = sign | (exp << 10) | (mant >>> 13);
    const rest = mant & 0x1fff;
    return rest > 0x1000 || (rest === 0x1000 && half & 1) ? half + 1 : half;
  });
}
if (dtype !== 'F32')
  for (const t of tensors) {
    if (t.dtype !== 'F32') continue;
    t.data = dtype === 'BF16' ? toBf16(t.data) : toF16(t.data);
    t.dtype = dtype;
  }

function safetensors(list) {
  const header = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const t of list) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.data.byteLength] };
    offset += t.data.byteLength;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([head, Buffer.from(json), ...list.map((t) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength))]);
}

mkdirSync(out, { recursive: true });
if (shards <= 1) writeFileSync(join(out, 'model.safetensors'), safetensors(tensors));
else {
  const weightMap = {};
  const per = Math.ceil(tensors.length / shards);
  for (let s = 0; s < shards; s++) {
    const file = `model-${String(s + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
    const part = tensors.slice(s * per, (s + 1) * per);
    for (const t of part) weightMap[t.name] = file;
    writeFileSync(join(out, file), safetensors(part));
  }
  const size = tensors.reduce((n, t) => n + t.data.byteLength, 0);
  writeFileSync(join(out, 'model.safetensors.index.json'), JSON.stringify({ metadata: { total_size: size }, weight_map: weightMap }, null, 2));
}

writeFileSync(
  join(out, 'config.json'),
  JSON.stringify(
    {
      architectures: [colbertDim ? 'HF_ColBERT' : 'BertModel'],
      attention_probs_dropout_prob: 0.1,
      classifier_dropout: null,
      hidden_act: 'gelu',
      hidden_dropout_prob: 0.1,
      hidden_size: hidden,
      initializer_range: 0.02,
      intermediate_size: ffn,
      layer_norm_eps: 1e-12,
      max_position_embeddings: positions,
      model_type: 'bert',
      num_attention_heads: heads,
      num_hidden_layers: layers,
      pad_token_id: 0,
      position_embedding_type: 'absolute',
      torch_dtype: { F32: 'float32', BF16: 'bfloat16', F16: 'float16' }[dtype],
      transformers_version: '4.44.0',
      type_vocab_size: 2,
      use_cache: true,
      vocab_size: V,
    },
    null,
    2,
  ),
);

writeFileSync(join(out, 'vocab.txt'), vocab.join('\n') + '\n');
const specials = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
writeFileSync(
  join(out, 'tokenizer_config.json'),
  JSON.stringify({ do_lower_case: !cased, strip_accents: null, tokenize_chinese_chars: true, model_max_length: positions, tokenizer_class: 'BertTokenizer', unk_token: '[UNK]', sep_token: '[SEP]', pad_token: '[PAD]', cls_token: '[CLS]', mask_token: '[MASK]' }, null, 2),
);
writeFileSync(join(out, 'special_tokens_map.json'), JSON.stringify({ cls_token: '[CLS]', mask_token: '[MASK]', pad_token: '[PAD]', sep_token: '[SEP]', unk_token: '[UNK]' }, null, 2));
if (tokenizerKind === 'json') {
  const id = (t) => vocab.indexOf(t);
  const tok = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [
      ...specials.map((t) => ({ id: id(t), content: t, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
      ...(pylateDim
        ? ['[Q] ', '[D] '].map((t, i) => ({ id: vocab.length + i, content: t, single_word: false, lstrip: false, rstrip: false, normalized: true, special: false }))
        : []),
    ],
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: !cased },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }],
      pair: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 1 } },
        { SpecialToken: { id: '[SEP]', type_id: 1 } },
      ],
      special_tokens: { '[CLS]': { id: '[CLS]', ids: [id('[CLS]')], tokens: ['[CLS]'] }, '[SEP]': { id: '[SEP]', ids: [id('[SEP]')], tokens: ['[SEP]'] } },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab: Object.fromEntries(vocab.map((t, i) => [t, i])) },
  };
  writeFileSync(join(out, 'tokenizer.json'), JSON.stringify(tok));
}

if (pooling) {
  const modules = [
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
  ];
  if (flag('normalize')) modules.push({ idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' });
  writeFileSync(join(out, 'modules.json'), JSON.stringify(modules, null, 2));
  mkdirSync(join(out, '1_Pooling'), { recursive: true });
  writeFileSync(
    join(out, '1_Pooling', 'config.json'),
    JSON.stringify(
      {
        word_embedding_dimension: hidden,
        pooling_mode_cls_token: pooling === 'cls',
        pooling_mode_mean_tokens: pooling === 'mean',
        pooling_mode_max_tokens: pooling === 'max',
        pooling_mode_mean_sqrt_len_tokens: false,
        pooling_mode_weightedmean_tokens: false,
        pooling_mode_lasttoken: false,
        include_prompt: true,
      },
      null,
      2,
    ),
  );
  if (flag('normalize')) mkdirSync(join(out, '2_Normalize'), { recursive: true });
  writeFileSync(join(out, 'sentence_bert_config.json'), JSON.stringify({ max_seq_length: positions, do_lower_case: false }, null, 2));
}
if (colbertDim) {
  const attend = flag('attend-to-mask');
  writeFileSync(
    join(out, 'artifact.metadata'),
    JSON.stringify(
      {
        query_token_id: '[unused0]',
        doc_token_id: '[unused1]',
        query_token: '[Q]',
        doc_token: '[D]',
        ncells: null,
        centroid_score_threshold: null,
        ndocs: null,
        index_path: null,
        nbits: 2,
        kmeans_niters: 4,
        resume: false,
        similarity: 'cosine',
        bsize: 32,
        accumsteps: 1,
        lr: 3e-6,
        maxsteps: 500000,
        save_every: null,
        warmup: null,
        warmup_bert: null,
        relu: false,
        nway: 2,
        use_ib_negatives: false,
        reranker: false,
        distillation_alpha: 1.0,
        ignore_scores: false,
        model_name: null,
        query_maxlen: Number(opt('query-maxlen', 32)),
        attend_to_mask_tokens: attend,
        interaction: 'colbert',
        dim: colbertDim,
        doc_maxlen: Number(opt('doc-maxlen', 180)),
        mask_punctuation: true,
        checkpoint: 'colbert-ir/colbertv2.0',
        triples: null,
        collection: null,
        queries: null,
        index_name: null,
        overwrite: false,
        root: 'experiments',
        experiment: 'default',
        index_root: null,
        name: '2024-01/01/00.00.00',
        rank: 0,
        nranks: 1,
        amp: true,
        gpus: 0,
        meta: { hostname: 'tiny', git_branch: 'main', git_hash: '501c29d', git_commit_datetime: '2025-08-10', current_datetime: '2026-12-06', cmd: 'make-tiny-hf.mjs', version: 'colbert-v0.4' },
      },
      null,
      4,
    ),
  );
}
if (pylateDim) {
  writeFileSync(
    join(out, 'modules.json'),
    JSON.stringify(
      [
        { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
        { idx: 1, name: '1', path: '1_Dense', type: 'pylate.models.Dense.Dense' },
      ],
      null,
      2,
    ),
  );
  mkdirSync(join(out, '1_Dense'), { recursive: true });
  writeFileSync(
    join(out, '1_Dense', 'config.json'),
    JSON.stringify({ in_features: hidden, out_features: pylateDim, bias: false, activation_function: 'torch.nn.modules.linear.Identity', use_residual: false }, null, 2),
  );
  writeFileSync(join(out, '1_Dense', 'model.safetensors'), safetensors([{ name: 'linear.weight', shape: [pylateDim, hidden], data: randn(pylateDim * hidden, std), dtype: 'F32' }]));
  writeFileSync(
    join(out, 'config_sentence_transformers.json'),
    JSON.stringify(
      {
        model_type: 'ColBERT',
        __version__: { sentence_transformers: '5.3.0', transformers: '4.48.2', pytorch: '2.5.1' },
        prompts: {},
        default_prompt_name: null,
        similarity_fn_name: 'MaxSim',
        query_prefix: '[Q] ',
        document_prefix: '[D] ',
        query_length: Number(opt('query-maxlen', 32)),
        document_length: Number(opt('doc-maxlen', 180)),
        attend_to_expansion_tokens: flag('attend-to-mask'),
        skiplist_words: [...'!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~'],
        do_query_expansion: true,
      },
      null,
      2,
    ),
  );
  writeFileSync(join(out, 'sentence_bert_config.json'), JSON.stringify({ max_seq_length: Number(opt('doc-maxlen', 180)) - 1, do_lower_case: false }, null, 2));
}
console.log(`wrote ${out}: BertModel, ${layers} layers of ${hidden}, ${V} tokens${shards > 1 ? `, ${shards} shards` : ''}${pooling ? `, ${pooling} pooling` : ''}`);
