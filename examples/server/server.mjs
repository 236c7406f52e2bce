// An HTTP search service over one BEIR-layout dataset (default: the package's embedded benchmark):
//   GET /search?q=TEXT&mode=bm25|dense|hybrid|muf&k=10[&task=NAME][&filter=JSON][&abstain=P[&fallback=bm25|none]]
//                                                                     -> { mode, k, hits: [{ id, row, score }], ... }
//   GET /health                                                       -> { ok, passages, modes, version }
//   POST /admin/swap  { data?, model?, muf? }  (Authorization: Bearer TOKEN)  -> { version, passages, modes, ms }
// BM25 is Quorum's native inverted index; dense is the shipped model (or --model DIR) over a faiss DenseIndex, whose
// ids are 64-bit integers (bigint in JavaScript: serialised as strings); hybrid fuses the two (normalized scores);
// muf is a DPR-MUF directory (--muf DIR, `quorum muf train`). Serving needs no libtorch: the model encodes through
// ServingEncoder and the MUF directory searches through MufServer (docs/guides/bring-your-own-model.md). Every search
// runs off the event loop (the Promise forms). A QuorumError becomes an HTTP status by its code; its message goes
// back as JSON.
//   node examples/server/server.mjs [--data DIR] [--model DIR|default] [--muf DIR] [--port 8080] [--host 127.0.0.1] [--batch]
//        [--quantize int8]   (the dense index, the MUF passages and familiarity banks as int8 codes: a quarter of the memory)
// filter=JSON (any mode) keeps the search inside the passages whose metadata match (lib/filter.ts: { field, eq | in |
// range }, and / or / not; the fields are each passage's title and its corpus.jsonl `metadata`), compiled once and cached.
// muf with abstain=P: when no expert's confidence (P(own task) where the directory has familiarity) reaches P, the
// answer is BM25's list (fallback=bm25, the default) or no hits (fallback=none), with "abstained": true.
// --batch coalesces concurrent dense questions (and the hybrid's dense side), and concurrent MUF questions, into
// batches of up to 64 (RequestBatcher).
// The admin route is off unless QUORUM_ADMIN_TOKEN (or startServer's adminToken) holds a token of 16 characters or
// more; a request without that token gets 401. A swap builds the next version (dataset, indexes, model, MUF directory:
// each from the body, or the current one's when left out) while the current one serves, then swaps it in at once;
// requests in flight finish on the old version, which is freed after the last of them (Live). Every /search answer
// names the version that served it. A second swap while one builds is 409; a failed build leaves the old version.
// Slow clients: the headers must arrive within 10 s and the request within 30 s (408 with a JSON body). SIGTERM or
// SIGINT stops taking connections, lets the requests in flight finish (at most 10 s) and exits 0.
// Startup errors (a missing directory, a bad or busy port, an unknown flag) are one line, as the CLI's; malformed
// requests (invalid percent-encoding, a request line over 16 KiB) get a 4xx with a JSON error body.
import { existsSync } from 'node:fs';
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { Bm25Index, DenseIndex, Live, MetadataTable, QuorumError, RequestBatcher, ServingEncoder, abstains, checkAbstain, checkK, compileFilter, hybridFuse, packageRoot } from 'quorum-retrieval';
import { MufServer } from 'quorum-retrieval/methods/muf';
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
  ERR_BUSY: 503,
  ERR_TIMEOUT: 504,
};

const MAX_K = 100;

/** A query parameter as a number where it is one, else the text itself (so that an error quotes what was sent). */
const numberParam = (text) => (text.trim() !== '' && Number.isFinite(Number(text)) ? Number(text) : text);
const MAX_QUERY_CHARS = 2000;

// bigint ids (faiss) as decimal strings: JSON has no 64-bit integers.
const json = (value) => JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? v.toString() : v));

/** The first component of a query string that does not decode as percent-encoded UTF-8, or undefined. */
export function badPercentEncoding(search) {
  for (const part of search.replace(/^\?/, '').split(/[&=]/)) {
    try {
      decodeURIComponent(part.replace(/\+/g, ' '));
    } catch {
      return part.slice(0, 40);
    }
  }
  return undefined;
}

const errorBody = (code, message) => json({ error: { code, message } });

/**
 * Everything one version of the service serves: the dataset, its indexes, the model, the MUF directory and the
 * batchers that feed them. The admin route's swap builds a new one while this one serves, and frees this one once
 * the requests that began on it have ended (Live, docs/api.md#swapping-a-live-index).
 */
async function buildState(options) {
  const data = options.data ?? join(packageRoot, 'data', 'multidomain-mini');
  for (const [flag, dir] of [['--data', data], ['--muf', options.muf], ['--model', options.model && options.model !== 'default' ? options.model : undefined]])
    if (dir !== undefined && !existsSync(dir)) throw new QuorumError('ERR_IO', `${flag} ${dir}: no such directory`);
  const corpus = loadBeirCorpus(data);
  const texts = corpus.map((p) => ({ id: p.id, text: p.title ? `${p.title}. ${p.text}` : p.text }));
  const owned = [];
  try {
    const bm25 = await Bm25Index.build(texts, { k1: 0.9, b: 0.4 });
    owned.push(() => bm25.dispose());
    const model = await ServingEncoder.load(options.model ?? 'default');
    owned.push(() => model.dispose());
    if (options.quantize !== undefined && options.quantize !== 'int8')
      throw new QuorumError('ERR_ARG', `--quantize must be int8, got '${options.quantize}'`);
    const int8 = options.quantize === 'int8';
    // --quantize int8: the dense index and the MUF experts' passages and familiarity banks as int8 codes (docs/api.md#quantized-corpora).
    const dense = DenseIndex.create({ dim: model.dim, factory: 'Flat', mips: 'inner-product', ...(int8 ? { quantization: 'int8' } : {}) });
    owned.push(() => dense.dispose());
    const vectors = await model.encodePassages(corpus);
    if (int8) await dense.train(vectors);
    await dense.add(vectors, BigInt64Array.from(corpus, (_, i) => BigInt(i)));
    const muf = options.muf ? await MufServer.load(options.muf, int8 ? { passages: 'int8', familiarity: 'int8' } : {}) : undefined;
    if (muf) owned.push(() => muf.dispose());
    return stateOver({ options: { data, model: options.model, muf: options.muf, quantize: options.quantize }, corpus, bm25, model, dense, muf, batch: options.batch, batchWaitMs: options.batchWaitMs, owned });
  } catch (e) {
    for (const free of owned.reverse()) await free();
    throw e;
  }
}

/** The search paths over one version's indexes. */
function stateOver({ options, corpus, bm25, model, dense, muf, batch, batchWaitMs, owned }) {
  const expertNames = muf ? muf.names.map((e) => e.name) : [];
  const modes = ['bm25', 'dense', 'hybrid', ...(muf ? ['muf'] : [])];

  const asHits = (hits) => hits.map((h) => ({ id: corpus[Number(h.id)].id, row: h.id, score: h.score }));
  // Metadata filters: each passage's title and corpus.jsonl metadata; a filter's rows compiled once (at most 256 kept).
  const table = MetadataTable.from(corpus.map((p) => ({ title: p.title, ...p.metadata })));
  const compiled = new Map();
  const filterRows = (text) => {
    if (text === null) return undefined;
    let rows = compiled.get(text);
    if (!rows) {
      let filter;
      try {
        filter = JSON.parse(text);
      } catch {
        throw new QuorumError('ERR_ARG', 'filter must be JSON, e.g. {"field":"title","eq":"Super Bowl 50"}');
      }
      rows = { ints: compileFilter(filter, table) };
      rows.ids = BigInt64Array.from(rows.ints, (r) => BigInt(r));
      if (compiled.size >= 256) compiled.delete(compiled.keys().next().value);
      compiled.set(text, rows);
    }
    return rows;
  };
  // One question: its own encoder call and kernel call.
  const searchOne = async (q, k, task, rows) => {
    const qv = await model.encodeQueries([q], { task });
    return asHits((await dense.search(qv, k, rows ? { allowedIds: rows.ids } : {})).hits(0));
  };
  // With --batch: the questions that arrive together share one encoder call per task and one kernel call
  // (RequestBatcher, docs/api.md#batching-requests).
  const batcher = batch
    ? new RequestBatcher(async (requests) => {
        const out = new Array(requests.length);
        const byTask = new Map();
        requests.forEach((r, i) => byTask.set(r.task, [...(byTask.get(r.task) ?? []), i]));
        for (const [task, rows] of byTask) {
          const k = Math.max(...rows.map((i) => requests[i].k));
          const qv = await model.encodeQueries(rows.map((i) => requests[i].q), { task });
          const r = await dense.search(qv, k);
          rows.forEach((i, j) => (out[i] = asHits(r.hits(j)).slice(0, requests[i].k)));
        }
        return out;
      }, { maxBatch: 64, maxWaitMs: batchWaitMs ?? 2, maxQueue: 4096, timeoutMs: 10_000 })
    : undefined;
  // A filtered question searches alone (a batch shares one search, hence one filter).
  const denseHits = (q, k, task, rows) => (batcher && !rows ? batcher.submit({ q, k, task }) : searchOne(q, k, task, rows));
  // MUF questions that arrive together: one MufServer.search (every expert's encoder, top-L and heads once).
  const mufBatcher = batch && muf
    ? new RequestBatcher(async (requests) => {
        const k = Math.max(...requests.map((r) => r.k));
        const rs = await muf.search(requests.map((r) => r.q), k);
        return rs.map((r, i) => ({ hits: r.hits.slice(0, requests[i].k), confidence: r.confidence }));
      }, { maxBatch: 64, maxWaitMs: batchWaitMs ?? 2, maxQueue: 4096, timeoutMs: 10_000 })
    : undefined;
  const mufHits = async (q, k, rows) => (mufBatcher && !rows ? mufBatcher.submit({ q, k }) : (await muf.search([q], k, rows ? { rows: rows.ints } : {}))[0]);
  const stored = model.hybrid;
  const hybridAlpha = (task) => {
    if (!stored) return 1;
    const byTask = task !== undefined ? stored.byTask?.[task] : undefined;
    return byTask !== undefined ? byTask : stored.alpha;
  };
  const bm25Hits = async (q, k, rows) => (await bm25.search([q], k, rows ? { rows: rows.ints } : {}))[0].map((h) => ({ id: h.id, score: h.score }));

  async function search(params) {
    const q = params.get('q');
    if (!q || !q.trim()) throw new QuorumError('ERR_ARG', 'give the query as ?q=...');
    if (q.length > MAX_QUERY_CHARS) throw new QuorumError('ERR_RANGE', `the query has ${q.length} characters, at most ${MAX_QUERY_CHARS}`);
    const mode = params.get('mode') ?? 'hybrid';
    // The search-request contract (k, abstain and its rule) is the library's: checkK, checkAbstain, abstains.
    const k = params.has('k') ? checkK(numberParam(params.get('k')), 'k', MAX_K) : 10;
    // A task picks the question marker of a multi-task model; without one the question gets none.
    const task = params.get('task') ?? undefined;
    if (task !== undefined && !model.config.tasks.includes(task)) throw new QuorumError('ERR_ARG', `unknown task '${task}': the model knows ${model.config.tasks.join(', ')}`);
    const rows = filterRows(params.get('filter'));
    switch (mode) {
      case 'bm25':
        return { mode, k, hits: await bm25Hits(q, k, rows) };
      case 'dense':
        return { mode, k, hits: await denseHits(q, k, task, rows) };
      case 'hybrid': {
        // The model's alpha, tuned on its dev split when it was trained (null: BM25 alone, the dense side did not help
        // there); a model without one gets 1.
        const alpha = hybridAlpha(task);
        if (alpha === null) return { mode, k, alpha, hits: await bm25Hits(q, k, rows) };
        // Each list to depth 100 before fusing, as the paper's hybrid.
        const [d, s] = await Promise.all([denseHits(q, MAX_K, task, rows), bm25Hits(q, MAX_K, rows)]);
        return { mode, k, alpha, hits: hybridFuse(d, s, { alpha, normalization: true }).slice(0, k) };
      }
      case 'muf': {
        if (!muf) throw new QuorumError('ERR_BACKEND_UNAVAILABLE', "mode 'muf' needs a DPR-MUF directory: start the server with --muf DIR (quorum muf train)");
        const abstain = params.has('abstain') ? checkAbstain(numberParam(params.get('abstain'))) : undefined;
        const fallback = params.get('fallback') ?? 'bm25';
        if (fallback !== 'bm25' && fallback !== 'none') throw new QuorumError('ERR_ARG', `fallback must be bm25 or none, got '${fallback}'`);
        const r = await mufHits(q, k, rows);
        const confidence = Object.fromEntries(expertNames.map((name, i) => [name, r.confidence[i]]));
        // MufServer.search's abstention rule, applied per request (a batch serves requests of different thresholds).
        if (abstain !== undefined && abstains(r.confidence, abstain))
          return { mode, k, abstained: true, fallback, hits: fallback === 'bm25' ? await bm25Hits(q, k, rows) : [], confidence };
        return { mode, k, hits: r.hits, confidence };
      }
      default:
        throw new QuorumError('ERR_ARG', `unknown mode '${mode}': use ${modes.join(', ')}`);
    }
  }

  return {
    options,
    search,
    modes,
    passages: corpus.length,
    batcher,
    async dispose() {
      batcher?.close();
      mufBatcher?.close();
      for (const free of owned.reverse()) await free();
    },
  };
}

/** A constant-time comparison of a request's bearer token with the configured one. */
function tokenMatches(header, token) {
  const given = /^Bearer (.+)$/.exec(header ?? '')?.[1] ?? '';
  const digest = (s) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(token)) && given.length > 0;
}

/** A request's body as text, at most `limit` bytes (ERR_RANGE with status 413 past it). */
async function readBody(req, limit) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > limit) throw Object.assign(new QuorumError('ERR_RANGE', `the request body is over ${limit} bytes`), { status: 413 });
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The admin route's body: which directories the next version serves (each defaults to the current one). */
function swapOptions(text, current) {
  let body = {};
  if (text.trim()) {
    try {
      body = JSON.parse(text);
    } catch {
      throw new QuorumError('ERR_ARG', 'the swap body must be JSON: { "data"?: DIR, "model"?: DIR, "muf"?: DIR | null }');
    }
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new QuorumError('ERR_ARG', 'the swap body must be a JSON object');
  for (const key of Object.keys(body)) if (!['data', 'model', 'muf'].includes(key)) throw new QuorumError('ERR_ARG', `unknown swap field '${key}': use data, model, muf`);
  for (const key of ['data', 'model']) if (key in body && (typeof body[key] !== 'string' || !body[key])) throw new QuorumError('ERR_ARG', `${key} must be a directory path`);
  if ('muf' in body && body.muf !== null && (typeof body.muf !== 'string' || !body.muf)) throw new QuorumError('ERR_ARG', 'muf must be a directory path or null (no MUF mode)');
  const next = { ...current, ...body, muf: 'muf' in body ? body.muf ?? undefined : current.muf };
  for (const key of ['data', 'model', 'muf'])
    if (key in body && typeof next[key] === 'string' && !(key === 'model' && next[key] === 'default') && !existsSync(next[key]))
      throw new QuorumError('ERR_ARG', `${key} ${next[key]}: no such directory`);
  return next;
}

/** Loads the dataset, builds the indexes and returns the request handler and what it serves. */
export async function createSearchService(options = {}) {
  const adminToken = options.adminToken ?? process.env.QUORUM_ADMIN_TOKEN;
  if (adminToken !== undefined && (typeof adminToken !== 'string' || adminToken.length < 16))
    throw new QuorumError('ERR_ARG', 'the admin token (QUORUM_ADMIN_TOKEN) must be a string of at least 16 characters');
  const live = new Live(await buildState(options));
  let swaps = 0;

  // POST /admin/swap: builds the next version from the body's directories in the background, then swaps it in.
  async function adminSwap(req) {
    const next = swapOptions(await readBody(req, 64 * 1024), live.peek().options);
    const t0 = performance.now();
    const version = await live.refresh(() => buildState({ ...next, batch: options.batch, batchWaitMs: options.batchWaitMs }));
    swaps++;
    const { passages, modes } = live.peek();
    return { version, passages, modes, ms: performance.now() - t0 };
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
    // URLSearchParams keeps a malformed escape such as "%E0%A4%A" as text: the query the client meant is unknown, so
    // it is the client's error rather than a search for mojibake.
    const bad = badPercentEncoding(url.search);
    if (bad) return send(400, { error: { code: 'ERR_ARG', message: `the query string has invalid percent-encoding near '${bad}'` } });
    try {
      if (url.pathname === '/admin/swap') {
        // Off unless a token is configured: the route does not exist then.
        if (adminToken === undefined) return send(404, { error: { code: 'ERR_NOT_FOUND', message: 'no route /admin/swap: the admin routes are off (set QUORUM_ADMIN_TOKEN)' } });
        if (!tokenMatches(req.headers.authorization, adminToken)) {
          res.setHeader('www-authenticate', 'Bearer');
          return send(401, { error: { code: 'ERR_AUTH', message: 'the admin routes need Authorization: Bearer <token>' } });
        }
        if (req.method !== 'POST') return send(405, { error: { code: 'ERR_METHOD', message: 'POST only' } });
        return send(200, await adminSwap(req));
      }
      if (req.method !== 'GET') return send(405, { error: { code: 'ERR_METHOD', message: 'GET only' } });
      if (url.pathname === '/health') return send(200, await live.use((s, version) => ({ ok: true, passages: s.passages, modes: s.modes, version })));
      if (url.pathname !== '/search') return send(404, { error: { code: 'ERR_NOT_FOUND', message: `no route ${url.pathname}: use /search or /health` } });
      const t0 = performance.now();
      // The whole request on one version: a swap meanwhile waits for it before freeing that version.
      const result = await live.use(async (s, version) => ({ ...(await s.search(url.searchParams)), version }));
      return send(200, { ...result, ms: performance.now() - t0 });
    } catch (e) {
      if (e instanceof QuorumError) return send(e.status ?? STATUS[e.code] ?? 500, { error: { code: e.code, message: e.message } });
      console.error(e);
      return send(500, { error: { code: 'ERR_INTERNAL', message: 'internal error' } });
    }
  }

  return {
    handle,
    /** The modes and passages of the version served now. */
    get modes() {
      return live.peek().modes;
    },
    get passages() {
      return live.peek().passages;
    },
    batching: !!options.batch,
    admin: adminToken !== undefined,
    /** The version served now (1, then one more at each swap) and the swap counters. */
    liveStats: () => ({ ...live.stats(), swaps }),
    /** The batcher's counters (batches, requests, refusals, timeouts, largest batch); undefined without --batch. */
    batchStats: () => live.peek().batcher?.stats(),
    close: () => live.close(),
  };
}

/**
 * Starts the service; resolves with the server once it listens (port 0: any free port). ERR_RANGE for a port outside
 * 0..65535, ERR_IO when it is taken or cannot be bound (the indexes are freed again).
 */
export async function startServer(options = {}) {
  const port = options.port ?? 8080;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new QuorumError('ERR_RANGE', `--port must be an integer in 0..65535, got '${options.port}'`);
  const service = await createSearchService(options);
  // Slow clients cannot hold a connection: the headers must arrive within headersTimeoutMs and the whole request
  // within requestTimeoutMs (408 with a JSON body), idle keep-alive connections close after 5 s.
  const server = createServer(
    {
      headersTimeout: options.headersTimeoutMs ?? 10_000,
      requestTimeout: options.requestTimeoutMs ?? 30_000,
      keepAliveTimeout: 5_000,
      connectionsCheckingInterval: Math.min(1_000, options.headersTimeoutMs ?? 1_000),
    },
    (req, res) => void service.handle(req, res),
  );
  // Requests Node's parser refuses before the handler sees them (a request line or headers over its 16 KiB limit,
  // malformed HTTP) get a JSON body like every other error, not an empty one.
  server.on('clientError', (err, socket) => {
    if (!socket.writable) return socket.destroy();
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    const body =
      status === 431 ? errorBody('ERR_ARG', 'the request line or headers are too long (16 KiB at most)')
      : status === 408 ? errorBody('ERR_TIMEOUT', 'the request did not arrive in time')
      : errorBody('ERR_ARG', `malformed request: ${err.code ?? err.message}`);
    const reason = status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request';
    socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  });
  server.on('close', () => service.close());
  try {
    await new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, options.host ?? '127.0.0.1', resolve);
    });
  } catch (e) {
    await service.close();
    const what = e.code === 'EADDRINUSE' ? 'is in use' : e.code === 'EACCES' ? 'needs more privileges' : `cannot be bound (${e.code ?? e.message})`;
    throw new QuorumError('ERR_IO', `port ${port} on ${options.host ?? '127.0.0.1'} ${what}`);
  }
  return { server, service, url: `http://${options.host ?? '127.0.0.1'}:${server.address().port}` };
}

/** The command line: every startup error is one line `quorum-server: ERR_...: message` and exit status 1. */
async function main(argv) {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        data: { type: 'string' },
        model: { type: 'string' },
        muf: { type: 'string' },
        port: { type: 'string', default: '8080' },
        host: { type: 'string', default: '127.0.0.1' },
        batch: { type: 'boolean', default: false },
        quantize: { type: 'string' },
      },
    }));
  } catch (e) {
    throw new QuorumError('ERR_ARG', `${e.message.replace(/\. To specify .*$/s, '')} (options: --data DIR, --model DIR, --muf DIR, --port N, --host ADDR, --batch, --quantize int8)`);
  }
  const port = /^\d+$/.test(values.port) ? Number(values.port) : Number.NaN;
  if (!(port >= 0 && port <= 65535)) throw new QuorumError('ERR_RANGE', `--port must be an integer in 0..65535, got '${values.port}'`);
  const { url, service, server } = await startServer({ ...values, port });
  // SIGTERM / SIGINT: stop taking connections, let the requests in flight finish (at most 10 s), free everything.
  let stopping = false;
  const stop = (signal) => {
    if (stopping) return;
    stopping = true;
    console.log(`quorum-server: ${signal}: finishing the requests in flight`);
    const deadline = setTimeout(() => {
      process.stderr.write('quorum-server: ERR_TIMEOUT: requests still running after 10 s; exiting\n');
      process.exit(1);
    }, 10_000);
    deadline.unref();
    server.close(() => void service.close().then(() => process.exit(0)));
    server.closeIdleConnections();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  console.log(`quorum search service on ${url} (${service.passages} passages; modes ${service.modes.join(', ')}${service.batching ? '; questions batched' : ''}${service.admin ? '; admin routes on' : ''})`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).catch((e) => {
    const line = e instanceof QuorumError ? `${e.code}: ${e.message}` : `ERR_INTERNAL: ${e?.message ?? e}`;
    process.stderr.write(`quorum-server: ${line.split('\n')[0]}\n`);
    process.exit(1);
  });
}
