// examples/server: the HTTP service over the embedded benchmark (BM25, dense with bigint faiss ids, hybrid, DPR-MUF),
// its QuorumError -> HTTP status mapping, and the short form of its load test. The example imports the package by
// name, which resolves to the compiled dist/ (npm run build:ts; the README's test command builds it first).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { mufTrainCommand } from '../lib/methods/muf/cli.js';
import { packageRoot } from '../lib/native.js';

const root = mkdtempSync(join(tmpdir(), 'quorum-server-'));
const mufDir = join(root, 'muf');
const mini = join(packageRoot, 'data', 'multidomain-mini');
let url = '';
let stop: () => void = () => undefined;

beforeAll(async () => {
  if (!existsSync(join(packageRoot, 'dist', 'lib', 'index.js'))) throw new Error('examples/server imports the compiled package: run npm run build:ts first');
  // A small DPR-MUF over the shipped multi-task model: one expert per task (covid, selqa), small heads.
  const muf = await mufTrainCommand(
    { data: mini, experts: ['default:covid', 'default:selqa'], out: mufDir, members: 4, hidden: 32, layers: 1, epochs: 3, batch: 128, lr: 1e-3, hardNegatives: 1, topL: 50, hitTopK: 1, seed: 7 },
    () => undefined,
  );
  muf?.dispose();
  const { startServer } = (await import(join(packageRoot, 'examples', 'server', 'server.mjs'))) as {
    startServer(o: object): Promise<{ server: { close(): void }; url: string }>;
  };
  const started = await startServer({ muf: mufDir, port: 0 });
  url = started.url;
  stop = () => started.server.close();
}, 300_000);
afterAll(() => {
  stop();
  rmSync(root, { recursive: true, force: true });
});

async function get(path: string, method = 'GET'): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(url + path, { method });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}
type Hit = { id: string; row?: string; score: number };

describe('example search server', () => {
  it('answers every mode with the passages of the embedded benchmark', async () => {
    const health = await get('/health');
    expect(health).toEqual({ status: 200, body: { ok: true, passages: 3014, modes: ['bm25', 'dense', 'hybrid', 'muf'], version: 1 } });
    const corpusIds = readFileSync(join(mini, 'corpus.jsonl'), 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { _id: string })._id);
    const q = encodeURIComponent('what is the incubation period of the coronavirus');
    for (const mode of ['bm25', 'dense', 'hybrid', 'muf']) {
      const r = await get(`/search?mode=${mode}&k=5&q=${q}`);
      expect(r.status, mode).toBe(200);
      const hits = r.body.hits as Hit[];
      expect(hits, mode).toHaveLength(5);
      expect(hits.every((h, i) => corpusIds.includes(h.id) && (i === 0 || h.score <= hits[i - 1]!.score)), mode).toBe(true);
    }
    // Dense ids are faiss's 64-bit integers: sent as decimal strings, each the row of its passage.
    const dense = (await get(`/search?mode=dense&k=3&q=${q}`)).body.hits as Hit[];
    for (const h of dense) expect(corpusIds[Number(h.row)]).toBe(h.id);
    expect(typeof dense[0]!.row).toBe('string');
    const muf = (await get(`/search?mode=muf&k=3&q=${q}`)).body;
    expect(Object.keys(muf.confidence as object)).toEqual(['covid', 'selqa']);
    expect(muf.abstained).toBeUndefined();
    // Abstention: no expert reaches 1, so BM25 answers (or nobody, with fallback=none); every expert reaches 0.
    const bm25 = (await get(`/search?mode=bm25&k=3&q=${q}`)).body.hits as Hit[];
    const fell = (await get(`/search?mode=muf&k=3&abstain=1&q=${q}`)).body;
    expect(fell.abstained).toBe(true);
    expect((fell.hits as Hit[]).map((h) => h.id)).toEqual(bm25.map((h) => h.id));
    expect((await get(`/search?mode=muf&k=3&abstain=1&fallback=none&q=${q}`)).body.hits).toEqual([]);
    expect((await get(`/search?mode=muf&k=3&abstain=0&q=${q}`)).body.hits).toEqual(muf.hits);
    expect((await get(`/search?mode=muf&k=3&abstain=2&q=${q}`)).status).toBe(400);
    expect((await get(`/search?mode=muf&k=3&abstain=0.5&fallback=maybe&q=${q}`)).status).toBe(400);
  });

  it('--quantize int8: dense and MUF over int8 codes answer with (nearly) the f32 server\'s passages', async () => {
    const { startServer } = (await import(join(packageRoot, 'examples', 'server', 'server.mjs'))) as {
      startServer(o: object): Promise<{ server: { close(): void }; url: string }>;
    };
    const s = await startServer({ muf: mufDir, port: 0, quantize: 'int8' });
    try {
      for (const question of ['what is the incubation period of the coronavirus', 'who wrote the declaration of independence']) {
        const q = encodeURIComponent(question);
        for (const mode of ['dense', 'muf']) {
          const a = ((await get(`/search?mode=${mode}&k=10&q=${q}`)).body.hits as Hit[]).map((h) => h.id);
          const r = await fetch(`${s.url}/search?mode=${mode}&k=10&q=${q}`);
          expect(r.status).toBe(200);
          const b = ((await r.json()) as { hits: Hit[] }).hits.map((h) => h.id);
          expect(b.filter((id) => a.includes(id)).length, mode).toBeGreaterThanOrEqual(8);
        }
      }
    } finally {
      s.server.close();
    }
    await expect(startServer({ port: 0, quantize: 'binary' })).rejects.toMatchObject({ code: 'ERR_ARG' });
  }, 120_000);

  it('filter=JSON keeps every mode inside the matching passages (inside the search, not after it)', async () => {
    const corpus = readFileSync(join(mini, 'corpus.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { _id: string; title: string });
    const titleOf = new Map(corpus.map((p) => [p._id, p.title]));
    // Two titles: a football one and another; the question is about football, the filter allows both.
    const titles = ['Super Bowl 50', corpus.find((p) => p.title && p.title !== 'Super Bowl 50')!.title];
    const filter = encodeURIComponent(JSON.stringify({ field: 'title', in: titles }));
    const q = encodeURIComponent('who won the game');
    for (const mode of ['bm25', 'dense', 'hybrid', 'muf']) {
      const r = await get(`/search?mode=${mode}&k=5&filter=${filter}&q=${q}`);
      expect(r.status, mode).toBe(200);
      const hits = r.body.hits as Hit[];
      expect(hits.length, mode).toBeGreaterThan(0);
      for (const h of hits) expect(titles, mode).toContain(titleOf.get(h.id));
    }
    // Dense, filtered inside the search: as many hits as asked while the filter allows that many.
    expect(((await get(`/search?mode=dense&k=5&filter=${filter}&q=${q}`)).body.hits as Hit[]).length).toBe(5);
    const nothing = encodeURIComponent(JSON.stringify({ field: 'title', eq: 'no such title' }));
    expect((await get(`/search?mode=dense&k=5&filter=${nothing}&q=${q}`)).body.hits).toEqual([]);
    const bad = await get(`/search?mode=dense&k=5&filter=${encodeURIComponent('{"field":"title"')}&q=${q}`);
    expect(bad.status).toBe(400);
    expect((bad.body.error as { code: string }).code).toBe('ERR_ARG');
    expect((await get(`/search?mode=bm25&k=5&filter=${encodeURIComponent('{"field":"title","near":1}')}&q=${q}`)).status).toBe(400);
  });

  it('maps QuorumError codes to HTTP statuses with the message as JSON', async () => {
    const cases: Array<[string, number, string]> = [
      ['/search?mode=bm25', 400, 'ERR_ARG'],
      ['/search?q=x&k=0', 400, 'ERR_RANGE'],
      ['/search?q=x&k=abc', 400, 'ERR_RANGE'],
      ['/search?q=x&k=101', 400, 'ERR_RANGE'],
      ['/search?q=x&mode=splade', 400, 'ERR_ARG'],
      [`/search?q=${'a'.repeat(2001)}`, 400, 'ERR_RANGE'],
      ['/search?q=x&mode=dense&task=nope', 400, 'ERR_ARG'],
      ['/elsewhere', 404, 'ERR_NOT_FOUND'],
    ];
    for (const [path, status, code] of cases) {
      const r = await get(path);
      expect([r.status, (r.body.error as { code?: string } | undefined)?.code], path).toEqual([status, code]);
      expect((r.body.error as { message: string }).message.length).toBeGreaterThan(5);
    }
    expect((await get('/search?q=x', 'POST')).status).toBe(405);
    // A request target no URL parser accepts (a client that sends "http://[") is the client's error: 400, not 500.
    const { request } = await import('node:net').then(async (net) => {
      const port = Number(new URL(url).port);
      const text = await new Promise<string>((done, fail) => {
        const s = net.connect(port, '127.0.0.1', () => s.end('GET http://[ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
        let b = '';
        s.on('data', (d) => (b += String(d)));
        s.on('close', () => done(b));
        s.on('error', fail);
      });
      return { request: text };
    });
    expect(request.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    expect(request).toContain('"code":"ERR_ARG"');
  });

  it('the hybrid uses the alpha stored with the model (tuned on its dev split): per task, BM25 alone where the dense side did not help', async () => {
    const card = JSON.parse(readFileSync(join(packageRoot, 'data', 'models', 'default', 'model.json'), 'utf8')) as { hybrid: { alpha: number | null; byTask: Record<string, number | null> } };
    const q = encodeURIComponent('what is the incubation period of the coronavirus');
    const all = (await get(`/search?mode=hybrid&k=5&q=${q}`)).body;
    expect(all.alpha).toBe(card.hybrid.alpha);
    for (const task of ['covid', 'selqa']) {
      const r = (await get(`/search?mode=hybrid&k=5&task=${task}&q=${q}`)).body;
      expect(r.alpha, task).toBe(card.hybrid.byTask[task]);
      if (r.alpha === null) expect((r.hits as Hit[]).map((h) => h.id), task).toEqual(((await get(`/search?mode=bm25&k=5&q=${q}`)).body.hits as Hit[]).map((h) => h.id));
    }
  });

  it('POST /admin/swap swaps the dataset under concurrent requests: none lost, each answered whole by one version', async () => {
    // Off by default: the server above has no token.
    expect((await get('/admin/swap', 'POST')).status).toBe(404);
    // Version 2's dataset: the first 600 passages, ids prefixed, so that every hit names the version that found it.
    const v2 = join(root, 'v2');
    mkdirSync(v2, { recursive: true });
    const lines = readFileSync(join(mini, 'corpus.jsonl'), 'utf8').trim().split('\n').slice(0, 600);
    writeFileSync(join(v2, 'corpus.jsonl'), lines.map((l) => { const p = JSON.parse(l) as { _id: string }; return JSON.stringify({ ...p, _id: `v2-${p._id}` }); }).join('\n') + '\n');
    const token = 'a-test-token-of-32-characters-xx';
    const { startServer } = (await import(join(packageRoot, 'examples', 'server', 'server.mjs'))) as {
      startServer(o: object): Promise<{ server: { close(): void }; url: string; service: { liveStats(): { version: number; inFlight: number; retiring: number; swaps: number } } }>;
    };
    const s = await startServer({ port: 0, batch: true, adminToken: token });
    const call = async (path: string, init: RequestInit = {}) => {
      const r = await fetch(s.url + path, init);
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    };
    const swap = (body: unknown, auth = `Bearer ${token}`) => call('/admin/swap', { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    try {
      // Refused: no token, a wrong one, GET, bad bodies, a missing directory; the version stays 1.
      const unauth = await swap({}, '');
      expect([unauth.status, (unauth.body.error as { code: string }).code]).toEqual([401, 'ERR_AUTH']);
      expect((await swap({}, `Bearer ${token.slice(1)}x`)).status).toBe(401);
      expect((await call('/admin/swap', { headers: { authorization: `Bearer ${token}` } })).status).toBe(405);
      expect((await swap({ bogus: 1 })).status).toBe(400);
      expect((await swap({ data: join(root, 'nowhere') })).status).toBe(400);
      expect((await call('/health')).body.version).toBe(1);

      const questions = ['incubation period of the coronavirus', 'who wrote hamlet', 'symptoms of covid-19', 'super bowl 50', 'vaccines and mRNA', 'when was the war'];
      const modes = ['bm25', 'dense', 'hybrid'];
      const path = (i: number) => `/search?mode=${modes[i % 3]}&k=5&q=${encodeURIComponent(questions[i % questions.length]!)}`;
      const ids = (b: Record<string, unknown>) => (b.hits as Hit[]).map((h) => h.id);
      const expected = new Map<string, string[]>();
      for (let i = 0; i < 18; i++) expected.set(`1 ${path(i)}`, ids((await call(path(i))).body));

      // Eight clients send requests until the swap has answered and each has seen version 2; meanwhile the swap.
      const answers: Array<{ i: number; status: number; body: Record<string, unknown> }> = [];
      let swapped = false;
      let next = 0;
      const client = async () => {
        for (let seen2 = 0; !swapped || seen2 < 3; ) {
          const i = next++;
          const r = await call(path(i));
          answers.push({ i, ...r });
          if (r.body.version === 2) seen2++;
        }
      };
      const clients = Array.from({ length: 8 }, client);
      await new Promise((r) => setTimeout(r, 100));
      const [done, second] = await Promise.all([swap({ data: v2 }), (async () => { await new Promise((r) => setTimeout(r, 20)); return swap({ data: v2 }); })()]);
      swapped = true;
      await Promise.all(clients);
      expect(done.status).toBe(200);
      expect(done.body).toMatchObject({ version: 2, passages: 600, modes });
      expect(second.status).toBe(409); // one swap at a time
      for (let i = 0; i < 18; i++) expected.set(`2 ${path(i)}`, ids((await call(path(i))).body));
      // Every request answered, by one version, with exactly that version's hits.
      const byVersion = [0, 0, 0];
      for (const a of answers) {
        expect(a.status, JSON.stringify(a.body)).toBe(200);
        const v = a.body.version as number;
        byVersion[v]!++;
        expect(ids(a.body), `${v} ${path(a.i)}`).toEqual(expected.get(`${v} ${path(a.i % 18)}`));
        expect(ids(a.body).every((id) => id.startsWith('v2-') === (v === 2))).toBe(true);
      }
      expect(byVersion[1]).toBeGreaterThan(8);
      expect(byVersion[2]).toBeGreaterThanOrEqual(24);
      // The old version has been freed; a failed swap leaves version 2 serving.
      expect(s.service.liveStats()).toMatchObject({ version: 2, retiring: 0, swaps: 1 });
      expect((await swap({ model: join(root, 'nowhere') })).status).toBe(400);
      expect((await call('/health')).body).toMatchObject({ version: 2, passages: 600 });
    } finally {
      s.server.close();
    }
  }, 180_000);

  it('slow clients get 408 with a JSON body; SIGTERM lets the request in flight finish and exits 0', async () => {
    const { startServer } = (await import(join(packageRoot, 'examples', 'server', 'server.mjs'))) as {
      startServer(o: object): Promise<{ server: { close(): void }; url: string }>;
    };
    const slow = await startServer({ port: 0, headersTimeoutMs: 300 });
    try {
      const { connect } = await import('node:net');
      const reply = await new Promise<string>((resolve, reject) => {
        const sock = connect(Number(new URL(slow.url).port), '127.0.0.1', () => sock.write('GET /health HTTP/1.1\r\nHost: x\r\n'));
        let got = '';
        sock.on('data', (d) => (got += d));
        sock.on('close', () => resolve(got));
        sock.on('error', reject);
        setTimeout(() => reject(new Error(`no reply: ${got}`)), 10_000);
      });
      expect(reply.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
      expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4))).toMatchObject({ error: { code: 'ERR_TIMEOUT' } });
    } finally {
      slow.server.close();
    }
    const child = spawn(process.execPath, [join(packageRoot, 'examples', 'server', 'server.mjs'), '--port', '0'], { cwd: packageRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const deadline = Date.now() + 120_000;
    while (!/on (http:\S+)/.test(out) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const base = /on (http:\S+)/.exec(out)![1]!;
    const inFlight = fetch(`${base}/search?mode=hybrid&k=5&q=${encodeURIComponent('symptoms of covid-19')}`);
    await new Promise((r) => setTimeout(r, 5));
    child.kill('SIGTERM');
    const r = await inFlight;
    expect(r.status).toBe(200);
    expect(((await r.json()) as { hits: unknown[] }).hits).toHaveLength(5);
    expect(await exited).toBe(0);
    expect(out).toContain('SIGTERM: finishing the requests in flight');
  }, 180_000);

  it('--batch: concurrent dense questions share batches and get the hits they get alone', async () => {
    const { startServer } = (await import(join(packageRoot, 'examples', 'server', 'server.mjs'))) as {
      startServer(o: object): Promise<{ server: { close(): void }; url: string; service: { batching: boolean; batchStats(): { batches: number; largestBatch: number } } }>;
    };
    const batched = await startServer({ port: 0, batch: true, batchWaitMs: 20, muf: mufDir });
    try {
      expect(batched.service.batching).toBe(true);
      const questions = ['incubation period of the coronavirus', 'who wrote hamlet', 'symptoms of covid-19', 'how tall is mount everest', 'vaccines and mRNA'];
      const alone = await Promise.all(questions.map((t) => get(`/search?mode=dense&k=${3 + (t.length % 3)}&q=${encodeURIComponent(t)}`)));
      const together = await Promise.all(questions.map(async (t) => {
        const r = await fetch(`${batched.url}/search?mode=dense&k=${3 + (t.length % 3)}&q=${encodeURIComponent(t)}`);
        return { status: r.status, body: (await r.json()) as Record<string, unknown> };
      }));
      together.forEach((r, i) => {
        expect(r.status).toBe(200);
        const ids = (x: { body: Record<string, unknown> }) => (x.body.hits as Hit[]).map((h) => h.id);
        expect(ids(r), questions[i]).toEqual(ids(alone[i]!));
        (r.body.hits as Hit[]).forEach((h, j) => expect(h.score).toBeCloseTo((alone[i]!.body.hits as Hit[])[j]!.score, 5));
      });
      // They arrived within the 20 ms window: fewer batches than questions.
      const stats = batched.service.batchStats();
      expect(stats.largestBatch).toBeGreaterThan(1);
      expect(stats.batches).toBeLessThan(questions.length);
      // MUF questions are batched too, with the hits and confidences they get alone.
      const mufAlone = await Promise.all(questions.map((t) => get(`/search?mode=muf&k=4&q=${encodeURIComponent(t)}`)));
      const mufTogether = await Promise.all(questions.map(async (t) => (await fetch(`${batched.url}/search?mode=muf&k=4&q=${encodeURIComponent(t)}`)).json() as Promise<Record<string, unknown>>));
      mufTogether.forEach((r, i) => {
        expect((r.hits as Hit[]).map((h) => h.id), questions[i]).toEqual((mufAlone[i]!.body.hits as Hit[]).map((h) => h.id));
        for (const [name, c] of Object.entries(r.confidence as Record<string, number>)) expect(c).toBeCloseTo((mufAlone[i]!.body.confidence as Record<string, number>)[name]!, 4);
      });
    } finally {
      batched.server.close();
    }
  }, 120_000);

  it('serves dense and MUF without libtorch or ONNX Runtime in the process', async () => {
    const child = spawn(process.execPath, [join(packageRoot, 'examples', 'server', 'server.mjs'), '--muf', mufDir, '--port', '0'], { cwd: packageRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /on (http:\/\/[^ ]+)/.exec(out);
          if (m) resolve(m[1]!);
        });
        child.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
      });
      for (const mode of ['dense', 'muf']) expect((await fetch(`${url}/search?mode=${mode}&k=3&q=covid%20symptoms`)).status, mode).toBe(200);
      const maps = readFileSync(`/proc/${child.pid}/maps`, 'utf8');
      expect({ torch: /libtorch|libc10/.test(maps), ort: /onnxruntime/.test(maps), sharedFaiss: /libfaiss\.so/.test(maps) }).toEqual({ torch: false, ort: false, sharedFaiss: false });
    } finally {
      child.kill();
    }
  }, 120_000);

  it('malformed requests are 4xx with a JSON body: invalid percent-encoding, a request line over 16 KiB', async () => {
    for (const q of ['%E0%A4%A', '%zz', 'ok&x=%']) {
      const r = await get(`/search?q=${q}`);
      expect([r.status, (r.body.error as { code: string }).code], q).toEqual([400, 'ERR_ARG']);
      expect((r.body.error as { message: string }).message).toMatch(/invalid percent-encoding/);
    }
    // A well-formed escape still searches.
    expect((await get(`/search?q=${encodeURIComponent('café ☕ 東京')}&mode=bm25`)).status).toBe(200);
    const long = await fetch(`${url}/search?q=${'a'.repeat(20_000)}`);
    expect(long.status).toBe(431);
    expect(((await long.json()) as { error: { code: string } }).error.code).toBe('ERR_ARG');
  });

  it('startup errors are one line with a code and exit status 1: missing directories, bad or busy port, unknown flag', () => {
    const start = (...args: string[]) => spawnSync(process.execPath, [join(packageRoot, 'examples', 'server', 'server.mjs'), ...args], { cwd: packageRoot, encoding: 'utf8', timeout: 180_000 });
    const busy = new URL(url).port;
    for (const [args, line] of [
      [['--data', join(root, 'nowhere')], /^quorum-server: ERR_IO: --data .*nowhere: no such directory$/],
      [['--muf', join(root, 'nowhere')], /^quorum-server: ERR_IO: --muf .*nowhere: no such directory$/],
      [['--port', 'eighty'], /^quorum-server: ERR_RANGE: --port must be an integer in 0\.\.65535, got 'eighty'$/],
      [['--port', '70000'], /^quorum-server: ERR_RANGE: --port/],
      [['--bogus'], /^quorum-server: ERR_ARG: Unknown option '--bogus'.* \(options: --data DIR/],
      [['--port', busy], new RegExp(`^quorum-server: ERR_IO: port ${busy} on 127\\.0\\.0\\.1 is in use$`)],
    ] as const) {
      const r = start(...args);
      expect([r.status, r.stdout], args.join(' ')).toEqual([1, '']);
      expect(r.stderr.trimEnd().split('\n'), args.join(' ')).toHaveLength(1);
      expect(r.stderr.trimEnd(), args.join(' ')).toMatch(line);
    }
  }, 240_000);

  it('the load test (short form) has no failed request', () => {
    const r = spawnSync(process.execPath, [join(packageRoot, 'examples', 'server', 'load-test.mjs'), '--seconds', '1', '--connections', '2', '--muf', mufDir, '--json', join(root, 'load.json')], {
      cwd: packageRoot,
      encoding: 'utf8',
      timeout: 180_000,
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const rows = JSON.parse(readFileSync(join(root, 'load.json'), 'utf8')) as Array<{ mode: string; requests: number; errors: number; 'non-2xx': number; 'p99 ms': number }>;
    expect(rows.map((x) => x.mode)).toEqual(['bm25', 'dense', 'hybrid', 'muf']);
    for (const row of rows) expect([row.mode, row.errors, row['non-2xx'], row.requests > 0]).toEqual([row.mode, 0, 0, true]);
  });
});
