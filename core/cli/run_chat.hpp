// `strata run --chat`: an interactive conversation on stdin and stdout, rendered with the model's chat template
// (as `strata serve` renders it) and kept in the KV between turns, so that each turn feeds only its new tokens.
#pragma once

#include <string>

#include "strata/engine.hpp"
#include "strata/generate.hpp"

namespace strata::cli {

// Reads a user turn per line until end of input; each reply goes to stdout followed by a newline, the "> "
// prompt and a line per turn (tokens reused, fed, generated, rates) to stderr. `system`: a first system message
// (none when empty).
void run_chat(Engine& engine, const GenerateOptions& options, const std::string& system);

}  // namespace strata::cli
