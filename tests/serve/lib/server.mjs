// Starts the real `strata serve` on a free port, reads its one listening line, and stops it at the end
// whatever happens: a test that fails, throws or hangs still leaves no server behind (an exit hook kills what
// is left, and a watchdog ends the whole run before ctest's own timeout would).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

// What ctest passes (tests/serve/CMakeLists.txt); the repository's files when run by hand.
export const paths = {
  strata: process.env.STRATA_EXE,
  denseModel: process.env.STRATA_MODEL_DENSE || path.join(repo, 'models/stories260K.gguf'),
  moeConfig: process.env.STRATA_CONFIG_MOE || path.join(repo, 'configs/default.yaml'),
  outDir: process.env.STRATA_SERVE_OUT || process.cwd(),
};

const LISTENING = /^strata serve: listening on (http:\/\/[^\s/]+)$/;
const running = new Set();

function killAll() {
  for (const proc of running) proc.kill('SIGKILL');
}
process.on('exit', killAll);
for (const [sig, number] of [['SIGINT', 2], ['SIGTERM', 15], ['SIGHUP', 1]]) {
  process.on(sig, () => {
    killAll();
    process.exit(128 + number);
  });
}

// Ends the run (exit 124) if it is still going after `ms`: a hung server or client must not hang CI.
export function watchdog(ms) {
  setTimeout(() => {
    console.error(`watchdog: the test ran past ${ms} ms; killing the server(s) and failing`);
    killAll();
    process.exit(124);
  }, ms).unref();
}

// Runs `strata serve ARGS --host 127.0.0.1 --port 0` and resolves once it prints its listening line.
// Returns {url, log(), stop()}; stop() sends SIGTERM, waits (SIGKILL after `stopTimeoutMs`) and resolves with
// {code, signal, listeningLines, stopMs}.
export async function startServer(args, { readyTimeoutMs = 30000, stopTimeoutMs = 10000 } = {}) {
  if (!paths.strata) throw new Error('STRATA_EXE is not set: the path of the strata executable (ctest sets it)');
  const argv = ['serve', ...args, '--host', '127.0.0.1', '--port', '0'];
  const proc = spawn(paths.strata, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(proc);
  let log = '';
  let stderrTail = '';
  let listeningLines = 0;
  let url = null;
  const exited = new Promise((resolve) => {
    proc.on('exit', (code, signal) => {
      running.delete(proc);
      resolve({ code, signal });
    });
  });
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(
      `strata ${argv.join(' ')} printed no listening line within ${readyTimeoutMs} ms; output:\n${log}`)), readyTimeoutMs);
    proc.stdout.setEncoding('utf8');
    proc.stderr.setEncoding('utf8');
    proc.stdout.on('data', (s) => { log += s; });
    proc.stderr.on('data', (s) => {
      log += s;
      stderrTail += s;
      let cut;
      while ((cut = stderrTail.indexOf('\n')) >= 0) {
        const line = stderrTail.slice(0, cut);
        stderrTail = stderrTail.slice(cut + 1);
        const m = LISTENING.exec(line);
        if (m) {
          listeningLines += 1;
          if (!url) {
            url = m[1];
            clearTimeout(timer);
            resolve(url);
          }
        }
      }
    });
    proc.on('error', (e) => { clearTimeout(timer); reject(e); });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`strata ${argv.join(' ')} exited (${code ?? signal}) before listening; output:\n${log}`));
    });
  });
  try {
    await ready;
  } catch (e) {
    proc.kill('SIGKILL');
    throw e;
  }
  let stopped = null;
  return {
    url,
    log: () => log,
    exited,
    stop() {
      if (!stopped) {
        stopped = (async () => {
          const t0 = Date.now();
          if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
          const timer = setTimeout(() => {
            console.error(`strata serve did not exit within ${stopTimeoutMs} ms of SIGTERM: killing it`);
            proc.kill('SIGKILL');
          }, stopTimeoutMs);
          const result = await exited;
          clearTimeout(timer);
          return { ...result, listeningLines, stopMs: Date.now() - t0 };
        })();
      }
      return stopped;
    },
  };
}

// fetch with a deadline; JSON in and (when the answer is JSON) out.
export async function http(base, route, { method, body, headers = {}, timeoutMs = 30000, signal } = {}) {
  const init = { method: method || (body === undefined ? 'GET' : 'POST'), headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    init.headers['Content-Type'] = init.headers['Content-Type'] || 'application/json';
  }
  init.signal = signal ? AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs);
  const res = await fetch(base + route, init);
  const text = await res.text();
  let json = null;
  if ((res.headers.get('content-type') || '').includes('json')) json = JSON.parse(text);
  return { status: res.status, headers: res.headers, text, json };
}

// Polls `probe` until it returns a truthy value (returned) or `ms` pass (throws with `what`).
export async function waitFor(what, probe, { ms = 10000, every = 100 } = {}) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    last = await probe();
    if (last) return last;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, every));
  }
}

export function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}
