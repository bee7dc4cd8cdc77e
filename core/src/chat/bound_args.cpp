// Binding a call's arguments to a Python-style signature, with Python's TypeErrors for the wrong ones.
#include "builtins.hpp"

namespace strata::chat {

BoundArgs::BoundArgs(const std::string& what, CallArgs& args, std::initializer_list<const char*> params,
                     size_t required, bool allow_rest)
    : values_(params.size()), given_(params.size(), false) {
  const std::vector<const char*> names(params);
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < names.size()) {
      values_[i] = args.positional[i];
      given_[i] = true;
    } else if (allow_rest) {
      rest_.push_back(args.positional[i]);
    } else {
      fail("TypeError: " + what + " takes at most " + std::to_string(names.size()) + " argument(s) (" +
           std::to_string(args.positional.size()) + " given)");
    }
  }
  for (const auto& [key, value] : args.keyword) {
    size_t i = 0;
    while (i < names.size() && key != names[i]) ++i;
    if (i == names.size()) fail("TypeError: " + what + " got an unexpected keyword argument '" + key + "'");
    if (given_[i]) fail("TypeError: " + what + " got multiple values for argument '" + key + "'");
    values_[i] = value;
    given_[i] = true;
  }
  for (size_t i = 0; i < required; ++i) {
    if (!given_[i]) fail("TypeError: " + what + " is missing its required argument '" + names[i] + "'");
  }
}

const Value& BoundArgs::get(size_t i, const Value& fallback) const { return given_[i] ? values_[i] : fallback; }
bool BoundArgs::given(size_t i) const { return given_[i]; }

}  // namespace strata::chat
