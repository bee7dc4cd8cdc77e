#include "strata/log.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace strata::log {
namespace {

Level initial_level() {
  const char* env = std::getenv("STRATA_LOG");
  Level l = Level::Warn;
  if (env != nullptr) parse_level(env, &l);
  return l;
}

std::atomic<Level>& current() {
  static std::atomic<Level> level{initial_level()};
  return level;
}

std::mutex& out_mutex() {
  static std::mutex m;
  return m;
}

const char* name_of(Level l) {
  switch (l) {
    case Level::Debug: return "debug";
    case Level::Info: return "info";
    case Level::Warn: return "warning";
    case Level::Error: return "error";
    case Level::Off: break;
  }
  return "";
}

}  // namespace

void set_level(Level level) { current().store(level); }
Level level() { return current().load(); }

bool parse_level(std::string_view text, Level* out) {
  static constexpr std::pair<std::string_view, Level> names[] = {
      {"debug", Level::Debug}, {"info", Level::Info}, {"warn", Level::Warn},
      {"warning", Level::Warn}, {"error", Level::Error}, {"off", Level::Off}};
  for (const auto& [n, l] : names) {
    if (text == n) {
      *out = l;
      return true;
    }
  }
  return false;
}

void write(Level l, std::string_view message) {
  if (l < current().load() || l == Level::Off) return;
  std::string line = "strata: ";
  line += name_of(l);
  line += ": ";
  line += message;
  line += '\n';
  std::lock_guard<std::mutex> lock(out_mutex());
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace strata::log
