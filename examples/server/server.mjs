// An HTTP search service over one BEIR-layout dataset (default: the package's embedded benchmark):
//   GET /search?q=TEXT&mode=bm25|dense|hybrid|muf&k=10[&task=NAME]   -> { mode, k, hits: [{ id, row, score }], ... }
//   GET /health                                                       -> { ok, passages, modes }
// BM25 is Quorum's native inverted index; dense is the shipped model (or --model DIR) over a faiss DenseIndex, whose
// ids are 64-bit integers (bigint in JavaScript: serialised as strings); hybrid fuses the two (normalized scores);
// muf is a DPR-MUF directory (--muf DIR, `quorum muf train`). Every search runs off the event loop (the Promise
// forms). A QuorumError becomes an HTTP status by its code; its message goes back as JSON.
//   node examples/server/server.mjs [--data DIR] [--model DIR|default] [--muf DIR] [--port 8080] [--host 127.0.0.1]
import { createServer } from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { Bm25Index, DenseIndex, QuorumError, Retriever, hybridFuse, packageRoot } from 'quorum-retrieval';
import { MufRetriever } from 'quorum-retrieval/methods/muf';
import { loadBeirCorpus } from 'quorum-retrieval/data';

/** HTTP status of each QuorumError code: the caller's mistakes are 4xx, a missing backend 503, the rest 500. */
export const STATUS = {
  ERR_ARG: 400,
  ERR_RANGE: 400,
  ERR_SHAPE: 400,
  ERR_DTYPE: 400,
  ERR_NONFINITE: 400,
  ERR_NOT_FOUND: 404,
  ERR_DUPLICATE_ID: 409,
  ERR_STATE: 409,
  ERR_UNSUPPORTED: 501,
  ERR_BACKEND_UNAVAILABLE: 503,
  ERR_NOMEM: 503,
  ERR_DISPOSED: 500,
  ERR_FORMAT: 500,
  ERR_IO: 500,
  ERR_NATIVE: 500,
};

const MAX_K = 100;
const MAX_QUERY_CHARS = 2000;

// bigint ids (faiss) as decimal strings: JSON has no 64-bit integers.
const json = (value) => JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? v.toString() : v));

/** Loads the dataset, builds the indexes and returns the request handler and what it serves. */
export async function createSearchService(options = {}) {
  const data = options.data ?? join(packageRoot, 'data', 'multidomain-mini');
  const corpus = loadBeirCorpus(data);
  const texts = corpus.map((p) => ({ id: p.id, text: p.title ? `${p.title}. ${p.text}` : p.text }));
  const bm25 = await Bm25Index.build(texts, { k1: 0.9, b: 0.4 });
  const model = await Retriever.load(options.model ?? 'default');
  const vectors = await model.encodePassages(corpus);
  const dense = DenseIndex.create({ dim: model.dim, factory: 'Flat', mips: 'inner-product' });
  await dense.add(vectors.data, BigInt64Array.from(corpus, (_, i) => BigInt(i)));
  vectors.dispose();
  const muf = options.muf ? await MufRetriever.load(options.muf) : undefined;
  const modes = ['bm25', 'dense', 'hybrid', ...(muf ? ['muf'] : [])];

  const denseHits = async (q, k, task) => {
    const qv = await model.encodeQueries([q], { task });
    try {
      return (await dense.search(qv.data, k)).hits(0).map((h) => ({ id: corpus[Number(h.id)].id, row: h.id, score: h.score }));
    } finally {
      qv.dispose();
    }
  };
  const bm25Hits = async (q, k) => (await bm25.search([q], k))[0].map((h) => ({ id: h.id, score: h.score }));

  async function search(params) {
    const q = params.get('q');
    if (!q || !q.trim()) throw new QuorumError('ERR_ARG', 'give the query as ?q=...');
    if (q.length > MAX_QUERY_CHARS) throw new QuorumError('ERR_RANGE', `the query has ${q.length} characters, at most ${MAX_QUERY_CHARS}`);
    const mode = params.get('mode') ?? 'hybrid';
    const k = params.has('k') ? Number(params.get('k')) : 10;
    if (!Number.isInteger(k) || k < 1 || k > MAX_K) throw new QuorumError('ERR_RANGE', `k must be an integer in 1..${MAX_K}, got '${params.get('k')}'`);
    // A task picks the question marker of a multi-task model; without one the question gets none.
    const task = params.get('task') ?? undefined;
    if (task !== undefined && !model.config.tasks.includes(task)) throw new QuorumError('ERR_ARG', `unknown task '${task}': the model knows ${model.config.tasks.join(', ')}`);
    switch (mode) {
      case 'bm25':
        return { mode, k, hits: await bm25Hits(q, k) };
      case 'dense':
        return { mode, k, hits: await denseHits(q, k, task) };
      case 'hybrid': {
        // Each list to depth 100 before fusing, as the paper's hybrid.
        const [d, s] = await Promise.all([denseHits(q, MAX_K, task), bm25Hits(q, MAX_K)]);
        return { mode, k, hits: hybridFuse(d, s, { alpha: 1, normalization: true }).slice(0, k) };
      }
      case 'muf': {
        if (!muf) throw new QuorumError('ERR_BACKEND_UNAVAILABLE', "mode 'muf' needs a DPR-MUF directory: start the server with --muf DIR (quorum muf train)");
        const [r] = await muf.search([q], k);
        return { mode, k, hits: r.hits, confidence: Object.fromEntries(muf.experts.map((e, i) => [e.name, r.confidence[i]])) };
      }
      default:
        throw new QuorumError('ERR_ARG', `unknown mode '${mode}': use ${modes.join(', ')}`);
    }
  }

  async function handle(req, res) {
    const send = (status, body) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
      res.end(json(body));
    };
    let url;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      return send(400, { error: { code: 'ERR_ARG', message: 'the request target is not a valid URL' } });
    }
    try {
      if (req.method !== 'GET') return send(405, { error: { code: 'ERR_METHOD', message: 'GET only' } });
      if (url.pathname === '/health') return send(200, { ok: true, passages: corpus.length, modes });
      if (url.pathname !== '/search') return send(404, { error: { code: 'ERR_NOT_FOUND', message: `no route ${url.pathname}: use /search or /health` } });
      const t0 = performance.now();
      const result = await search(url.searchParams);
      return send(200, { ...result, ms: performance.now() - t0 });
    } catch (e) {
      if (e instanceof QuorumError) return send(STATUS[e.code] ?? 500, { error: { code: e.code, message: e.message } });
      console.error(e);
      return send(500, { error: { code: 'ERR_INTERNAL', message: 'internal error' } });
    }
  }

  return {
    handle,
    modes,
    passages: corpus.length,
    close() {
      dense.dispose();
      bm25.dispose();
      model.dispose();
      muf?.dispose();
    },
  };
}

/** Starts the service; resolves with the server once it listens (port 0: any free port). */
export async function startServer(options = {}) {
  const service = await createSearchService(options);
  const server = createServer((req, res) => void service.handle(req, res));
  server.on('close', () => service.close());
  await new Promise((resolve) => server.listen(options.port ?? 8080, options.host ?? '127.0.0.1', resolve));
  return { server, service, url: `http://${options.host ?? '127.0.0.1'}:${server.address().port}` };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: { data: { type: 'string' }, model: { type: 'string' }, muf: { type: 'string' }, port: { type: 'string', default: '8080' }, host: { type: 'string', default: '127.0.0.1' } },
  });
  const { url, service } = await startServer({ ...values, port: Number(values.port) });
  console.log(`quorum search service on ${url} (${service.passages} passages; modes ${service.modes.join(', ')})`);
}
