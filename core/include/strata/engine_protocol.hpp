// `strata engine`'s lines: an engine process driven over stdin and stdout (the elastic pair's desk drives two).
//
// In: one line each, either a request (one JSON object) or a control line:
//   PEER_DETACH     stop using the peer card (its slots are given back) between two windows
//   PEER_ATTACH     take the peer card back (its slots refilled from the host arena)
//   POOL_HOLD n     the hybrid path's CPU expert pool uses at most n workers (0: all of them again)
//   LINK_SERVE 0|1  stop or start serving the other engine's rows over the peer link
//   CANCEL [id]     the running request (or request `id`, a JSON number or string) stops at its next token, and
//                   its done line says "cancelled"; a request `id` that has not started yet will not start
// A request: {"id": ..., "prompt": TEXT or "prompt_ids": [...], and optionally "max_tokens", "temperature",
// "top_k", "top_p", "min_p", "frequency_penalty", "presence_penalty" (-2 to 2, OpenAI's, over the reply's tokens),
// "logit_bias": {"token id": bias from -100 to 100}, "seed", "stop": [...], "end_tokens": [ids that end the
// reply besides EOS], "stream"}.
// The engine keeps its last conversation (prompt and reply) in its KV cache: a request that starts with it feeds
// only the rest (the done line's "reused_tokens").
// Out: a JSON object per line for requests (tokens as they come, then one "done" line or one "error" line), and
// one "CTL ..." line per control line, saying what was done or why not ("CTL ERR ..." for a line that is neither).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "strata/generate.hpp"

namespace strata::protocol {

enum class ControlKind { PeerDetach, PeerAttach, PoolHold, LinkServe, Cancel };

struct ControlLine {
  ControlKind kind;
  uint32_t value = 0;  // POOL_HOLD's n, LINK_SERVE's 0 or 1
  std::string id;      // CANCEL's request id as JSON text ("7", "\"a\""), or empty: the running request
};

// A line that is not a request: the control line, or the reason it is none (with the list of control lines). The
// caller answers that reason as "CTL ERR <reason>".
std::variant<ControlLine, std::string> parse_control_line(std::string_view line);
// "PEER_DETACH", "POOL_HOLD 4", ...: the line as it is answered.
std::string control_name(const ControlLine& c);

struct EngineRequest {
  std::string id;                    // the request's id as JSON text ("7", "\"a\"")
  std::optional<std::string> prompt;  // text: BOS and the dummy-prefix space added, as `strata run`
  std::vector<TokenId> prompt_ids;   // or ids, as fed; -1 (kImageMark) marks where image k goes
  std::vector<std::string> images;   // files or data URLs (a Qwen3-VL model with its mmproj), in prompt order
  CompletionOptions options;
  bool stream = true;                // a line per token
};

// Parses a request line against the launch's defaults (max_tokens, sampling). Returns the request, or the reason
// it is refused (a message naming the field and what it must be); `id` is then the id when one could be read.
struct ParsedRequest {
  std::optional<EngineRequest> request;
  std::string error;
  std::string id = "null";
};
ParsedRequest parse_engine_request(std::string_view line, const CompletionOptions& defaults, uint32_t n_vocab);

}  // namespace strata::protocol
