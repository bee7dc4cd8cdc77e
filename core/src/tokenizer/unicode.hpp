// Unicode general categories and the White_Space property, from tables generated out of the Unicode Character
// Database (unicode_tables.cpp, scripts/gen_unicode_tables.py). The pre-tokenizers' \p{L}, \p{N}, \s, ...
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::tokenizer_detail {

// The order is the generator's (scripts/gen_unicode_tables.py, CATEGORIES).
enum class GeneralCategory : uint8_t {
  Lu, Ll, Lt, Lm, Lo,
  Mn, Mc, Me,
  Nd, Nl, No,
  Pc, Pd, Ps, Pe, Pi, Pf, Po,
  Sm, Sc, Sk, So,
  Zs, Zl, Zp,
  Cc, Cf, Cs, Co, Cn,
};

struct CategoryRun {
  uint32_t first;
  GeneralCategory category;
};

struct CodePointRange {
  uint32_t first, last;
};

extern const char kUnicodeVersion[];
extern const CategoryRun kCategoryRuns[];
extern const size_t kCategoryRunCount;
extern const CodePointRange kWhiteSpace[];
extern const size_t kWhiteSpaceCount;

// A code point's classes as bits, so that a regex class is one mask test: one bit per general category, and
// one for White_Space.
using CharClass = uint32_t;

constexpr CharClass category_bit(GeneralCategory c) { return CharClass{1} << static_cast<unsigned>(c); }

inline constexpr CharClass kWhiteSpaceBit = CharClass{1} << 31;
inline constexpr CharClass kLetter = category_bit(GeneralCategory::Lu) | category_bit(GeneralCategory::Ll) |
                                     category_bit(GeneralCategory::Lt) | category_bit(GeneralCategory::Lm) |
                                     category_bit(GeneralCategory::Lo);
inline constexpr CharClass kMark =
    category_bit(GeneralCategory::Mn) | category_bit(GeneralCategory::Mc) | category_bit(GeneralCategory::Me);
inline constexpr CharClass kNumber =
    category_bit(GeneralCategory::Nd) | category_bit(GeneralCategory::Nl) | category_bit(GeneralCategory::No);
inline constexpr CharClass kPunctuation =
    category_bit(GeneralCategory::Pc) | category_bit(GeneralCategory::Pd) | category_bit(GeneralCategory::Ps) |
    category_bit(GeneralCategory::Pe) | category_bit(GeneralCategory::Pi) | category_bit(GeneralCategory::Pf) |
    category_bit(GeneralCategory::Po);
inline constexpr CharClass kSymbol = category_bit(GeneralCategory::Sm) | category_bit(GeneralCategory::Sc) |
                                     category_bit(GeneralCategory::Sk) | category_bit(GeneralCategory::So);
// GPT-4o's split: letters that may start a capitalised word, and letters that may continue one.
inline constexpr CharClass kUpperOrTitle = category_bit(GeneralCategory::Lu) | category_bit(GeneralCategory::Lt) |
                                           category_bit(GeneralCategory::Lm) | category_bit(GeneralCategory::Lo) |
                                           kMark;
inline constexpr CharClass kLowerOrOther =
    category_bit(GeneralCategory::Ll) | category_bit(GeneralCategory::Lm) | category_bit(GeneralCategory::Lo) | kMark;

GeneralCategory general_category(uint32_t code_point);
bool is_white_space(uint32_t code_point);
// category_bit(general_category(cp)) | (White_Space ? kWhiteSpaceBit : 0). Code points above U+10FFFF are Cn.
CharClass char_class(uint32_t code_point);

}  // namespace strata::tokenizer_detail
