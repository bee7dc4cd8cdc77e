// The host's log: one line per message on stderr, "strata: <level>: <text>". Plugins log through the host API.
#pragma once

#include <string_view>

namespace strata::log {

enum class Level { Debug = 0, Info = 1, Warn = 2, Error = 3, Off = 4 };

void set_level(Level level);
Level level();
// Parses "debug", "info", "warn", "error", "off"; returns false for anything else.
bool parse_level(std::string_view text, Level* out);

void write(Level level, std::string_view message);
inline void debug(std::string_view m) { write(Level::Debug, m); }
inline void info(std::string_view m) { write(Level::Info, m); }
inline void warn(std::string_view m) { write(Level::Warn, m); }
inline void error(std::string_view m) { write(Level::Error, m); }

}  // namespace strata::log
