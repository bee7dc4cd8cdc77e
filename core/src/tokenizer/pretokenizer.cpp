#include "pretokenizer.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <span>
#include <string>

#include "strata/error.hpp"
#include "unicode.hpp"
#include "utf8.hpp"

namespace strata::tokenizer_detail {
namespace {

// The text as code points with their classes and byte offsets; white-space runs are measured once so that
// rules looking at a run's end (\s+$, \s+(?!\S)) stay linear.
struct CodePoints {
  std::vector<uint32_t> cp;
  std::vector<CharClass> cls;
  std::vector<uint32_t> offset;     // byte offset of each code point, then the text's size
  std::vector<uint32_t> space_end;  // first non-white-space index at or after each code point

  explicit CodePoints(std::string_view text) {
    cp.reserve(text.size());
    cls.reserve(text.size());
    offset.reserve(text.size() + 1);
    for (size_t pos = 0; pos < text.size();) {
      const Utf8Char c = decode_utf8(text, pos);
      cp.push_back(c.code_point);
      cls.push_back(char_class(c.code_point));
      offset.push_back(static_cast<uint32_t>(pos));
      pos += c.length;
    }
    offset.push_back(static_cast<uint32_t>(text.size()));
    space_end.resize(cp.size());
    uint32_t next = static_cast<uint32_t>(cp.size());
    for (size_t i = cp.size(); i-- > 0;) {
      if ((cls[i] & kWhiteSpaceBit) == 0) next = static_cast<uint32_t>(i);
      space_end[i] = next;
    }
  }
  size_t size() const { return cp.size(); }
};

// A rule is one regex: the end of its match starting at `pos` within the piece [.., end), or `pos` when it has
// none there. The piece's end is the end of the text for the regex (lookaheads and $ see no further).
using Rule = size_t (*)(const CodePoints& t, size_t pos, size_t end);

constexpr size_t kNoMatch = static_cast<size_t>(-1);

bool has(const CodePoints& t, size_t i, size_t end, CharClass mask) { return i < end && (t.cls[i] & mask) != 0; }
bool is_space(const CodePoints& t, size_t i, size_t end) { return has(t, i, end, kWhiteSpaceBit); }
bool is_newline(uint32_t c) { return c == '\r' || c == '\n'; }
bool is_ascii_letter(uint32_t c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool is_ascii_digit(uint32_t c) { return c >= '0' && c <= '9'; }

size_t run_class(const CodePoints& t, size_t i, size_t end, CharClass mask) {
  while (i < end && (t.cls[i] & mask) != 0) ++i;
  return i;
}

// \p{N}{1,max} (or no match: pos)
size_t digit_run(const CodePoints& t, size_t pos, size_t end, size_t max) {
  return run_class(t, pos, std::min(end, pos + max), kNumber);
}

template <class Pred>
size_t run_while(const CodePoints& t, size_t i, size_t end, Pred pred) {
  while (i < end && pred(t.cp[i], t.cls[i])) ++i;
  return i;
}

size_t space_run(const CodePoints& t, size_t i, size_t end) { return std::min<size_t>(t.space_end[i], end); }

bool in_ranges(uint32_t c, std::span<const CodePointRange> ranges) {
  return std::any_of(ranges.begin(), ranges.end(), [c](const CodePointRange& r) { return c >= r.first && c <= r.last; });
}

// 's 't 're 've 'm 'll 'd: the length of the contraction at pos, or 0. `any_case` for (?i:...).
size_t contraction(const CodePoints& t, size_t pos, size_t end, bool any_case) {
  if (pos >= end || t.cp[pos] != '\'') return 0;
  auto letter = [&](size_t i) -> uint32_t {
    if (i >= end) return 0;
    const uint32_t c = t.cp[i];
    return any_case && c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
  };
  const uint32_t a = letter(pos + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  const uint32_t b = letter(pos + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// \s+(?!\S): a white-space run, less its last character when something that is not white space follows.
size_t spaces_before_space_or_end(const CodePoints& t, size_t pos, size_t end) {
  if (!is_space(t, pos, end)) return pos;
  const size_t r = space_run(t, pos, end);
  if (r == end) return r;
  return r - pos >= 2 ? r - 1 : pos;
}

// \s*[\r\n]+|\s+(?!\S)|\s+ : up to the last line break of a white-space run; else the run less its last
// character when a non-space follows it; else the whole run.
size_t space_alternatives(const CodePoints& t, size_t pos, size_t end) {
  if (!is_space(t, pos, end)) return pos;
  const size_t r = space_run(t, pos, end);
  for (size_t i = r; i > pos; --i) {
    if (is_newline(t.cp[i - 1])) return i;
  }
  if (r == end || r - pos == 1) return r;
  return r - 1;
}

// ' ?X+' followed by a run of `tail` characters: an optional space, a run of class-X characters (given by the
// predicate), then e.g. [\r\n]*.
template <class Pred, class Tail>
size_t optional_space_run(const CodePoints& t, size_t pos, size_t end, Pred in_class, Tail tail) {
  auto x = [&](size_t i) { return i < end && in_class(t.cp[i], t.cls[i]); };
  size_t start = kNoMatch;
  if (t.cp[pos] == ' ' && x(pos + 1)) {
    start = pos + 1;
  } else if (x(pos)) {
    start = pos;
  }
  if (start == kNoMatch) return pos;
  const size_t r = run_while(t, start, end, in_class);
  return run_while(t, r, end, tail);
}

constexpr auto kNothing = [](uint32_t, CharClass) { return false; };
constexpr auto kNewline = [](uint32_t c, CharClass) { return is_newline(c); };
constexpr auto kNewlineOrSlash = [](uint32_t c, CharClass) { return is_newline(c) || c == '/'; };

// [^\s\p{L}\p{N}]
bool is_other(uint32_t, CharClass c) { return (c & (kWhiteSpaceBit | kLetter | kNumber)) == 0; }

// GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
size_t gpt2_words(const CodePoints& t, size_t pos, size_t end) {
  if (const size_t n = contraction(t, pos, end, false)) return pos + n;
  for (const CharClass mask : {kLetter, kNumber}) {
    const size_t m = optional_space_run(
        t, pos, end, [mask](uint32_t, CharClass c) { return (c & mask) != 0; }, kNothing);
    if (m != pos) return m;
  }
  const size_t m = optional_space_run(t, pos, end, is_other, kNothing);
  if (m != pos) return m;
  return spaces_before_space_or_end(t, pos, end);
}

// Llama 3 and Qwen2 (and Qwen3.5 with marks in words):
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?W+|\p{N}{1,D}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// with W = \p{L} (or [\p{L}\p{M}]) and, for Qwen3.5, \p{M} also left out of the punctuation class.
template <CharClass Word, CharClass NotOther, size_t MaxDigits>
size_t llama3_words(const CodePoints& t, size_t pos, size_t end) {
  if (const size_t n = contraction(t, pos, end, true)) return pos + n;
  const uint32_t c = t.cp[pos];
  if (!is_newline(c) && (t.cls[pos] & (kLetter | kNumber)) == 0 && has(t, pos + 1, end, Word)) {
    return run_class(t, pos + 1, end, Word);
  }
  if (has(t, pos, end, Word)) return run_class(t, pos, end, Word);
  if (has(t, pos, end, kNumber)) return digit_run(t, pos, end, MaxDigits);
  const size_t m = optional_space_run(
      t, pos, end, [](uint32_t, CharClass k) { return (k & NotOther) == 0; }, kNewline);
  if (m != pos) return m;
  return space_alternatives(t, pos, end);
}

// GPT-4o (original pattern, with true Unicode letter cases) and Tekken:
// [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+C?
// |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*C?
// |\p{N}{1,D}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+      with C = (?i:'s|'t|'re|'ve|'m|'ll|'d)
template <bool Contractions, size_t MaxDigits>
size_t cased_words(const CodePoints& t, size_t pos, size_t end) {
  auto with_contraction = [&](size_t e) { return Contractions ? e + contraction(t, e, end, true) : e; };
  // U* W+: the longest U-run that still leaves a W character after it (U* gives back characters until W+
  // can start, as a backtracking regex does), then the W-run from there.
  auto upper_then_lower = [&](size_t q) {
    const size_t r = run_class(t, q, end, kUpperOrTitle);
    for (size_t k = r + 1; k-- > q;) {
      if (has(t, k, end, kLowerOrOther)) return with_contraction(run_class(t, k, end, kLowerOrOther));
    }
    return kNoMatch;
  };
  auto upper_run = [&](size_t q) {
    if (!has(t, q, end, kUpperOrTitle)) return kNoMatch;
    const size_t r = run_class(t, q, end, kUpperOrTitle);
    return with_contraction(run_class(t, r, end, kLowerOrOther));
  };
  // Each alternative first with the optional [^\r\n\p{L}\p{N}] taken, then without it.
  const bool prefix = !is_newline(t.cp[pos]) && (t.cls[pos] & (kLetter | kNumber)) == 0;
  size_t m = prefix ? upper_then_lower(pos + 1) : kNoMatch;
  if (m == kNoMatch) m = upper_then_lower(pos);
  if (m == kNoMatch && prefix) m = upper_run(pos + 1);
  if (m == kNoMatch) m = upper_run(pos);
  if (m != kNoMatch) return m;
  if (has(t, pos, end, kNumber)) return digit_run(t, pos, end, MaxDigits);
  m = optional_space_run(t, pos, end, is_other, kNewlineOrSlash);
  if (m != pos) return m;
  return space_alternatives(t, pos, end);
}

// DeepSeek-V3: [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
// | ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
size_t deepseek_v3_words(const CodePoints& t, size_t pos, size_t end) {
  const uint32_t c = t.cp[pos];
  const bool ascii_punct = (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
                           (c >= 0x7B && c <= 0x7E);
  if (ascii_punct && pos + 1 < end && is_ascii_letter(t.cp[pos + 1])) {
    return run_while(t, pos + 1, end, [](uint32_t x, CharClass) { return is_ascii_letter(x); });
  }
  constexpr CharClass kWord = kLetter | kMark;
  if (!is_newline(c) && (t.cls[pos] & (kLetter | kPunctuation | kSymbol)) == 0 && has(t, pos + 1, end, kWord)) {
    return run_class(t, pos + 1, end, kWord);
  }
  if (has(t, pos, end, kWord)) return run_class(t, pos, end, kWord);
  const size_t m = optional_space_run(
      t, pos, end, [](uint32_t, CharClass k) { return (k & (kPunctuation | kSymbol)) != 0; }, kNewline);
  if (m != pos) return m;
  return space_alternatives(t, pos, end);
}

// \s?X+ for a class given as code point ranges or a class mask.
template <class Pred>
size_t optional_white_space_run(const CodePoints& t, size_t pos, size_t end, Pred in_class) {
  auto x = [&](size_t i) { return i < end && in_class(t.cp[i], t.cls[i]); };
  if (is_space(t, pos, end) && x(pos + 1)) return run_while(t, pos + 1, end, in_class);
  if (x(pos)) return run_while(t, pos, end, in_class);
  return pos;
}

// The letters of DeepSeek LLM's split pattern (cased letters of several scripts), as its tokenizer.json and
// llama.cpp give them.
constexpr CodePointRange kDeepseekLetters[] = {
    {0x0041, 0x005A},   {0x0061, 0x007A},   {0x00B5, 0x00B5},   {0x00C0, 0x00D6},   {0x00D8, 0x00F6},
    {0x00F8, 0x01BA},   {0x01BC, 0x01BF},   {0x01C4, 0x0293},   {0x0295, 0x02AF},   {0x0370, 0x0373},
    {0x0376, 0x0377},   {0x037B, 0x037D},   {0x037F, 0x037F},   {0x0386, 0x0386},   {0x0388, 0x038A},
    {0x038C, 0x038C},   {0x038E, 0x03A1},   {0x03A3, 0x03F5},   {0x03F7, 0x0481},   {0x048A, 0x052F},
    {0x0531, 0x0556},   {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},   {0x1C90, 0x1CBA},
    {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},   {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},
    {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},   {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},
    {0x1F5B, 0x1F5B},   {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},   {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},   {0x2102, 0x2102},   {0x2107, 0x2107},
    {0x210A, 0x2113},   {0x2115, 0x2115},   {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},
    {0x2128, 0x2128},   {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},   {0x2C7E, 0x2CE4},
    {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},   {0xA680, 0xA69B},   {0xA722, 0xA76F},
    {0xA771, 0xA787},   {0xA78B, 0xA78E},   {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},
    {0xFF21, 0xFF3A},   {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
// [!-/:-~！-／：-～‘-‟　-。]
constexpr CodePointRange kDeepseekPunctuation[] = {
    {0x0021, 0x002F}, {0x003A, 0x007E}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002},
};
// [一-龥ࠀ-一가-퟿]
constexpr CodePointRange kDeepseekCjk[] = {{0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}};
// [一-龥぀-ゟ゠-ヿ]
constexpr CodePointRange kDeepseekV3Cjk[] = {{0x4E00, 0x9FA5}, {0x3040, 0x309F}, {0x30A0, 0x30FF}};

template <const auto& Ranges>
bool in_table(uint32_t c, CharClass) {
  return in_ranges(c, Ranges);
}

size_t newline_char(const CodePoints& t, size_t pos, size_t) { return is_newline(t.cp[pos]) ? pos + 1 : pos; }

template <CharClass Mask>
size_t class_run(const CodePoints& t, size_t pos, size_t end) {
  return run_class(t, pos, end, Mask);
}

template <CharClass Mask>
size_t one_of_class(const CodePoints& t, size_t pos, size_t end) {
  return has(t, pos, end, Mask) ? pos + 1 : pos;
}

template <CharClass Mask>
size_t optional_space_class_run(const CodePoints& t, size_t pos, size_t end) {
  return optional_white_space_run(t, pos, end, [](uint32_t, CharClass c) { return (c & Mask) != 0; });
}

template <const auto& Ranges>
size_t optional_space_table_run(const CodePoints& t, size_t pos, size_t end) {
  return optional_white_space_run(t, pos, end, in_table<Ranges>);
}

template <const auto& Ranges>
size_t table_run(const CodePoints& t, size_t pos, size_t end) {
  return run_while(t, pos, end, in_table<Ranges>);
}

// \s+$
size_t trailing_spaces(const CodePoints& t, size_t pos, size_t end) {
  if (!is_space(t, pos, end)) return pos;
  const size_t r = space_run(t, pos, end);
  return r == end ? r : pos;
}

// \p{N}{1,3}
size_t digits_up_to_three(const CodePoints& t, size_t pos, size_t end) {
  return digit_run(t, pos, end, 3);
}

// [0-9][0-9][0-9]
size_t three_ascii_digits(const CodePoints& t, size_t pos, size_t end) {
  if (pos + 3 > end) return pos;
  for (size_t i = pos; i < pos + 3; ++i) {
    if (!is_ascii_digit(t.cp[i])) return pos;
  }
  return pos + 3;
}

// [\p{P}\$\+<=>\^~\|]+ (and with ` for Falcon)
template <bool Backtick>
size_t punctuation_and_symbols(const CodePoints& t, size_t pos, size_t end) {
  return run_while(t, pos, end, [](uint32_t c, CharClass k) {
    return (k & kPunctuation) != 0 || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' ||
           c == '~' || c == '|' || (Backtick && c == '`');
  });
}

constexpr Rule kDefaultRules[] = {punctuation_and_symbols<false>, gpt2_words, class_run<kNumber>,
                                  three_ascii_digits};
constexpr Rule kGpt2Rules[] = {gpt2_words};
constexpr Rule kLlama3Rules[] = {llama3_words<kLetter, kWhiteSpaceBit | kLetter | kNumber, 3>};
constexpr Rule kQwen2Rules[] = {llama3_words<kLetter, kWhiteSpaceBit | kLetter | kNumber, 1>};
constexpr Rule kQwen35Rules[] = {llama3_words<kLetter | kMark, kWhiteSpaceBit | kLetter | kMark | kNumber, 1>};
constexpr Rule kDeepseekLlmRules[] = {
    newline_char,  optional_space_table_run<kDeepseekLetters>, optional_space_table_run<kDeepseekPunctuation>,
    trailing_spaces, table_run<kDeepseekCjk>, class_run<kNumber>,
};
constexpr Rule kDeepseekCoderRules[] = {
    newline_char,           optional_space_class_run<kLetter>, optional_space_class_run<kPunctuation>,
    table_run<kDeepseekCjk>, one_of_class<kNumber>,
};
constexpr Rule kDeepseekV3Rules[] = {digits_up_to_three, table_run<kDeepseekV3Cjk>, deepseek_v3_words};
constexpr Rule kStarcoderRules[] = {one_of_class<kNumber>, gpt2_words};
constexpr Rule kFalconRules[] = {punctuation_and_symbols<true>, gpt2_words, three_ascii_digits};
constexpr Rule kGpt4oRules[] = {cased_words<true, 3>};
constexpr Rule kTekkenRules[] = {cased_words<false, 1>};

std::span<const Rule> rules_for(PreTokenizer kind) {
  switch (kind) {
    case PreTokenizer::Default: return kDefaultRules;
    case PreTokenizer::Gpt2: return kGpt2Rules;
    case PreTokenizer::Llama3: return kLlama3Rules;
    case PreTokenizer::Qwen2: return kQwen2Rules;
    case PreTokenizer::Qwen35: return kQwen35Rules;
    case PreTokenizer::DeepseekLlm: return kDeepseekLlmRules;
    case PreTokenizer::DeepseekCoder: return kDeepseekCoderRules;
    case PreTokenizer::DeepseekV3: return kDeepseekV3Rules;
    case PreTokenizer::Starcoder: return kStarcoderRules;
    case PreTokenizer::Falcon: return kFalconRules;
    case PreTokenizer::Gpt4o: return kGpt4oRules;
    case PreTokenizer::Tekken: return kTekkenRules;
  }
  return kDefaultRules;
}

struct Piece {
  uint32_t begin, end;  // code point indices
};

// One regex over every piece: matches and the gaps between them become the new pieces.
void apply_rule(Rule rule, const CodePoints& t, const std::vector<Piece>& in, std::vector<Piece>& out) {
  out.clear();
  for (const Piece& p : in) {
    size_t gap = p.begin;
    size_t pos = p.begin;
    while (pos < p.end) {
      const size_t m = rule(t, pos, p.end);
      if (m > pos) {
        if (gap < pos) out.push_back({static_cast<uint32_t>(gap), static_cast<uint32_t>(pos)});
        out.push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(m)});
        pos = gap = m;
      } else {
        ++pos;
      }
    }
    if (gap < p.end) out.push_back({static_cast<uint32_t>(gap), p.end});
  }
}

// Where llama.cpp maps several tokenizer.ggml.pre values to one set of regexes, so does this table.
const std::vector<PreTokenizerInfo> kPreTokenizers = {
    {"default", PreTokenizer::Default, false, false},
    {"gpt-2", PreTokenizer::Gpt2, false, false},
    {"phi-2", PreTokenizer::Gpt2, false, false},
    {"mpt", PreTokenizer::Gpt2, false, false},
    {"olmo", PreTokenizer::Gpt2, false, false},
    {"jais", PreTokenizer::Gpt2, false, false},
    {"trillion", PreTokenizer::Gpt2, false, false},
    {"exaone4", PreTokenizer::Gpt2, false, false},
    {"gigachat", PreTokenizer::Gpt2, false, false},
    {"a.x-4.0", PreTokenizer::Gpt2, false, false},
    {"mellum", PreTokenizer::Gpt2, false, false},
    {"granite-docling", PreTokenizer::Gpt2, false, false},
    {"llama3", PreTokenizer::Llama3, true, true},
    {"llama-v3", PreTokenizer::Llama3, true, true},
    {"llama-bpe", PreTokenizer::Llama3, true, true},
    {"falcon3", PreTokenizer::Llama3, true, true},
    {"falcon-h1", PreTokenizer::Llama3, true, true},
    {"pixtral", PreTokenizer::Llama3, true, true},
    {"midm-2.0", PreTokenizer::Llama3, true, true},
    {"lfm2", PreTokenizer::Llama3, true, true},
    {"dbrx", PreTokenizer::Llama3, false, false},
    {"smaug-bpe", PreTokenizer::Llama3, false, false},
    {"glm4", PreTokenizer::Llama3, false, false},
    {"chatglm-bpe", PreTokenizer::Llama3, false, false},
    {"qwen2", PreTokenizer::Qwen2, false, false},
    {"deepseek-r1-qwen", PreTokenizer::Qwen2, false, false},
    {"stablelm2", PreTokenizer::Qwen2, false, false},
    {"hunyuan", PreTokenizer::Qwen2, false, false},
    {"megrez", PreTokenizer::Qwen2, false, false},
    {"grok-2", PreTokenizer::Qwen2, false, false},
    {"bailingmoe", PreTokenizer::Qwen2, false, false},
    {"bailingmoe2", PreTokenizer::Qwen2, false, false},
    {"llada-moe", PreTokenizer::Qwen2, false, false},
    {"solar-open", PreTokenizer::Qwen2, false, false},
    {"qwen35", PreTokenizer::Qwen35, false, false},
    {"deepseek-llm", PreTokenizer::DeepseekLlm, false, false},
    {"deepseek-coder", PreTokenizer::DeepseekCoder, false, false},
    {"deepseek-v3", PreTokenizer::DeepseekV3, false, false},
    {"hunyuan-dense", PreTokenizer::DeepseekV3, false, false},
    {"starcoder", PreTokenizer::Starcoder, false, false},
    {"refact", PreTokenizer::Starcoder, false, false},
    {"command-r", PreTokenizer::Starcoder, false, false},
    {"smollm", PreTokenizer::Starcoder, false, false},
    {"codeshell", PreTokenizer::Starcoder, false, false},
    {"exaone", PreTokenizer::Starcoder, false, false},
    {"minerva-7b", PreTokenizer::Starcoder, false, false},
    {"falcon", PreTokenizer::Falcon, false, false},
    {"gpt-4o", PreTokenizer::Gpt4o, false, false},
    {"llama4", PreTokenizer::Gpt4o, false, false},
    {"minimax-m2", PreTokenizer::Gpt4o, false, false},
    {"tekken", PreTokenizer::Tekken, true, true},
};

}  // namespace

const std::vector<PreTokenizerInfo>& known_pre_tokenizers() { return kPreTokenizers; }

const PreTokenizerInfo* find_pre_tokenizer(std::string_view name) {
  if (name.empty()) name = "default";
  for (const PreTokenizerInfo& p : kPreTokenizers) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

void split_words(PreTokenizer kind, std::string_view text, std::vector<ByteSpan>& words) {
  words.clear();
  if (text.empty()) return;
  if (text.size() >= std::numeric_limits<uint32_t>::max()) {
    throw Error("cannot pre-tokenize " + std::to_string(text.size()) + " bytes at once; split the text below 4 GiB");
  }
  const CodePoints t(text);
  std::vector<Piece> pieces{{0, static_cast<uint32_t>(t.size())}};
  std::vector<Piece> next;
  for (const Rule rule : rules_for(kind)) {
    apply_rule(rule, t, pieces, next);
    pieces.swap(next);
  }
  words.reserve(pieces.size());
  for (const Piece& p : pieces) words.push_back({t.offset[p.begin], t.offset[p.end]});
}

}  // namespace strata::tokenizer_detail

namespace strata {

std::vector<std::string_view> pre_tokenize(PreTokenizer kind, std::string_view text) {
  std::vector<tokenizer_detail::ByteSpan> spans;
  tokenizer_detail::split_words(kind, text, spans);
  std::vector<std::string_view> words;
  words.reserve(spans.size());
  for (const auto& s : spans) words.push_back(text.substr(s.begin, s.end - s.begin));
  return words;
}

std::vector<std::string> pre_tokenizer_names() {
  std::vector<std::string> names;
  for (const auto& p : tokenizer_detail::known_pre_tokenizers()) names.emplace_back(p.name);
  return names;
}

std::optional<PreTokenizer> pre_tokenizer_from_name(std::string_view name) {
  const auto* p = tokenizer_detail::find_pre_tokenizer(name);
  if (p == nullptr) return std::nullopt;
  return p->kind;
}

}  // namespace strata
