// libFuzzer target for `strata engine`'s input lines (core/src/engine/engine_protocol.cpp): any line is a control
// line, or the reason it is none; any request line is a request or a reason naming the problem; never an exception
// or a crash. An accepted request keeps the parser's promises: exactly one of prompt and prompt_ids, ids of the
// vocabulary or -1, one image per -1 mark, sampling values in range.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "strata/engine_protocol.hpp"

namespace protocol = strata::protocol;

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

constexpr uint32_t kVocab = 1000;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const auto control = protocol::parse_control_line(line);
  if (const auto* c = std::get_if<protocol::ControlLine>(&control)) {
    require(!protocol::control_name(*c).empty());
  } else {
    require(!std::get<std::string>(control).empty());
  }
  strata::CompletionOptions defaults;
  const protocol::ParsedRequest parsed = protocol::parse_engine_request(line, defaults, kVocab);
  require(!parsed.id.empty());
  if (!parsed.request) {
    require(!parsed.error.empty());
    return 0;
  }
  const protocol::EngineRequest& r = *parsed.request;
  require(r.prompt.has_value() != !r.prompt_ids.empty());
  for (strata::TokenId id : r.prompt_ids) require(id == -1 || (id >= 0 && static_cast<uint32_t>(id) < kVocab));
  const auto marks = static_cast<size_t>(std::count(r.prompt_ids.begin(), r.prompt_ids.end(), strata::TokenId{-1}));
  if (!r.prompt_ids.empty()) require(marks == r.images.size());
  require(r.options.max_tokens >= -1);
  require(r.options.sampling.temperature >= 0.0f && r.options.sampling.temperature <= 100.0f);
  return 0;
}
