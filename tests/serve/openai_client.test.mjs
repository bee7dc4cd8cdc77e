// `strata serve` through the official `openai` npm client: models, chat and text completions (plain and
// streamed), errors as the client's typed APIErrors, the API key, and the server's own JSON routes by fetch.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import OpenAI from 'openai';
import { paths, startServer, http, watchdog } from './lib/server.mjs';

watchdog(150000);

const PROMPT = 'Once upon a time';
let server;
let client;
let modelId;

before(async () => {
  server = await startServer(['--model', paths.denseModel]);
  client = new OpenAI({ baseURL: server.url + '/v1', apiKey: 'not-checked', timeout: 30000, maxRetries: 0 });
  console.log(`server: ${server.url} (${paths.denseModel})`);
});

after(async () => {
  if (!server) return;
  const { code, signal, listeningLines } = await server.stop();
  assert.equal(signal, null, `SIGTERM should stop the server cleanly, it died of ${signal}`);
  assert.equal(code, 0, `the server should exit 0 on SIGTERM; output:\n${server.log()}`);
  assert.equal(listeningLines, 1, 'the server prints its listening line exactly once');
});

function checkUsage(usage, maxTokens) {
  assert.ok(Number.isInteger(usage.prompt_tokens) && usage.prompt_tokens > 0, `prompt_tokens: ${usage.prompt_tokens}`);
  assert.ok(Number.isInteger(usage.completion_tokens) && usage.completion_tokens > 0 &&
            usage.completion_tokens <= maxTokens, `completion_tokens: ${usage.completion_tokens}`);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
}

test('models.list names the loaded model', { timeout: 20000 }, async () => {
  const page = await client.models.list();
  assert.ok(page.data.length >= 1, 'at least one model');
  const m = page.data[0];
  assert.equal(m.object, 'model');
  assert.equal(typeof m.id, 'string');
  assert.ok(m.id.length > 0);
  modelId = m.id;
  console.log(`models.list -> ${JSON.stringify(page.data)}`);
});

let chatReference;
test('chat.completions.create, not streamed', { timeout: 30000 }, async () => {
  const r = await client.chat.completions.create({
    model: modelId, messages: [{ role: 'user', content: PROMPT }], max_tokens: 24, temperature: 0 });
  assert.equal(r.object, 'chat.completion');
  assert.match(r.id, /\S/);
  assert.equal(r.choices.length, 1);
  const c = r.choices[0];
  assert.equal(c.index, 0);
  assert.equal(c.message.role, 'assistant');
  assert.equal(typeof c.message.content, 'string');
  assert.ok(c.message.content.length > 0, 'some text');
  assert.ok(['stop', 'length'].includes(c.finish_reason), `finish_reason ${c.finish_reason}`);
  checkUsage(r.usage, 24);
  if (c.finish_reason === 'length') assert.equal(r.usage.completion_tokens, 24);
  const cached = r.usage.prompt_tokens_details?.cached_tokens;
  assert.ok(Number.isInteger(cached) && cached >= 0 && cached <= r.usage.prompt_tokens,
            `usage.prompt_tokens_details.cached_tokens: ${cached}`);
  chatReference = r;
  console.log(`chat (plain) -> ${JSON.stringify(c.message.content)} finish=${c.finish_reason} usage=${JSON.stringify(r.usage)}`);
});

test('chat.completions.create, streamed with include_usage: the same text as the plain call', { timeout: 30000 }, async () => {
  const stream = await client.chat.completions.create({
    model: modelId, messages: [{ role: 'user', content: PROMPT }], max_tokens: 24, temperature: 0,
    stream: true, stream_options: { include_usage: true } });
  const ids = new Set();
  let text = '';
  let finishes = [];
  let usage = null;
  let chunks = 0;
  let afterUsage = 0;
  for await (const chunk of stream) {
    chunks += 1;
    if (usage) afterUsage += 1;
    assert.equal(chunk.object, 'chat.completion.chunk');
    ids.add(chunk.id);
    if (chunk.usage) {
      assert.deepEqual(chunk.choices, [], 'the usage chunk has no choices');
      usage = chunk.usage;
      continue;
    }
    assert.equal(chunk.choices.length, 1);
    const d = chunk.choices[0].delta;
    if (d.content) text += d.content;
    if (chunk.choices[0].finish_reason) finishes.push(chunk.choices[0].finish_reason);
  }
  assert.equal(ids.size, 1, `one id for every chunk, got ${[...ids]}`);
  assert.ok(chunks >= 3, `a stream of several chunks, got ${chunks}`);
  assert.deepEqual(finishes, [chatReference.choices[0].finish_reason], 'one finish_reason, the plain call\'s');
  assert.ok(usage, 'a usage chunk (stream_options.include_usage)');
  assert.equal(afterUsage, 0, 'the usage chunk comes last');
  assert.equal(text, chatReference.choices[0].message.content, 'greedy: the stream spells the plain answer');
  assert.equal(usage.prompt_tokens, chatReference.usage.prompt_tokens);
  assert.equal(usage.completion_tokens, chatReference.usage.completion_tokens);
  console.log(`chat (stream) -> ${chunks} chunks, ${JSON.stringify(text)} usage=${JSON.stringify(usage)}`);
});

test('completions.create, plain and streamed', { timeout: 30000 }, async () => {
  const r = await client.completions.create({ model: modelId, prompt: PROMPT, max_tokens: 16, temperature: 0 });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices.length, 1);
  assert.equal(typeof r.choices[0].text, 'string');
  assert.ok(r.choices[0].text.length > 0);
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  checkUsage(r.usage, 16);
  // The raw prompt is encoded like `strata run` (BOS first): the CLI's token count is the server's.
  const cliIds = execFileSync(paths.strata, ['tokenize', '--model', paths.denseModel, '--text', PROMPT],
                              { encoding: 'utf8', timeout: 20000 }).trim().split(/\s+/);
  assert.equal(r.usage.prompt_tokens, cliIds.length, `prompt tokens against strata tokenize (${cliIds.join(' ')})`);

  const stream = await client.completions.create({
    model: modelId, prompt: PROMPT, max_tokens: 16, temperature: 0, stream: true,
    stream_options: { include_usage: true } });
  let text = '';
  let usage = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'text_completion');
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) text += c.text;
  }
  assert.equal(text, r.choices[0].text, 'the stream spells the plain completion');
  assert.deepEqual({ p: usage?.prompt_tokens, c: usage?.completion_tokens },
                   { p: r.usage.prompt_tokens, c: r.usage.completion_tokens });
  console.log(`completion -> ${JSON.stringify(r.choices[0].text)} usage=${JSON.stringify(r.usage)}`);
});

test('sampling with a seed: the same seed repeats its text, other seeds give others', { timeout: 30000 }, async () => {
  const ask = async (seed) => (await client.chat.completions.create({
    model: modelId, messages: [{ role: 'user', content: 'Tom had a red ball' }], max_tokens: 24,
    temperature: 1.0, seed })).choices[0].message.content;
  const first = await ask(7);
  assert.equal(await ask(7), first, 'the same seed gives the same text');
  const texts = new Set([first]);
  for (const seed of [1, 2, 3, 4]) texts.add(await ask(seed));
  assert.ok(texts.size >= 3, `temperature 1 with 5 seeds gives several texts, got ${texts.size}`);
});

test('bad requests surface as the client\'s typed errors with the status', { timeout: 30000 }, async () => {
  const cases = [
    ['messages not an array', () => client.chat.completions.create({ model: modelId, messages: 'hello' }), 400],
    ['no messages', () => client.chat.completions.create({ model: modelId }), 400],
    ['a message without a role', () => client.chat.completions.create({ model: modelId, messages: [{ content: 'x' }] }), 400],
    ['negative max_tokens', () => client.chat.completions.create({
      model: modelId, messages: [{ role: 'user', content: 'x' }], max_tokens: -5 }), 400],
    ['prompt not a string', () => client.completions.create({ model: modelId, prompt: { a: 1 } }), 400],
  ];
  for (const [what, call, status] of cases) {
    await assert.rejects(call, (e) => {
      assert.ok(e instanceof OpenAI.APIError, `${what}: an APIError, got ${e}`);
      assert.equal(e.status, status, `${what}: status`);
      assert.equal(typeof e.error?.message, 'string', `${what}: error.message in the body`);
      assert.ok(e.error.message.length > 0);
      assert.equal(typeof e.error?.type, 'string', `${what}: error.type in the body`);
      return true;
    }, what);
  }
  const bad = await http(server.url, '/v1/chat/completions', { body: '{"messages": [', timeoutMs: 10000 });
  assert.equal(bad.status, 400, 'malformed JSON');
  assert.equal(typeof bad.json?.error?.message, 'string', 'malformed JSON: an OpenAI error body');
  const missing = await http(server.url, '/v1/no-such-route', { timeoutMs: 10000 });
  assert.equal(missing.status, 404);
});

test('tokenize and detokenize round-trip, ids as strata tokenize has them', { timeout: 20000 }, async () => {
  const text = 'Once upon a time, a little fox found a shiny stone.';
  const t = await http(server.url, '/tokenize', { body: { content: text } });
  assert.equal(t.status, 200, t.text);
  assert.ok(Array.isArray(t.json.tokens) && t.json.tokens.every(Number.isInteger), t.text);
  const cli = execFileSync(paths.strata, ['tokenize', '--model', paths.denseModel, '--no-bos', '--text', text],
                           { encoding: 'utf8', timeout: 20000 }).trim().split(/\s+/).map(Number);
  assert.deepEqual(t.json.tokens, cli, '/tokenize gives the ids of `strata tokenize --no-bos`');
  const d = await http(server.url, '/detokenize', { body: { tokens: t.json.tokens } });
  assert.equal(d.status, 200, d.text);
  assert.equal(d.json.content, text, 'detokenize(tokenize(text)) == text');
  console.log(`tokenize ${JSON.stringify(text)} -> ${JSON.stringify(t.json.tokens)}`);
});

test('health, live, metrics and apply-template', { timeout: 20000 }, async () => {
  const h = await http(server.url, '/health');
  assert.equal(h.status, 200);
  const live = (await http(server.url, '/live')).json;
  for (const k of ['uptime_s', 'requests_total', 'active', 'queue', 'prompt_tokens_per_s', 'decode_tokens_per_s',
                   'tokens_total']) {
    assert.equal(typeof live[k], 'number', `/live.${k}: ${JSON.stringify(live[k])}`);
  }
  assert.equal(typeof live.model, 'string');
  assert.ok(live.requests_total >= 5, `requests so far counted: ${live.requests_total}`);
  assert.ok(live.tokens_total > 0);
  const m = await http(server.url, '/metrics');
  assert.equal(m.status, 200);
  assert.match(m.headers.get('content-type') || '', /^text\/plain/);
  assert.match(m.text, /^# TYPE \S+ (counter|gauge|histogram|summary)$/m, 'Prometheus exposition format');
  for (const line of m.text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    assert.match(line, /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? -?[0-9.eE+-]+(?: [0-9]+)?$|^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? (NaN|[+-]Inf)$/,
                 `a metric sample line: ${line}`);
  }
  const a = await http(server.url, '/apply-template', {
    body: { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi there' }] } });
  assert.equal(a.status, 200, a.text);
  assert.equal(typeof a.json.prompt, 'string', `apply-template answers {"prompt"}: ${a.text}`);
  // stories260K has no template of its own: the server falls back to ChatML.
  assert.match(a.json.prompt, /<\|im_start\|>system\nBe brief\.<\|im_end\|>\n<\|im_start\|>user\nHi there<\|im_end\|>\n<\|im_start\|>assistant\n$/);
});

test('the API key: wrong or missing is a 401 AuthenticationError, the right one works', { timeout: 60000 }, async () => {
  const keyed = await startServer(['--model', paths.denseModel, '-o', 'serve.api_key=sesame-42']);
  try {
    const wrong = new OpenAI({ baseURL: keyed.url + '/v1', apiKey: 'open-sesame', timeout: 20000, maxRetries: 0 });
    await assert.rejects(wrong.models.list(), (e) => {
      assert.ok(e instanceof OpenAI.AuthenticationError, `an AuthenticationError, got ${e}`);
      assert.equal(e.status, 401);
      assert.equal(typeof e.error?.message, 'string');
      return true;
    });
    await assert.rejects(wrong.chat.completions.create({ model: modelId, messages: [{ role: 'user', content: 'x' }], max_tokens: 2 }),
                         (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
    const none = await http(keyed.url, '/v1/models');
    assert.equal(none.status, 401, 'no Authorization header');
    assert.equal(typeof none.json?.error?.message, 'string');
    const right = new OpenAI({ baseURL: keyed.url + '/v1', apiKey: 'sesame-42', timeout: 20000, maxRetries: 0 });
    const r = await right.chat.completions.create({ model: modelId, messages: [{ role: 'user', content: PROMPT }], max_tokens: 24,
                                                    temperature: 0 });
    assert.equal(r.choices[0].message.content, chatReference.choices[0].message.content);
  } finally {
    const { code } = await keyed.stop();
    assert.equal(code, 0);
  }
});
