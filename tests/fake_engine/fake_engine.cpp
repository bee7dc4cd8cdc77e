// A stand-in for `strata engine` in the elastic desk's tests (STRATA_DESK_ENGINE): the same line protocol, no model.
//
// It prints the ready line, then answers each request line with `max_tokens` token lines (token i of a prompt whose
// last id is L: 3 + (L + i) % (vocab - 3), so never one of the first three, BOS and EOS among them), one every
// FAKE_ENGINE_TOKEN_MS (default 20), and a done line; control lines get "CTL <line> done: fake" (or "refused"
// with FAKE_ENGINE_REFUSE=1), between two tokens while a request runs, as the real one answers between windows.
// End of input ends it after its request.
//
// What it did goes to FAKE_ENGINE_LOG, one line per event, "<pid> <role> <event> [text]", role the
// --peer-link-role it was given or "-": start (its arguments), ready, recv (every line read), token, done, die,
// exit. Failures on demand, for the role FAKE_ENGINE_ROLE (unset: any):
//   FAKE_ENGINE_FAIL_START=1  writes a reason to stderr and exits 1 before its ready line;
//   FAKE_ENGINE_DIE_AFTER=N   exits 3 without a done line when a request has had N tokens;
//   FAKE_ENGINE_DIE_ONCE=FILE only when FILE does not exist yet (it is created then), so a restarted one lives.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "line_inbox.hpp"

namespace {

using json = nlohmann::json;

std::string env(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

std::string role = "-";

void log_event(const std::string& event) {
  const std::string file = env("FAKE_ENGINE_LOG");
  if (file.empty()) return;
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string line = std::to_string(::getpid()) + " " + role + " " + event + "\n";
  if (::write(fd, line.data(), line.size()) < 0) std::perror("fake engine: log");  // one write: lines never mix
  ::close(fd);
}

void emit(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

// This process is the one a failure is asked of.
bool chosen() {
  const std::string r = env("FAKE_ENGINE_ROLE");
  return r.empty() || r == role;
}

std::string answer_control(const std::string& line) {
  for (const char* name : {"PEER_DETACH", "PEER_ATTACH", "POOL_HOLD ", "LINK_SERVE ", "CANCEL"}) {
    if (line.starts_with(name)) {
      if (env("FAKE_ENGINE_REFUSE") == "1") return "CTL " + line + " refused: the fake has no card; nothing changed";
      return "CTL " + line + " done: fake";
    }
  }
  return "CTL ERR unknown line '" + line + "'";
}

void maybe_die(int tokens_so_far) {
  const std::string after = env("FAKE_ENGINE_DIE_AFTER");
  if (after.empty() || !chosen() || tokens_so_far != std::stoi(after)) return;
  const std::string once = env("FAKE_ENGINE_DIE_ONCE");
  if (!once.empty()) {
    const int fd = ::open(once.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return;  // it died once already
    ::close(fd);
  }
  log_event("die");
  std::fflush(stdout);
  std::_Exit(3);
}

}  // namespace

int main(int argc, char** argv) {
  std::string args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--peer-link-role" && i + 1 < argc) role = argv[i + 1];
    args += (i > 1 ? " " : "") + a;
  }
  log_event("start " + args);
  if (env("FAKE_ENGINE_FAIL_START") == "1" && chosen()) {
    std::fprintf(stderr, "fake engine: cannot load the model (FAKE_ENGINE_FAIL_START)\n");
    log_event("exit 1");
    return 1;
  }
  const int token_ms = std::stoi(env("FAKE_ENGINE_TOKEN_MS", "20"));
  const int vocab = std::stoi(env("FAKE_ENGINE_VOCAB", "512"));
  strata::cli::LineInbox inbox([](const std::string& line) { log_event("recv " + line); });
  log_event("ready");
  emit(R"({"event":"ready","model":"fake","backend":"fake","hybrid":false})");
  std::string line;
  while (inbox.next(line)) {
    if (!strata::cli::LineInbox::is_request(line)) {
      emit(answer_control(line));
      continue;
    }
    const json request = json::parse(line, nullptr, false);
    if (!request.is_object() || !request.contains("prompt_ids") || !request["prompt_ids"].is_array() ||
        request["prompt_ids"].empty()) {
      emit(json{{"id", request.is_object() ? request.value("id", json()) : json()}, {"error", "the fake needs prompt_ids"}}.dump());
      continue;
    }
    const json& id = request["id"];
    const int last = request["prompt_ids"].back().get<int>();
    int max_tokens = request.value("max_tokens", 16);
    if (max_tokens < 0) max_tokens = 16;
    const auto start = std::chrono::steady_clock::now();
    json generated = json::array();
    std::string text;
    for (int i = 0; i < max_tokens; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(token_ms));
      inbox.take_controls([](const std::string& c) { emit(answer_control(c)); });
      maybe_die(i);
      const int token = 3 + (last + i) % (vocab - 3);
      generated.push_back(token);
      text += "t" + std::to_string(i);
      // Logged before it is sent, so that what the desk does on it comes later in the log.
      log_event("token " + std::to_string(token));
      emit(json{{"id", id}, {"token", token}, {"text", "t" + std::to_string(i)}}.dump());
    }
    maybe_die(max_tokens);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    log_event("done " + id.dump());
    emit(json{{"id", id},
              {"done", true},
              {"finish_reason", "length"},
              {"prompt_tokens", request["prompt_ids"].size()},
              {"generated_ids", generated},
              {"text", text},
              {"prompt_seconds", 0.001},
              {"decode_seconds", seconds}}
             .dump());
  }
  log_event("exit 0");
  return 0;
}
