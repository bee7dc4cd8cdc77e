// Tool calls end to end through the official `openai` npm client: `tools` sent to the real `strata serve`, plain
// and streamed, and `tool_calls` back parsed with the template's format; tool_choice and parallel_tool_calls.
//
// The model is stories260K with Qwen3's chat template (tests/data/templates/Qwen-Qwen3-0.6B.jinja, written into a
// copy of the GGUF): the template renders the tools into the prompt and gives the Hermes format
// (<tool_call>{"name", "arguments"}</tool_call>). A 260K-parameter story model never writes that markup, so the
// reply is forced with the server's test hook STRATA_TEST_FORCED_REPLY: the sampler emits the text's tokens, then
// end of text, whatever the logits. Everything else is the real path: the rendering, the engine, the streaming,
// the parsing and the client's own handling of the answer.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { paths, startServer, watchdog } from './lib/server.mjs';
import { writeWithChatTemplate } from './lib/gguf_template.mjs';

watchdog(100000);

const here = path.dirname(fileURLToPath(import.meta.url));
const TEMPLATE = path.join(here, '../data/templates/Qwen-Qwen3-0.6B.jinja');
const CALLS = [
  { name: 'get_weather', arguments: { city: 'Paris', unit: 'celsius' } },
  { name: 'get_time', arguments: { zone: 'Europe/Paris' } },
];
const PREAMBLE = 'Let me look that up.';
const FORCED = `${PREAMBLE}\n${CALLS.map((c) => `<tool_call>\n${JSON.stringify(c)}\n</tool_call>`).join('\n')}`;
const TOOLS = [
  { type: 'function', function: { name: 'get_weather', description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string' } },
      required: ['city'] } } },
  { type: 'function', function: { name: 'get_time', description: 'The time in a zone',
    parameters: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] } } },
];
const MESSAGES = [{ role: 'user', content: 'What is the weather and the time in Paris?' }];

let server;
let client;

before(async () => {
  const model = path.join(paths.outDir, 'stories260K-qwen3-template.gguf');
  writeWithChatTemplate(paths.denseModel, fs.readFileSync(TEMPLATE, 'utf8'), model);
  process.env.STRATA_TEST_FORCED_REPLY = FORCED;  // the server inherits it
  server = await startServer(['--model', model, '-o', 'runtime.context=2048']);
  delete process.env.STRATA_TEST_FORCED_REPLY;
  client = new OpenAI({ baseURL: server.url + '/v1', apiKey: 'not-checked', timeout: 30000, maxRetries: 0 });
  assert.match(server.log(), /STRATA_TEST_FORCED_REPLY is set/, 'the server says the test hook is on');
});

after(async () => {
  if (!server) return;
  const { code, signal } = await server.stop();
  assert.equal(signal, null);
  assert.equal(code, 0, `the server should exit 0 on SIGTERM; output:\n${server.log()}`);
});

function checkCalls(toolCalls, calls) {
  assert.ok(Array.isArray(toolCalls), `tool_calls: ${JSON.stringify(toolCalls)}`);
  assert.equal(toolCalls.length, calls.length, `tool_calls: ${JSON.stringify(toolCalls)}`);
  toolCalls.forEach((call, i) => {
    assert.equal(call.type, 'function');
    assert.equal(typeof call.id, 'string');
    assert.ok(call.id.length > 0, 'a call id');
    assert.equal(call.function.name, calls[i].name);
    assert.equal(typeof call.function.arguments, 'string', 'arguments are JSON text, as OpenAI sends them');
    assert.deepEqual(JSON.parse(call.function.arguments), calls[i].arguments);
  });
  assert.equal(new Set(toolCalls.map((call) => call.id)).size, toolCalls.length, 'distinct ids');
}

test('tools, not streamed: tool_calls parsed, finish_reason tool_calls', { timeout: 30000 }, async () => {
  const r = await client.chat.completions.create({ messages: MESSAGES, tools: TOOLS, max_tokens: 200 });
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  assert.equal(c.message.role, 'assistant');
  checkCalls(c.message.tool_calls, CALLS);
  assert.equal((c.message.content || '').trim(), PREAMBLE, 'the text before the calls stays the content');
  console.log(`plain -> ${JSON.stringify(c.message)}`);
});

test('tools, streamed: the client assembles the same tool_calls', { timeout: 30000 }, async () => {
  const stream = client.chat.completions.stream({ messages: MESSAGES, tools: TOOLS, max_tokens: 200 });
  let chunks = 0;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    chunks += 1;
  }
  const final = await stream.finalChatCompletion();
  const c = final.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  checkCalls(c.message.tool_calls, CALLS);
  assert.equal((c.message.content || '').trim(), PREAMBLE);
  assert.ok(chunks >= 3, `role, calls and finish chunks, got ${chunks}`);

  // The raw chunks as the stream sends them: the calls come in one delta, each with its index.
  const raw = await client.chat.completions.create({ messages: MESSAGES, tools: TOOLS, max_tokens: 200, stream: true });
  const deltas = [];
  let finish = null;
  for await (const chunk of raw) {
    for (const choice of chunk.choices) {
      if (choice.delta?.tool_calls) deltas.push(...choice.delta.tool_calls);
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  assert.equal(finish, 'tool_calls');
  assert.deepEqual(deltas.map((d) => d.index), [0, 1]);
  checkCalls(deltas, CALLS);
});

test('parallel_tool_calls false: the first call only', { timeout: 30000 }, async () => {
  for (const stream of [false, true]) {
    const args = { messages: MESSAGES, tools: TOOLS, max_tokens: 200, parallel_tool_calls: false };
    const r = stream ? await client.chat.completions.stream(args).finalChatCompletion()
      : await client.chat.completions.create(args);
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    checkCalls(r.choices[0].message.tool_calls, CALLS.slice(0, 1));
  }
});

test('tool_choice none: the tools are not offered and nothing is parsed', { timeout: 30000 }, async () => {
  const offered = await client.chat.completions.create({ messages: MESSAGES, tools: TOOLS, max_tokens: 200 });
  const none = await client.chat.completions.create({
    messages: MESSAGES, tools: TOOLS, tool_choice: 'none', max_tokens: 200 });
  const bare = await client.chat.completions.create({ messages: MESSAGES, max_tokens: 200 });
  assert.equal(none.usage.prompt_tokens, bare.usage.prompt_tokens, 'the prompt is the one without tools');
  assert.ok(offered.usage.prompt_tokens > bare.usage.prompt_tokens + 50, 'with tools the template lists them');
  const c = none.choices[0];
  assert.equal(c.finish_reason, 'stop');
  assert.equal(c.message.tool_calls, undefined, `no tool_calls: ${JSON.stringify(c.message)}`);
  assert.match(c.message.content, /<tool_call>/, 'the markup stays text');
  assert.equal(c.message.content, bare.choices[0].message.content, 'the same text as without tools');
  const auto = await client.chat.completions.create({
    messages: MESSAGES, tools: TOOLS, tool_choice: 'auto', max_tokens: 200 });
  checkCalls(auto.choices[0].message.tool_calls, CALLS);
});

test('what cannot be honoured is a 400 naming the field', { timeout: 30000 }, async () => {
  const cases = [
    ['tool_choice', { tools: TOOLS, tool_choice: 'required' }],
    ['tool_choice', { tools: TOOLS, tool_choice: { type: 'function', function: { name: 'get_weather' } } }],
    ['response_format', { response_format: { type: 'json_object' } }],
    ['response_format', { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } } }],
    ['n', { n: 2 }],
    ['functions', { functions: [{ name: 'get_weather' }] }],
  ];
  for (const [param, extra] of cases) {
    await assert.rejects(client.chat.completions.create({ messages: MESSAGES, max_tokens: 8, ...extra }), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, `${param}: a BadRequestError, got ${e}`);
      assert.equal(e.status, 400);
      assert.equal(e.param, param, `${JSON.stringify(extra)}: ${e.message}`);
      assert.ok(e.message.includes(param), e.message);
      return true;
    });
  }
});
