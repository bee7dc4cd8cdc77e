#include "strata/serve/sse.hpp"

namespace strata::serve {

std::string sse_event(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 8);
  size_t start = 0;
  while (true) {
    const size_t end = data.find('\n', start);
    out += "data: ";
    out += data.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    out += '\n';
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  out += '\n';
  return out;
}

}  // namespace strata::serve
