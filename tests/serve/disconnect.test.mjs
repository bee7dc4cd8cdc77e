// Clients that go away and requests that run too long: the server stops the work, stays healthy and serves the
// next request promptly. Also a full queue: 503 with Retry-After.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { paths, startServer, http, waitFor, watchdog } from './lib/server.mjs';

watchdog(170000);

// stories260K decodes a few hundred to a thousand tokens a second on a CI core, and its greedy story for this
// prompt has no end of text within 3000 tokens: many seconds of work, cut short only by what is tested.
const LONG = 3000;
const longChat = (extra = {}) => ({
  messages: [{ role: 'user', content: 'Tell me a very long story about a dragon.' }],
  max_tokens: LONG, temperature: 0, ...extra,
});

const live = async (url) => (await http(url, '/live', { timeoutMs: 5000 })).json;

async function stopServer(server) {
  const { code, signal } = await server.stop();
  assert.equal(signal, null, `the server died of ${signal}`);
  assert.equal(code, 0, `the server exits 0 on SIGTERM; output:\n${server.log()}`);
}

// Starts a long stream, reads a few chunks, and drops the connection.
async function abortMidStream(url) {
  const controller = new AbortController();
  const res = await fetch(url + '/v1/chat/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, signal: controller.signal,
    body: JSON.stringify(longChat({ stream: true })) });
  assert.equal(res.status, 200);
  const reader = res.body.getReader();
  let bytes = 0;
  while (bytes < 2000) {
    const { value, done } = await reader.read();
    assert.ok(!done, 'the stream ended before the client aborted it');
    bytes += value.length;
  }
  controller.abort();
  await reader.cancel().catch(() => {});
  return bytes;
}

test('a client that aborts mid-stream: the work stops, the next request is served promptly', { timeout: 60000 }, async () => {
  const server = await startServer(['--model', paths.denseModel]);
  try {
    const before = await live(server.url);
    const read = await abortMidStream(server.url);
    const abortedAt = Date.now();
    // The slot is freed: nothing active within a few seconds, and no more tokens counted after that.
    await waitFor('/live to show no active request', async () => (await live(server.url)).active === 0, { ms: 5000 });
    const freedMs = Date.now() - abortedAt;
    const a = await live(server.url);
    await new Promise((r) => setTimeout(r, 1000));
    const b = await live(server.url);
    assert.equal(b.tokens_total, a.tokens_total, 'no tokens generated after the client left');
    const generated = a.tokens_total - before.tokens_total;
    assert.ok(generated < LONG, `the aborted request stopped early (${generated} of ${LONG} tokens)`);

    const t0 = Date.now();
    const next = await http(server.url, '/v1/chat/completions', {
      body: { messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 8, temperature: 0 }, timeoutMs: 10000 });
    const nextMs = Date.now() - t0;
    assert.equal(next.status, 200, next.text);
    assert.ok(nextMs < 3000, `the next request is served promptly (${nextMs} ms)`);
    assert.equal((await http(server.url, '/health')).status, 200);
    console.log(`disconnect: read ${read} bytes, slot free ${freedMs} ms after the abort, ${generated} tokens ` +
                `generated in all, next request ${nextMs} ms`);
  } finally {
    await stopServer(server);
  }
});

test('a plain (not streamed) request whose client leaves is stopped too', { timeout: 60000 }, async () => {
  const server = await startServer(['--model', paths.denseModel]);
  try {
    const before = await live(server.url);
    const controller = new AbortController();
    const pending = fetch(server.url + '/v1/chat/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, signal: controller.signal,
      body: JSON.stringify(longChat()) }).catch((e) => e);
    await waitFor('the request to start', async () => (await live(server.url)).active === 1, { ms: 5000, every: 50 });
    await new Promise((r) => setTimeout(r, 300));
    controller.abort();
    assert.equal((await pending).name, 'AbortError');
    await waitFor('/live to show no active request', async () => (await live(server.url)).active === 0, { ms: 5000 });
    const generated = (await live(server.url)).tokens_total - before.tokens_total;
    assert.ok(generated < LONG, `the abandoned request stopped early (${generated} of ${LONG} tokens)`);
    console.log(`disconnect (plain): ${generated} tokens generated before the server noticed`);
  } finally {
    await stopServer(server);
  }
});

test('serve.request_timeout_s ends a long request', { timeout: 60000 }, async () => {
  const server = await startServer(['--model', paths.denseModel, '-o', 'serve.request_timeout_s=1']);
  try {
    for (const stream of [false, true]) {
      const t0 = Date.now();
      const body = longChat(stream ? { stream, stream_options: { include_usage: true } } : {});
      const r = await http(server.url, '/v1/chat/completions', { body, timeoutMs: 20000 });
      const ms = Date.now() - t0;
      assert.ok(ms < 4000, `stream=${stream}: it ends near the 1 s limit (${ms} ms)`);
      let detail;
      if (!stream) {
        // Either the partial answer cut short or an error: never the whole answer.
        if (r.status === 200) {
          assert.ok(r.json.usage.completion_tokens < LONG);
          detail = `200, finish_reason ${r.json.choices[0].finish_reason}, ${r.json.usage.completion_tokens} tokens`;
        } else {
          assert.ok(r.status >= 400, `status ${r.status}`);
          assert.equal(typeof r.json?.error?.message, 'string', r.text);
          detail = `${r.status} ${r.json.error.message}`;
        }
      } else {
        assert.equal(r.status, 200);
        assert.match(r.text, /data: \[DONE\]\n\n$/, 'the stream is closed properly');
        const chunks = r.text.trimEnd().split('\n\n').map((e) => e.slice(6)).filter((e) => e !== '[DONE]')
          .map((e) => JSON.parse(e));
        const usage = chunks.at(-1).usage;
        assert.ok(usage && usage.completion_tokens < LONG, `the stream was cut short: ${JSON.stringify(usage)}`);
        const finish = chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).filter(Boolean);
        detail = `stream ends with finish_reason ${finish.join(',')} after ${usage.completion_tokens} tokens`;
      }
      console.log(`timeout (stream=${stream}): ${ms} ms, ${detail}`);
    }
    await waitFor('/live to show no active request', async () => (await live(server.url)).active === 0, { ms: 3000 });
    const ok = await http(server.url, '/v1/chat/completions', {
      body: { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 8, temperature: 0 }, timeoutMs: 10000 });
    assert.equal(ok.status, 200, 'a short request within the limit is answered');
  } finally {
    await stopServer(server);
  }
});

test('a full queue answers 503 with Retry-After, and drains', { timeout: 60000 }, async () => {
  const server = await startServer(['--model', paths.denseModel, '-o', 'serve.queue=1']);
  try {
    const controllers = [];
    const started = [];
    // One request runs, one waits in the queue: the third finds no room.
    for (let i = 0; i < 2; i++) {
      const c = new AbortController();
      controllers.push(c);
      started.push(fetch(server.url + '/v1/chat/completions', {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, signal: c.signal,
        body: JSON.stringify(longChat()) }).catch((e) => e));
      await waitFor(`request ${i} to be taken`, async () => {
        const l = await live(server.url);
        return l.active + l.queue === i + 1;
      }, { ms: 5000, every: 50 });
    }
    const full = await http(server.url, '/v1/chat/completions', {
      body: { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 }, timeoutMs: 10000 });
    assert.equal(full.status, 503, full.text);
    assert.match(full.headers.get('retry-after') || '', /^\d+$/, 'a Retry-After in seconds');
    assert.equal(typeof full.json?.error?.message, 'string');
    console.log(`queue full: 503, Retry-After ${full.headers.get('retry-after')}, ${full.json.error.message}`);
    for (const c of controllers) c.abort();
    await Promise.all(started);
    await waitFor('the queue to drain', async () => {
      const l = await live(server.url);
      return l.active === 0 && l.queue === 0;
    }, { ms: 5000 });
    const ok = await http(server.url, '/v1/chat/completions', {
      body: { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 }, timeoutMs: 10000 });
    assert.equal(ok.status, 200);
  } finally {
    await stopServer(server);
  }
});
