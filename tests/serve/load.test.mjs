// A bounded load test: 8 clients, each sending 20 requests back to back, on stories260K. Every request has its
// own prompt and length; greedy ones and seeded sampled ones, streamed and not. Each answer must equal the one the
// same request got alone (none lost, none mixed up). Prints throughput and latency percentiles and writes them to
// serve-load.json in the working folder.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { paths, startServer, watchdog, percentile } from './lib/server.mjs';

const CLIENTS = 8;
const PER_CLIENT = 20;

watchdog(280000);

const NAMES = ['Lily', 'Tom', 'Sue', 'Ben', 'Mia', 'Max', 'Anna', 'Sam', 'Zoe', 'Tim'];
const THINGS = ['a red ball', 'a big tree', 'a small cat', 'a blue car', 'a funny hat', 'a shiny stone',
                'a tall tower', 'a warm cake', 'a yellow bird', 'a happy dog', 'a green frog', 'an old boat',
                'a soft bear', 'a little box', 'a bright star', 'a cold lake'];

// The request of client c's i-th turn: its own prompt and max_tokens (the tiny model's greedy stories converge, so
// the length keeps answers apart); half sample with their own seed; odd ones stream.
function requestOf(c, i) {
  const k = c * PER_CLIENT + i;
  const sampled = k % 4 >= 2;
  return {
    key: `c${c}r${i}`,
    stream: k % 2 === 1,
    body: {
      messages: [{ role: 'user',
                   content: `${NAMES[k % NAMES.length]} saw ${THINGS[Math.floor(k / NAMES.length) % THINGS.length]} (${k}).` }],
      max_tokens: 12 + (k % 17),
      temperature: sampled ? 0.9 : 0,
      ...(sampled ? { seed: 1000 + k } : {}),
    },
  };
}

async function run(client, req) {
  const t0 = performance.now();
  if (!req.stream) {
    const r = await client.chat.completions.create(req.body);
    const ms = performance.now() - t0;
    return { text: r.choices[0].message.content, finish: r.choices[0].finish_reason,
             tokens: r.usage.completion_tokens, ms, ttft: null };
  }
  const s = await client.chat.completions.create({ ...req.body, stream: true, stream_options: { include_usage: true } });
  let text = '', finish = null, tokens = null, ttft = null;
  const ids = new Set();
  for await (const chunk of s) {
    ids.add(chunk.id);
    if (chunk.usage) tokens = chunk.usage.completion_tokens;
    const ch = chunk.choices[0];
    if (ch?.delta?.content) {
      if (ttft === null) ttft = performance.now() - t0;
      text += ch.delta.content;
    }
    if (ch?.finish_reason) finish = ch.finish_reason;
  }
  assert.equal(ids.size, 1, `${req.key}: one id across the stream`);
  return { text, finish, tokens, ms: performance.now() - t0, ttft };
}

let server;
before(async () => { server = await startServer(['--model', paths.denseModel, '-o', 'serve.queue=64']); });
after(async () => {
  if (!server) return;
  const { code } = await server.stop();
  assert.equal(code, 0, 'the server exits 0 on SIGTERM');
});

test(`${CLIENTS} clients x ${PER_CLIENT} requests: none lost, none mixed up`, { timeout: 260000 }, async () => {
  const client = () => new OpenAI({ baseURL: server.url + '/v1', apiKey: 'x', timeout: 60000, maxRetries: 0 });
  const all = [];
  for (let c = 0; c < CLIENTS; c++) for (let i = 0; i < PER_CLIENT; i++) all.push(requestOf(c, i));

  // Alone: one request at a time, the reference answers.
  const alone = new Map();
  const soloClient = client();
  const soloStart = performance.now();
  for (const req of all) alone.set(req.key, await run(soloClient, req));
  const soloSeconds = (performance.now() - soloStart) / 1000;
  const distinct = new Set([...alone.values()].map((r) => r.text)).size;
  assert.ok(distinct >= all.length * 0.8, `the requests give distinct answers (${distinct} of ${all.length}), ` +
                                          'so a mixed-up answer would show');

  // Together: 8 clients at once, each its own connection pool, each sending its 20 back to back.
  const results = new Map();
  const failures = [];
  const start = performance.now();
  await Promise.all(Array.from({ length: CLIENTS }, async (_, c) => {
    const cl = client();
    for (let i = 0; i < PER_CLIENT; i++) {
      const req = requestOf(c, i);
      try {
        results.set(req.key, await run(cl, req));
      } catch (e) {
        failures.push(`${req.key}: ${e.status ?? ''} ${e.message}`);
      }
    }
  }));
  const seconds = (performance.now() - start) / 1000;

  assert.deepEqual(failures, [], 'no request failed');
  assert.equal(results.size, all.length, 'every request answered');
  const mixed = [];
  for (const req of all) {
    const got = results.get(req.key), want = alone.get(req.key);
    if (got.text !== want.text || got.finish !== want.finish || got.tokens !== want.tokens) {
      mixed.push(`${req.key} (${req.stream ? 'stream' : 'plain'}, t=${req.body.temperature}): ` +
                 `alone ${JSON.stringify(want.text)}, under load ${JSON.stringify(got.text)}`);
    }
  }
  assert.deepEqual(mixed, [], 'every answer under load equals the same request alone');

  const lat = [...results.values()].map((r) => r.ms).sort((a, b) => a - b);
  const ttft = [...results.values()].filter((r) => r.ttft !== null).map((r) => r.ttft).sort((a, b) => a - b);
  const tokens = [...results.values()].reduce((s, r) => s + r.tokens, 0);
  const figures = {
    clients: CLIENTS, requests_per_client: PER_CLIENT, requests: results.size, lost: all.length - results.size,
    mixed_up: mixed.length, completion_tokens: tokens,
    seconds: +seconds.toFixed(2), requests_per_s: +(results.size / seconds).toFixed(2),
    completion_tokens_per_s: +(tokens / seconds).toFixed(1),
    latency_ms: { p50: Math.round(percentile(lat, 50)), p90: Math.round(percentile(lat, 90)),
                  p99: Math.round(percentile(lat, 99)), max: Math.round(lat.at(-1)) },
    ttft_ms_streamed: { p50: Math.round(percentile(ttft, 50)), p90: Math.round(percentile(ttft, 90)),
                        max: Math.round(ttft.at(-1)) },
    alone_seconds: +soloSeconds.toFixed(2), distinct_answers: distinct,
  };
  const out = path.join(paths.outDir, 'serve-load.json');
  fs.writeFileSync(out, JSON.stringify(figures, null, 2) + '\n');
  console.log(`load: ${figures.requests} requests from ${CLIENTS} clients in ${figures.seconds} s ` +
              `(${figures.requests_per_s} req/s, ${figures.completion_tokens_per_s} completion tokens/s), ` +
              `lost ${figures.lost}, mixed up ${figures.mixed_up}; latency ms p50 ${figures.latency_ms.p50} ` +
              `p90 ${figures.latency_ms.p90} p99 ${figures.latency_ms.p99} max ${figures.latency_ms.max}; ` +
              `streamed TTFT ms p50 ${figures.ttft_ms_streamed.p50} p90 ${figures.ttft_ms_streamed.p90}; ` +
              `the same ${all.length} one at a time: ${figures.alone_seconds} s`);
  console.log(`figures written to ${out}`);

  const live = await (await fetch(server.url + '/live', { signal: AbortSignal.timeout(5000) })).json();
  assert.ok(live.requests_total >= 2 * all.length, `/live counted the requests: ${live.requests_total}`);
  assert.equal(live.active, 0, 'nothing active once all answered');
  assert.equal(live.queue, 0, 'nothing queued once all answered');
});
