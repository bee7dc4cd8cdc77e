// The page at `/` in headless Chromium (Debian's /usr/bin/chromium driven by playwright-core; no browser is
// downloaded): chat with streamed text, the stop button, live stats, the expert heatmap drawn, the API key
// field; nothing loaded from anywhere but the server. Saves a screenshot into the working folder.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { paths, startServer, watchdog } from './lib/server.mjs';

watchdog(170000);

const CHROMIUM = '/usr/bin/chromium';
const PAGE_SOURCE = fileURLToPath(new URL('../../core/serve/page/index.html', import.meta.url));
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
               '--disable-background-networking', '--disable-component-update', '--disable-sync'];

let server;
let browser;
let profile;

before(async () => {
  server = await startServer(['--config', paths.moeConfig]);
  profile = fs.mkdtempSync(path.join(os.tmpdir(), 'strata-chromium-'));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true, args: FLAGS, timeout: 30000,
    viewport: { width: 1280, height: 860 }, colorScheme: 'light' });
});

after(async () => {
  if (browser) await browser.close().catch(() => {});
  if (profile) fs.rmSync(profile, { recursive: true, force: true });
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, 'the server exits 0 on SIGTERM');
  }
});

// Fails on anything the page fetches from another origin, on uncaught errors and console errors.
function watch(page, origin) {
  const problems = [];
  page.on('request', (r) => {
    if (!r.url().startsWith(origin + '/') && !r.url().startsWith('data:')) problems.push(`external request ${r.url()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
  return problems;
}

// Pixels of the heatmap canvas that differ from its first pixel, and the number of distinct colours.
const canvasInk = (page) => page.$eval('#heatmap', (c) => {
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  const colours = new Set();
  let ink = 0;
  for (let i = 0; i < d.length; i += 4) {
    const rgba = (d[i] << 24) | (d[i + 1] << 16) | (d[i + 2] << 8) | d[i + 3];
    colours.add(rgba);
    if (d[i + 3] !== 0) ink += 1;
  }
  return { ink, colours: colours.size, width: c.width, height: c.height, label: c.getAttribute('aria-label') };
});

// The reply length lives under the composer's Settings (a <details>): open it and set it.
async function setMaxTokens(page, n) {
  if (!(await page.$eval('#composer details', (d) => d.open))) await page.click('#composer summary');
  await page.fill('#max-tokens', String(n));
}

test('the page chats, streams, shows live figures and draws the heatmap', { timeout: 90000 }, async () => {
  const page = await browser.newPage();
  const problems = watch(page, server.url);
  const res = await page.goto(server.url + '/', { timeout: 15000 });
  assert.equal(res.status(), 200);
  assert.match(res.headers()['content-type'], /^text\/html/);
  assert.ok((await res.body()).equals(fs.readFileSync(PAGE_SOURCE)), `GET / serves ${PAGE_SOURCE} byte for byte`);
  assert.equal(await page.title(), 'Strata');

  // The stats come from /live within a couple of polls; the model's name too.
  await page.waitForFunction(() => document.getElementById('conn').textContent === 'live', null, { timeout: 10000 });
  assert.match(await page.textContent('#model'), /\S/);
  const requestsBefore = Number((await page.textContent('#s-requests')).replace(/,/g, ''));

  // Streamed text: the assistant's bubble grows with each event that carries text, before the request ends. How
  // many such events there are is the server's timing: its HTTP thread sends the tokens that came since it last
  // looked, so on a busy two-core machine a 48-token reply has come as two events (sse_curl tests the server's
  // side). So for this request the page's fetch hands the real server's stream on one event at a time, 10 ms
  // apart, counting the events with text: the bubble must show one length per such event, not only the last.
  await page.evaluate(() => {
    const realFetch = window.fetch;
    window.__realFetch = realFetch;
    window.fetch = async (...args) => {
      const res = await realFetch(...args);
      if (!String(args[0]).includes('/v1/chat/completions') || !res.ok || !res.body) return res;
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      const encoder = new TextEncoder();
      let buf = '';
      let ended = false;
      const paced = new ReadableStream({
        async pull(controller) {
          for (;;) {
            const m = /\r?\n\r?\n/.exec(buf);
            if (m) {
              const event = buf.slice(0, m.index + m[0].length);
              buf = buf.slice(m.index + m[0].length);
              for (const line of event.split(/\r?\n/)) {
                if (!line.startsWith('data:') || line.includes('[DONE]')) continue;
                const choice = (JSON.parse(line.slice(5)).choices || [])[0];
                if (choice && choice.delta && choice.delta.content) window.__textEvents += 1;
              }
              await new Promise((r) => setTimeout(r, 10));
              controller.enqueue(encoder.encode(event));
              return;
            }
            if (ended) {
              if (buf) controller.enqueue(encoder.encode(buf));
              buf = '';
              controller.close();
              return;
            }
            const { value, done } = await reader.read();
            if (done) ended = true;
            else buf += decoder.decode(value, { stream: true });
          }
        },
        cancel(reason) { return reader.cancel(reason); },
      });
      return new Response(paced, { status: res.status, statusText: res.statusText, headers: res.headers });
    };
    window.__growth = [];
    window.__textEvents = 0;
    new MutationObserver(() => {
      const t = document.querySelector('.msg.assistant .text');
      if (t) window.__growth.push(t.textContent.length);
    }).observe(document.getElementById('log'), { subtree: true, childList: true, characterData: true });
  });
  await setMaxTokens(page, 48);
  await page.fill('#input', 'Once upon a time');
  await page.press('#input', 'Enter');
  await page.waitForSelector('.msg.user >> text=Once upon a time', { timeout: 5000 });
  await page.waitForSelector('.msg.assistant .meta', { timeout: 30000 });
  const reply = await page.textContent('.msg.assistant .text');
  const meta = await page.textContent('.msg.assistant .meta');
  const [growth, textEvents] = await page.evaluate(() => {
    window.fetch = window.__realFetch;
    return [window.__growth, window.__textEvents];
  });
  assert.ok(reply.trim().length > 0, 'the reply has text');
  assert.ok(textEvents >= 1, 'the stream carried text');
  assert.equal(new Set(growth.filter((n) => n > 0)).size, textEvents,
               `the bubble grew once per event with text (${textEvents} events): lengths ${growth}`);
  assert.equal(Math.max(...growth), reply.length, 'the last length is the reply');
  assert.match(meta, /^\d+ tokens · [\d.]+ tok\/s · first token \d+ ms · (stop|length)$/, `reply meta: ${meta}`);
  assert.equal(await page.isDisabled('#stop'), true, 'stop is off once the reply is done');
  assert.equal(await page.isDisabled('#send'), false);

  // The same request through the API gives the same text (greedy): the page showed what the model said.
  const api = await (await fetch(server.url + '/v1/chat/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, signal: AbortSignal.timeout(20000),
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 48, temperature: 0 }) })).json();
  assert.equal(reply, api.choices[0].message.content);

  // Live figures updated from /live: a request more, decode speed and TTFT shown.
  await page.waitForFunction((before) => Number(document.getElementById('s-requests').textContent.replace(/,/g, '')) > before,
                             requestsBefore, { timeout: 5000 });
  await page.waitForFunction(() => /\d/.test(document.getElementById('s-decode').textContent) &&
                                   /\d/.test(document.getElementById('s-ttft').textContent), null, { timeout: 5000 });
  const uptime1 = await page.textContent('#s-uptime');
  await page.waitForFunction((u) => document.getElementById('s-uptime').textContent !== u, uptime1, { timeout: 5000 });

  // The heatmap: the MoE's layers x experts, drawn with more than one colour once tokens were routed.
  await page.waitForFunction(() => /layers by \d+ experts/.test(document.getElementById('heatmap').getAttribute('aria-label')),
                             null, { timeout: 5000 });
  const ink = await canvasInk(page);
  assert.ok(ink.ink > 0.3 * ink.width * ink.height, `the heatmap canvas is drawn (${ink.ink} of ${ink.width * ink.height} pixels)`);
  assert.ok(ink.colours >= 4, `cells of several shades (${ink.colours} colours)`);
  assert.match(ink.label, /hottest: layer \d+, expert \d+/, ink.label);
  const liveNow = await (await fetch(server.url + '/live', { signal: AbortSignal.timeout(5000) })).json();
  assert.match(ink.label, new RegExp(`^Expert heatmap: ${liveNow.expert.n_layer} layers by ${liveNow.expert.n_expert} experts`));
  assert.equal(await page.isDisabled('#heat-hits'), liveNow.expert.hits === null, 'hit rate offered only with hits');

  const shot = path.join(paths.outDir, 'serve-page.png');
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok(fs.statSync(shot).size > 10000, 'a screenshot with content');
  console.log(`screenshot: ${shot}`);
  console.log(`page reply: ${JSON.stringify(reply)} (${meta}, ${textEvents} events with text); heatmap: ${ink.label}`);

  // Stop: a long reply is cut short by the button, and the server frees the slot.
  await setMaxTokens(page, 3000);
  await page.fill('#input', 'Tell me a long story');
  await page.click('#send');
  await page.waitForFunction(() => (document.querySelectorAll('.msg.assistant .text')[1]?.textContent.length || 0) > 20,
                             null, { timeout: 15000 });
  await page.click('#stop');
  await page.waitForFunction(() => /stopped$/.test(document.querySelectorAll('.msg.assistant')[1]?.querySelector('.meta')?.textContent || ''),
                             null, { timeout: 5000 });
  const deadline = Date.now() + 5000;
  for (;;) {
    const l = await (await fetch(server.url + '/live', { signal: AbortSignal.timeout(5000) })).json();
    if (l.active === 0) break;
    assert.ok(Date.now() < deadline, 'the server stops the request the page aborted');
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(problems, [], 'no external requests, page errors or console errors');
  await page.close();
});

test('with serve.api_key set the page asks for the key and then chats', { timeout: 60000 }, async () => {
  const keyed = await startServer(['--config', paths.moeConfig, '-o', 'serve.api_key=page-key-7']);
  const page = await browser.newPage();
  try {
    const problems = watch(page, keyed.url);
    await page.goto(keyed.url + '/', { timeout: 15000 });
    await setMaxTokens(page, 16);
    await page.fill('#input', 'Once upon a time');
    await page.press('#input', 'Enter');
    // The /live poll may show the key field before the chat request's 401 comes back; the message the page adds
    // for that 401 is the sign that the send has finished and the text was given back.
    await page.waitForSelector('.msg.error', { timeout: 10000 });
    assert.ok(await page.isVisible('#api-key'), 'the page asks for the key');
    assert.equal(await page.inputValue('#input'), 'Once upon a time', 'the unsent message is given back');
    await page.fill('#api-key', 'page-key-7');
    await page.dispatchEvent('#api-key', 'change');
    await page.click('#send');
    await page.waitForSelector('.msg.assistant .meta', { timeout: 30000 });
    assert.ok((await page.textContent('.msg.assistant .text')).trim().length > 0);
    await page.waitForFunction(() => document.getElementById('conn').textContent === 'live', null, { timeout: 5000 });
    // The 401 before the key was given shows up as console errors of the failed loads; nothing else may.
    const others = problems.filter((p) => !/401/.test(p));
    assert.deepEqual(others, []);
  } finally {
    await page.close();
    const { code } = await keyed.stop();
    assert.equal(code, 0);
  }
});
