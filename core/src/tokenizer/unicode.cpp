#include "unicode.hpp"

#include <algorithm>
#include <array>
#include <iterator>

namespace strata::tokenizer_detail {
namespace {

CharClass lookup_class(uint32_t cp) {
  CharClass c = category_bit(general_category(cp));
  if (is_white_space(cp)) c |= kWhiteSpaceBit;
  return c;
}

// Most text is Latin-1; its classes come from a table instead of a binary search.
const std::array<CharClass, 256>& latin1_classes() {
  static const std::array<CharClass, 256> table = [] {
    std::array<CharClass, 256> t{};
    for (uint32_t cp = 0; cp < t.size(); ++cp) t[cp] = lookup_class(cp);
    return t;
  }();
  return table;
}

}  // namespace

GeneralCategory general_category(uint32_t cp) {
  if (cp > 0x10FFFF) return GeneralCategory::Cn;
  // The last run starting at or before cp.
  const CategoryRun* it = std::upper_bound(kCategoryRuns, kCategoryRuns + kCategoryRunCount, cp,
                                    [](uint32_t value, const CategoryRun& run) { return value < run.first; });
  return std::prev(it)->category;
}

bool is_white_space(uint32_t cp) {
  return std::any_of(kWhiteSpace, kWhiteSpace + kWhiteSpaceCount,
                     [cp](const CodePointRange& r) { return cp >= r.first && cp <= r.last; });
}

CharClass char_class(uint32_t cp) {
  if (cp < 256) return latin1_classes()[cp];
  return lookup_class(cp);
}

}  // namespace strata::tokenizer_detail
