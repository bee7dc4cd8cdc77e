#!/usr/bin/env python3
"""The elastic desk's check on a GPU machine (gpu-check.sh's `desk` step): a client of a running `strata serve` with
serve.elastic.lanes 2. Standard library only (the GPU machine has no pip packages).

  desk_client.py BASE_URL HOLD_S

1. A alone (64 tokens): the lead serves it.
2. B streamed (1500 tokens); 2 s later C (64 tokens, A's prompt): the helper wakes for C. B's rate before, while the
   helper wakes, while both run and after; the longest gap in B's stream; C's time to first token; C's text == A's.
3. After HOLD_S + 3 s the helper sleeps; B again alone: the same text.
4. D (B's prompt, streamed) and E (A's prompt, 600 tokens); once E has 20 tokens, the helper is killed (SIGKILL):
   D's text == B's, and what E got (the desk's error for a lane that died mid-reply).
Prints one line per result, "desk: ...".
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

BASE = sys.argv[1]
HOLD_S = float(sys.argv[2])
P_SHORT = "Once upon a time"
P_LONG = "The history of the river"


class Stream:
    """One streamed completion in a thread: its text, each chunk's arrival time, its error."""

    def __init__(self, prompt, n):
        self.prompt, self.n = prompt, n
        self.text, self.times, self.error = "", [], None
        self.sent = time.monotonic()
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self):
        body = json.dumps({"prompt": self.prompt, "max_tokens": self.n, "temperature": 0, "stream": True}).encode()
        req = urllib.request.Request(BASE + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=600) as r:
                for raw in r:
                    line = raw.decode().strip()
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    d = json.loads(line[6:])
                    if "error" in d:
                        self.error = d["error"].get("message", str(d["error"]))
                        continue
                    t = d["choices"][0].get("text", "")
                    if t:
                        self.text += t
                        self.times.append(time.monotonic())
        except Exception as e:  # an HTTP error status, a reset connection
            self.error = str(e)

    def wait(self):
        self.thread.join()
        return self

    def rate(self, t0, t1):
        n = sum(1 for t in self.times if t0 <= t < t1)
        return n / (t1 - t0) if t1 > t0 else 0.0

    def longest_gap(self):
        return max((b - a for a, b in zip(self.times, self.times[1:])), default=0.0)


def say(msg):
    print("desk: " + msg, flush=True)


def helper_pid():
    out = subprocess.run(["pgrep", "-f", "peer-link-role 1"], capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else None


a = Stream(P_SHORT, 64).wait()
say(f"A alone: {len(a.times)} chunks, error {a.error}")

b = Stream(P_LONG, 1500)
time.sleep(2.0)
c_sent = time.monotonic()
c = Stream(P_SHORT, 64)
c.wait()
b.wait()
c_first = c.times[0] - c_sent if c.times else float("nan")
c_end = c.times[-1] if c.times else c_sent
woke = c.times[0] if c.times else c_sent
say(f"B: {len(b.times)} chunks; rate alone {b.rate(b.sent + 0.3, c_sent):.1f}/s, while the helper wakes "
    f"{b.rate(c_sent, woke):.1f}/s ({woke - c_sent:.2f} s), both running {b.rate(woke, c_end):.1f}/s, after "
    f"{b.rate(c_end, b.times[-1] if b.times else c_end):.1f}/s; longest gap {b.longest_gap():.3f} s; error {b.error}")
say(f"C: time to first token {c_first:.2f} s (helper woken for it); text equals A's: {c.text == a.text}; error {c.error}")

time.sleep(HOLD_S + 3.0)
say(f"after hold_s: helper process {'still there' if helper_pid() else 'gone'}")
b2 = Stream(P_LONG, 1500).wait()
say(f"B again, alone: text equals B's: {b2.text == b.text}; error {b2.error}")

# A chat of two turns: the reply ends at the chat's end token (the lane stops there), and the second turn reuses
# what the lane's engine holds (usage.prompt_tokens_details.cached_tokens).
def chat(messages):
    body = json.dumps({"messages": messages, "max_tokens": 200, "temperature": 0}).encode()
    req = urllib.request.Request(BASE + "/v1/chat/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read().decode())


turn1 = [{"role": "user", "content": "Write a short story about a fox."}]
r1 = chat(turn1)
reply = r1["choices"][0]["message"]["content"]
r2 = chat(turn1 + [{"role": "assistant", "content": reply}, {"role": "user", "content": "Now make it rhyme."}])
say(f"chat: turn 1 finish {r1['choices'][0]['finish_reason']}, {r1['usage']['completion_tokens']} tokens; turn 2 "
    f"prompt {r2['usage']['prompt_tokens']} tokens, cached {r2['usage'].get('prompt_tokens_details', {}).get('cached_tokens')}")

d = Stream(P_LONG, 1500)
time.sleep(2.0)
e = Stream(P_SHORT, 600)
for _ in range(600):
    if len(e.times) >= 20:
        break
    time.sleep(0.05)
pid = helper_pid()
if pid:
    os.kill(pid, signal.SIGKILL)
say(f"killed the helper (pid {pid}) {len(e.times)} chunks into E")
d.wait()
e.wait()
say(f"D (the lead's, through the kill): text equals B's: {d.text == b.text}; error {d.error}")
say(f"E (the helper's, 600 tokens): {len(e.times)} chunks, error {e.error!r}")
