// The lexer: jinja2's root state (text up to the next tag, with its lstrip rule), comments, raw blocks, and the
// expression tokens inside tags. A tag ends only where its brackets are balanced, as in jinja2.
#include "lexer.hpp"

#include <algorithm>
#include <cctype>

#include "strata/chat_template.hpp"
#include "value.hpp"

namespace strata::chat {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src.size(); ++i) {
      if (src[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      size_t start = find_tag(pos_);
      if (start == std::string_view::npos) {
        emit_text(std::string(src_.substr(pos_)), pos_);
        break;
      }
      const char kind = src_[start + 1];
      const char sign = start + 2 < src_.size() && (src_[start + 2] == '-' || src_[start + 2] == '+') ? src_[start + 2] : 0;
      std::string text(src_.substr(pos_, start - pos_));
      const size_t text_pos = pos_;

      size_t raw_end = 0;
      const bool raw = kind == '%' && match_raw_begin(start, &raw_end);
      strip_before(text, sign, kind != '{', line_starting);
      emit_text(std::move(text), text_pos);

      if (raw) {
        lex_raw(start, raw_end);
      } else if (kind == '#') {
        lex_comment(start);
      } else {
        lex_tag(start, kind, sign != 0);
      }
      line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
    }
    tokens_.push_back(Token{TokenKind::End, "", line_of(src_.size()), column_of(src_.size())});
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string_view::npos;
  }

  int line_of(size_t pos) const {
    return static_cast<int>(std::upper_bound(line_starts_.begin(), line_starts_.end(), pos) - line_starts_.begin());
  }
  int column_of(size_t pos) const { return static_cast<int>(pos - line_starts_[static_cast<size_t>(line_of(pos) - 1)]) + 1; }

  [[noreturn]] void error(const std::string& msg, size_t pos) const {
    throw TemplateError(msg, line_of(pos), column_of(pos));
  }

  void emit_text(std::string text, size_t pos) {
    if (!text.empty()) tokens_.push_back(Token{TokenKind::Text, std::move(text), line_of(pos), column_of(pos)});
  }

  // `-` before a tag strips all whitespace before it; otherwise lstrip_blocks strips the spaces before a block
  // or comment tag when nothing else precedes it on its line.
  static void strip_before(std::string& text, char sign, bool block_like, bool line_starting) {
    if (sign == '-') {
      size_t end = text.size();
      while (end > 0 && is_space(text[end - 1])) --end;
      text.resize(end);
    } else if (sign != '+' && block_like) {
      const size_t nl = text.rfind('\n');
      const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
      if ((l_pos > 0 || line_starting) && l_pos < text.size() &&
          std::all_of(text.begin() + static_cast<std::ptrdiff_t>(l_pos), text.end(), is_space)) {
        text.resize(l_pos);
      }
    }
  }

  size_t skip_spaces(size_t p) const {
    while (p < src_.size() && is_space(src_[p])) ++p;
    return p;
  }

  bool match_word(size_t p, std::string_view word) const {
    if (src_.substr(p, word.size()) != word) return false;
    const size_t q = p + word.size();
    return q >= src_.size() || !(std::isalnum(static_cast<unsigned char>(src_[q])) || src_[q] == '_');
  }

  // {%[-+]? raw [-]%}: no trim_blocks after it, as in jinja2.
  bool match_raw_begin(size_t start, size_t* end) const {
    size_t p = start + 2;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    p = skip_spaces(p);
    if (!match_word(p, "raw")) return false;
    p = skip_spaces(p + 3);
    if (src_.substr(p, 3) == "-%}") {
      *end = skip_spaces(p + 3);
      return true;
    }
    if (src_.substr(p, 2) == "%}") {
      *end = p + 2;
      return true;
    }
    return false;
  }

  // After a block or comment tag's closing delimiter at `p` (just past it), the text that follows: `-` strips
  // all whitespace, `+` none, otherwise trim_blocks takes one newline.
  size_t after_block_end(size_t p, char sign) const {
    if (sign == '-') return skip_spaces(p);
    if (sign == '+') return p;
    return p < src_.size() && src_[p] == '\n' ? p + 1 : p;
  }

  void lex_comment(size_t start) {
    const size_t close = src_.find("#}", start + 2);
    if (close == std::string_view::npos) error("unclosed comment: missing '#}'", start);
    const char sign = close > start + 2 && (src_[close - 1] == '-' || src_[close - 1] == '+') ? src_[close - 1] : 0;
    pos_ = after_block_end(close + 2, sign);
  }

  void lex_raw(size_t start, size_t body) {
    for (size_t p = find_tag(body); p != std::string_view::npos; p = find_tag(p + 1)) {
      if (src_[p + 1] != '%') continue;
      size_t q = p + 2;
      const char sign = q < src_.size() && (src_[q] == '-' || src_[q] == '+') ? src_[q] : 0;
      if (sign) ++q;
      q = skip_spaces(q);
      if (!match_word(q, "endraw")) continue;
      q = skip_spaces(q + 6);
      char end_sign = 0;
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) end_sign = src_[q++];
      if (src_.substr(q, 2) != "%}") continue;
      std::string text(src_.substr(body, p - body));
      strip_before(text, sign, true, false);
      emit_text(std::move(text), body);
      pos_ = after_block_end(q + 2, end_sign);
      return;
    }
    error("unclosed 'raw' block: missing '{% endraw %}'", start);
  }

  void lex_tag(size_t start, char kind, bool has_sign) {
    const bool block = kind == '%';
    tokens_.push_back(Token{block ? TokenKind::BlockBegin : TokenKind::PrintBegin, block ? "{%" : "{{",
                            line_of(start), column_of(start)});
    size_t p = start + 2 + (has_sign ? 1 : 0);
    std::vector<char> brackets;
    const char close = block ? '%' : '}';
    for (;;) {
      p = skip_spaces(p);
      if (p >= src_.size()) {
        error(std::string("unclosed tag: missing '") + (block ? "%}" : "}}") + "'", start);
      }
      if (brackets.empty()) {
        char sign = 0;
        size_t q = p;
        if (src_[q] == '-' || (block && src_[q] == '+')) sign = src_[q++];
        if (q + 1 < src_.size() && src_[q] == close && src_[q + 1] == '}') {
          tokens_.push_back(Token{block ? TokenKind::BlockEnd : TokenKind::PrintEnd, block ? "%}" : "}}",
                                  line_of(p), column_of(p)});
          pos_ = block ? after_block_end(q + 2, sign) : (sign == '-' ? skip_spaces(q + 2) : q + 2);
          return;
        }
      }
      p = lex_token(p, brackets);
    }
  }

  size_t lex_token(size_t p, std::vector<char>& brackets) {
    const char c = src_[p];
    const int line = line_of(p), col = column_of(p);
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t q = p;
      while (q < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[q])) || src_[q] == '_')) ++q;
      tokens_.push_back(Token{TokenKind::Name, std::string(src_.substr(p, q - p)), line, col});
      return q;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return lex_number(p);
    if (c == '\'' || c == '"') return lex_string(p);
    static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "/", "*", "%", "~", "[", "]",
                                       "(", ")", "{", "}", "<", ">", "=", ".", ":", "|", ",", ";"};
    for (const char* op : kOps) {
      const std::string_view o(op);
      if (src_.substr(p, o.size()) != o) continue;
      if (o == "(" || o == "[" || o == "{") brackets.push_back(o == "(" ? ')' : o == "[" ? ']' : '}');
      if (o == ")" || o == "]" || o == "}") {
        if (brackets.empty()) error("unexpected '" + std::string(o) + "'", p);
        if (brackets.back() != o[0]) {
          error("unexpected '" + std::string(o) + "', expected '" + std::string(1, brackets.back()) + "'", p);
        }
        brackets.pop_back();
      }
      tokens_.push_back(Token{TokenKind::Operator, std::string(o), line, col});
      return p + o.size();
    }
    error("unexpected character '" + std::string(1, c) + "' in tag", p);
  }

  size_t digits(size_t p) const {
    while (p < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[p])) ||
                               (src_[p] == '_' && p + 1 < src_.size() && std::isdigit(static_cast<unsigned char>(src_[p + 1]))))) {
      ++p;
    }
    return p;
  }

  size_t lex_number(size_t p) {
    const int line = line_of(p), col = column_of(p);
    size_t q = digits(p);
    bool is_float = false;
    if (q + 1 < src_.size() && src_[q] == '.' && std::isdigit(static_cast<unsigned char>(src_[q + 1]))) {
      q = digits(q + 1);
      is_float = true;
    }
    if (q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
      size_t r = q + 1;
      if (r < src_.size() && (src_[r] == '+' || src_[r] == '-')) ++r;
      if (r < src_.size() && std::isdigit(static_cast<unsigned char>(src_[r]))) {
        q = digits(r);
        is_float = true;
      }
    }
    std::string text;
    for (size_t i = p; i < q; ++i) {
      if (src_[i] != '_') text += src_[i];
    }
    tokens_.push_back(Token{is_float ? TokenKind::Float : TokenKind::Int, text, line, col});
    return q;
  }

  static int hex_value(char h) {
    if (h >= '0' && h <= '9') return h - '0';
    if (h >= 'a' && h <= 'f') return h - 'a' + 10;
    if (h >= 'A' && h <= 'F') return h - 'A' + 10;
    return -1;
  }

  // A string literal, unescaped as Python's unicode-escape codec does.
  size_t lex_string(size_t p) {
    const char quote = src_[p];
    const int line = line_of(p), col = column_of(p);
    std::string out;
    size_t q = p + 1;
    for (;;) {
      if (q >= src_.size()) error("unclosed string literal", p);
      const char c = src_[q];
      if (c == quote) break;
      if (c != '\\') {
        out += c;
        ++q;
        continue;
      }
      if (q + 1 >= src_.size()) error("unclosed string literal", p);
      const char e = src_[q + 1];
      q += 2;
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case '\n': break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          char32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            const int h = q + k < src_.size() ? hex_value(src_[q + k]) : -1;
            if (h < 0) error(std::string("truncated \\") + e + " escape in string literal", q - 2);
            cp = cp * 16 + static_cast<char32_t>(h);
          }
          q += n;
          utf8_append(out, cp);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            char32_t cp = static_cast<char32_t>(e - '0');
            for (int k = 0; k < 2 && q < src_.size() && src_[q] >= '0' && src_[q] <= '7'; ++k) cp = cp * 8 + static_cast<char32_t>(src_[q++] - '0');
            utf8_append(out, cp);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    tokens_.push_back(Token{TokenKind::String, std::move(out), line, col});
    return q + 1;
  }

  std::string_view src_;
  size_t pos_ = 0;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

std::string normalize_source(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace strata::chat
