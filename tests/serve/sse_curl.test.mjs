// The server-sent events' framing byte for byte, as curl receives them: every event one `data: ...` line and a
// blank line, each JSON, one id, the usage chunk last when asked for, then `data: [DONE]`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { paths, startServer, watchdog } from './lib/server.mjs';

watchdog(90000);

let server;
before(async () => { server = await startServer(['--model', paths.denseModel]); });
after(async () => {
  if (!server) return;
  const { code } = await server.stop();
  assert.equal(code, 0, 'the server exits 0 on SIGTERM');
});

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'strata-sse-'));

// curl -sN, the response headers to a file, the body as bytes.
function curl(route, body, extra = []) {
  const headers = path.join(tmp, `headers-${Math.random().toString(36).slice(2)}`);
  return new Promise((resolve, reject) => {
    execFile('curl', ['-sN', '--max-time', '30', '-D', headers, '-H', 'Content-Type: application/json',
                      '-d', JSON.stringify(body), ...extra, server.url + route],
             { encoding: 'buffer', timeout: 40000, maxBuffer: 16 << 20 }, (err, stdout) => {
      if (err) return reject(new Error(`curl ${route}: ${err.message}`));
      resolve({ headers: fs.readFileSync(headers, 'utf8'), body: stdout });
    });
  });
}

// Splits an event stream into its events, failing on anything but `data: <payload>\n\n`.
function events(bytes) {
  const text = bytes.toString('utf8');
  assert.ok(!text.includes('\r'), 'LF line ends');
  assert.ok(text.endsWith('\n\n'), 'the stream ends with a whole event');
  const blocks = text.slice(0, -2).split('\n\n');
  return blocks.map((block, i) => {
    assert.ok(!block.includes('\n'), `event ${i} is one line: ${JSON.stringify(block)}`);
    assert.ok(block.startsWith('data: '), `event ${i} is a data line: ${JSON.stringify(block)}`);
    return block.slice(6);
  });
}

function checkStream(payloads, { object, usageWanted }) {
  assert.equal(payloads.at(-1), '[DONE]', 'the last event is data: [DONE]');
  assert.equal(payloads.filter((p) => p === '[DONE]').length, 1, 'one [DONE]');
  const chunks = payloads.slice(0, -1).map((p, i) => {
    try { return JSON.parse(p); } catch (e) { assert.fail(`event ${i} is not JSON: ${p}`); }
  });
  assert.ok(chunks.length >= 3, `several chunks, got ${chunks.length}`);
  const first = chunks[0];
  for (const [i, c] of chunks.entries()) {
    assert.equal(c.id, first.id, `chunk ${i}: the stream's id`);
    assert.equal(c.object, object, `chunk ${i}: object`);
    assert.equal(c.created, first.created, `chunk ${i}: created`);
    assert.equal(c.model, first.model, `chunk ${i}: model`);
    assert.ok(Array.isArray(c.choices), `chunk ${i}: choices`);
  }
  const usageChunks = chunks.filter((c) => c.usage);
  const finishes = chunks.flatMap((c) => c.choices.filter((ch) => ch.finish_reason).map((ch) => ch.finish_reason));
  assert.equal(finishes.length, 1, `one finish_reason in the stream, got ${finishes}`);
  if (usageWanted) {
    assert.equal(usageChunks.length, 1, 'one usage chunk');
    const last = chunks.at(-1);
    assert.ok(last.usage, 'the usage chunk is the last before [DONE]');
    assert.deepEqual(last.choices, [], 'the usage chunk has no choices');
    assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + last.usage.completion_tokens);
    const pieces = chunks.filter((c) => c.choices.length &&
      (c.choices[0].delta?.content || c.choices[0].text)).length;
    assert.ok(last.usage.completion_tokens >= pieces, `completion_tokens ${last.usage.completion_tokens} >= ${pieces} pieces`);
  } else {
    for (const c of chunks) assert.ok(c.usage === undefined || c.usage === null, 'no usage unless asked for');
  }
  return chunks;
}

test('chat stream: framing, ids, usage, [DONE]', { timeout: 40000 }, async () => {
  const { headers, body } = await curl('/v1/chat/completions', {
    messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 20, temperature: 0, stream: true,
    stream_options: { include_usage: true } });
  assert.match(headers, /^HTTP\/1\.1 200/);
  assert.match(headers, /^content-type: text\/event-stream/im);
  const chunks = checkStream(events(body), { object: 'chat.completion.chunk', usageWanted: true });
  assert.equal(chunks[0].choices[0].delta.role, 'assistant', 'the first delta names the role');
  const text = body.toString('utf8');
  console.log(`curl -sN /v1/chat/completions (stream, include_usage): ${chunks.length + 1} events\n` +
              text.split('\n\n').slice(0, 3).join('\n\n') + '\n\n...\n\n' +
              text.split('\n\n').slice(-3).join('\n\n'));
});

test('chat stream without include_usage has no usage chunk', { timeout: 40000 }, async () => {
  const { body } = await curl('/v1/chat/completions', {
    messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 12, temperature: 0, stream: true });
  checkStream(events(body), { object: 'chat.completion.chunk', usageWanted: false });
});

test('text completion stream: framing, ids, usage, [DONE]', { timeout: 40000 }, async () => {
  const { headers, body } = await curl('/v1/completions', {
    prompt: 'The little dog', max_tokens: 20, temperature: 0, stream: true, stream_options: { include_usage: true } });
  assert.match(headers, /^content-type: text\/event-stream/im);
  checkStream(events(body), { object: 'text_completion', usageWanted: true });
});

test('the plain answer is one JSON body', { timeout: 40000 }, async () => {
  const { headers, body } = await curl('/v1/chat/completions', {
    messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 20, temperature: 0 });
  assert.match(headers, /^content-type: application\/json/im);
  const r = JSON.parse(body.toString('utf8'));
  assert.equal(r.object, 'chat.completion');
  console.log(`curl /v1/chat/completions (plain): ${body.toString('utf8')}`);
});

test('an error before the stream starts is a plain JSON error, not an event stream', { timeout: 40000 }, async () => {
  const { headers, body } = await curl('/v1/chat/completions', { messages: 42, stream: true });
  assert.match(headers, /^HTTP\/1\.1 400/);
  assert.match(headers, /^content-type: application\/json/im);
  const e = JSON.parse(body.toString('utf8'));
  assert.equal(typeof e.error.message, 'string');
  assert.ok('type' in e.error && 'param' in e.error && 'code' in e.error, `OpenAI's error fields: ${body}`);
});
