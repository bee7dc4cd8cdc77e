// Server-sent events as OpenAI's streaming API frames them: each chunk one `data:` event, then `data: [DONE]`.
#pragma once

#include <string>
#include <string_view>

namespace strata::serve {

// One event carrying `data`: each of its lines after "data: ", then a blank line (a JSON dump has one line).
std::string sse_event(std::string_view data);

// The stream's last event.
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace strata::serve
