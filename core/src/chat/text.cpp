// Python str semantics by code point. Case changes cover the alphabets with simple case pairs (Latin, Greek,
// Cyrillic, Armenian); scripts without case pass through, and rarer cased ones are left as they are.
#include "text.hpp"

#include "../tokenizer/unicode.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>

namespace strata::chat {
namespace {

// Simple case mappings for the scripts chat templates meet: ASCII, Latin-1, Latin Extended-A, Greek,
// Cyrillic, Armenian and fullwidth Latin. Other characters have no case here.
char32_t to_upper(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c == 0xB5) return 0x39C;
  if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) return (c & 1) ? c - 1 : c;
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c : c - 1;
  if (c == 0x131) return 'I';
  if (c == 0x17F) return 'S';
  if (c >= 0x3B1 && c <= 0x3C9) return c == 0x3C2 ? 0x3A3 : c - 32;
  if (c == 0x3AC) return 0x386;
  if (c >= 0x3AD && c <= 0x3AF) return c - 37;
  if (c == 0x3CC) return 0x38C;
  if (c == 0x3CD || c == 0x3CE) return c - 63;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  if (c >= 0x460 && c <= 0x481) return (c & 1) ? c - 1 : c;
  if (c >= 0x561 && c <= 0x586) return c - 48;
  if (c >= 0xFF41 && c <= 0xFF5A) return c - 32;
  return c;
}

char32_t to_lower(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c == 0x178) return 0xFF;
  if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) return (c & 1) ? c : c + 1;
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c + 1 : c;
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 37;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 63;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if (c >= 0x460 && c <= 0x481) return (c & 1) ? c : c + 1;
  if (c >= 0x531 && c <= 0x556) return c + 48;
  if (c >= 0xFF21 && c <= 0xFF3A) return c + 32;
  return c;
}

bool is_cased(char32_t c) { return to_upper(c) != c || to_lower(c) != c || c == 0xDF || c == 0x130; }

// str.upper: ß becomes "SS"; İ lowers to "i̇", as Python's full case mapping does.
void append_upper(std::string& out, char32_t c) {
  if (c == 0xDF) {
    out += "SS";
  } else {
    utf8_append(out, to_upper(c));
  }
}

void append_lower(std::string& out, char32_t c) {
  if (c == 0x130) {
    out += "i\xcc\x87";
  } else {
    utf8_append(out, to_lower(c));
  }
}

}  // namespace

bool py_isspace(char32_t c) {
  return (c >= 0x1C && c <= 0x1F) || tokenizer_detail::is_white_space(static_cast<uint32_t>(c));
}

namespace {
tokenizer_detail::CharClass char_class(char32_t c) { return tokenizer_detail::char_class(static_cast<uint32_t>(c)); }
}  // namespace

bool py_isalpha(char32_t c) { return (char_class(c) & tokenizer_detail::kLetter) != 0; }
bool py_isdecimal(char32_t c) {
  return (char_class(c) & tokenizer_detail::category_bit(tokenizer_detail::GeneralCategory::Nd)) != 0;
}
bool py_isnumeric(char32_t c) { return (char_class(c) & tokenizer_detail::kNumber) != 0; }
bool py_isalnum(char32_t c) { return py_isalpha(c) || py_isnumeric(c); }

bool py_isprintable(char32_t c) {
  if (c == ' ') return true;
  using tokenizer_detail::GeneralCategory;
  switch (tokenizer_detail::general_category(static_cast<uint32_t>(c))) {
    case GeneralCategory::Cc:
    case GeneralCategory::Cf:
    case GeneralCategory::Cs:
    case GeneralCategory::Co:
    case GeneralCategory::Cn:
    case GeneralCategory::Zl:
    case GeneralCategory::Zp:
    case GeneralCategory::Zs: return false;
    default: return true;
  }
}

std::string py_strip(const std::string& s, const std::string* chars, bool left, bool right) {
  const std::u32string u = utf8_decode(s);
  const std::u32string set = chars ? utf8_decode(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : py_isspace(c); };
  size_t b = 0, e = u.size();
  if (left) {
    while (b < e && strip_it(u[b])) ++b;
  }
  if (right) {
    while (e > b && strip_it(u[e - 1])) --e;
  }
  return utf8_encode(std::u32string_view(u).substr(b, e - b));
}

std::vector<std::string> py_split(const std::string& s, const std::string* sep, int64_t maxsplit, bool from_right) {
  std::vector<std::string> out;
  if (sep != nullptr) {
    if (sep->empty()) fail("ValueError: empty separator");
    if (!from_right) {
      size_t start = 0;
      for (;;) {
        const size_t at = (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) ? s.find(*sep, start) : std::string::npos;
        if (at == std::string::npos) {
          out.push_back(s.substr(start));
          return out;
        }
        out.push_back(s.substr(start, at - start));
        start = at + sep->size();
      }
    }
    size_t end = s.size();
    for (;;) {
      size_t at = std::string::npos;
      if ((maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) && end >= sep->size()) {
        at = s.rfind(*sep, end - sep->size());
      }
      if (at == std::string::npos) {
        out.insert(out.begin(), s.substr(0, end));
        return out;
      }
      out.insert(out.begin(), s.substr(at + sep->size(), end - at - sep->size()));
      end = at;
    }
  }
  const std::u32string u = utf8_decode(s);
  if (!from_right) {
    size_t i = 0;
    while (i < u.size()) {
      while (i < u.size() && py_isspace(u[i])) ++i;
      if (i >= u.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
        out.push_back(utf8_encode(u.substr(i)));  // the rest as it is, trailing whitespace included
        break;
      }
      size_t j = i;
      while (j < u.size() && !py_isspace(u[j])) ++j;
      out.push_back(utf8_encode(u.substr(i, j - i)));
      i = j;
    }
    return out;
  }
  size_t i = u.size();
  while (i > 0) {
    while (i > 0 && py_isspace(u[i - 1])) --i;
    if (i == 0) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
      out.insert(out.begin(), utf8_encode(u.substr(0, i)));  // leading whitespace included
      break;
    }
    size_t j = i;
    while (j > 0 && !py_isspace(u[j - 1])) --j;
    out.insert(out.begin(), utf8_encode(u.substr(j, i - j)));
    i = j;
  }
  return out;
}

std::vector<std::string> py_splitlines(const std::string& s, bool keepends) {
  const std::u32string u = utf8_decode(s);
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < u.size(); ++i) {
    const char32_t c = u[i];
    const bool brk = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
                     c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!brk) continue;
    size_t end = i + 1;
    if (c == '\r' && i + 1 < u.size() && u[i + 1] == '\n') end = i + 2;
    out.push_back(utf8_encode(u.substr(start, (keepends ? end : i) - start)));
    start = end;
    i = end - 1;
  }
  if (start < u.size()) out.push_back(utf8_encode(u.substr(start)));
  return out;
}

std::string py_upper(const std::string& s) {
  std::string out;
  for (const char32_t c : utf8_decode(s)) append_upper(out, c);
  return out;
}

std::string py_lower(const std::string& s) {
  const std::u32string u = utf8_decode(s);
  std::string out;
  for (size_t i = 0; i < u.size(); ++i) {
    // Python's Final_Sigma: a capital sigma ending a word lowers to ς.
    if (u[i] == 0x3A3 && i > 0 && is_cased(u[i - 1]) && (i + 1 == u.size() || !is_cased(u[i + 1]))) {
      utf8_append(out, 0x3C2);
    } else {
      append_lower(out, u[i]);
    }
  }
  return out;
}

std::string py_capitalize(const std::string& s) {
  const std::u32string u = utf8_decode(s);
  if (u.empty()) return s;
  std::string out;
  append_upper(out, u[0]);
  return out + py_lower(utf8_encode(std::u32string_view(u).substr(1)));
}

std::string py_title(const std::string& s) {
  std::string out;
  bool prev_cased = false;
  for (const char32_t c : utf8_decode(s)) {
    const bool cased = is_cased(c);
    if (cased && !prev_cased) {
      append_upper(out, c);
    } else if (cased) {
      append_lower(out, c);
    } else {
      utf8_append(out, c);
    }
    prev_cased = cased;
  }
  return out;
}

bool py_is_cased(char32_t c) { return is_cased(c); }
bool py_is_upper_char(char32_t c) { return is_cased(c) && to_lower(c) != c; }
bool py_is_lower_char(char32_t c) { return is_cased(c) && to_upper(c) != c; }

std::string py_replace(const std::string& s, const std::string& old, const std::string& repl, int64_t count) {
  std::string out;
  if (old.empty()) {
    // Python inserts `repl` before every character and at the end.
    const std::u32string u = utf8_decode(s);
    int64_t n = 0;
    for (const char32_t c : u) {
      if (count < 0 || n < count) {
        out += repl;
        ++n;
      }
      utf8_append(out, c);
    }
    if (count < 0 || n < count) out += repl;
    return out;
  }
  size_t start = 0;
  int64_t n = 0;
  for (;;) {
    const size_t at = (count < 0 || n < count) ? s.find(old, start) : std::string::npos;
    if (at == std::string::npos) break;
    out.append(s, start, at - start);
    out += repl;
    start = at + old.size();
    ++n;
  }
  out.append(s, start, std::string::npos);
  return out;
}

int64_t py_find(const std::string& s, const std::string& sub, bool from_right) {
  const size_t at = from_right ? s.rfind(sub) : s.find(sub);
  if (at == std::string::npos) return -1;
  return static_cast<int64_t>(utf8_decode(std::string_view(s).substr(0, at)).size());
}

int64_t py_count(const std::string& s, const std::string& sub) {
  if (sub.empty()) return static_cast<int64_t>(utf8_decode(s).size()) + 1;
  int64_t n = 0;
  for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
  return n;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string format_spec(const Value& v, const std::string& spec) {
  // [[fill]align][sign][#][0][width][,|_][.precision][type]
  size_t i = 0;
  std::string fill = " ";
  char align = 0;
  const std::u32string u = utf8_decode(spec);
  std::string rest;
  if (u.size() >= 2 && (u[1] == '<' || u[1] == '>' || u[1] == '^' || u[1] == '=')) {
    fill.clear();
    utf8_append(fill, u[0]);
    align = static_cast<char>(u[1]);
    rest = utf8_encode(u.substr(2));
  } else {
    rest = spec;
    if (!rest.empty() && (rest[0] == '<' || rest[0] == '>' || rest[0] == '^' || rest[0] == '=')) {
      align = rest[0];
      ++i;
    }
  }
  char sign = '-';
  if (i < rest.size() && (rest[i] == '+' || rest[i] == '-' || rest[i] == ' ')) sign = rest[i++];
  if (i < rest.size() && rest[i] == '#') ++i;
  if (i < rest.size() && rest[i] == '0') {
    if (align == 0) {
      fill = "0";
      align = '=';
    }
    ++i;
  }
  size_t width = 0;
  while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i]))) {
    width = checked_size(static_cast<int64_t>(width * 10 + static_cast<size_t>(rest[i++] - '0')));
  }
  bool thousands = false;
  if (i < rest.size() && (rest[i] == ',' || rest[i] == '_')) {
    thousands = true;
    ++i;
  }
  int precision = -1;
  if (i < rest.size() && rest[i] == '.') {
    precision = 0;
    ++i;
    while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i]))) {
      precision = precision * 10 + (rest[i++] - '0');
      if (precision > 400) fail("ValueError: precision too big");
    }
  }
  char type = i < rest.size() ? rest[i++] : 0;
  if (i != rest.size()) fail("ValueError: Invalid format specifier '" + spec + "'");
  (void)thousands;

  std::string body;
  bool numeric = false;
  if (v.is_string() || (!v.is_number())) {
    if (type != 0 && type != 's') fail("ValueError: Unknown format code '" + std::string(1, type) + "' for object of type '" + type_name(v) + "'");
    body = to_str(v);
    if (precision >= 0) body = utf8_encode(utf8_decode(body).substr(0, static_cast<size_t>(precision)));
  } else {
    numeric = true;
    const bool is_int = v.kind != Value::Kind::Float;
    char buf[512];
    if (type == 0 && is_int) type = 'd';
    if (type == 'd' || type == 'x' || type == 'X' || type == 'o' || type == 'b') {
      if (!is_int) fail("ValueError: Unknown format code '" + std::string(1, type) + "' for object of type 'float'");
      const int64_t n = v.kind == Value::Kind::Bool ? v.boolean : v.integer;
      const uint64_t mag = n < 0 ? static_cast<uint64_t>(-(n + 1)) + 1 : static_cast<uint64_t>(n);
      if (type == 'b') {
        std::string bits;
        for (uint64_t m = mag; m > 0; m >>= 1) bits.insert(bits.begin(), static_cast<char>('0' + (m & 1)));
        body = bits.empty() ? "0" : bits;
      } else {
        const auto m = static_cast<unsigned long long>(mag);
        switch (type) {
          case 'd': std::snprintf(buf, sizeof buf, "%llu", m); break;
          case 'x': std::snprintf(buf, sizeof buf, "%llx", m); break;
          case 'X': std::snprintf(buf, sizeof buf, "%llX", m); break;
          default: std::snprintf(buf, sizeof buf, "%llo", m); break;
        }
        body = buf;
      }
      if (n < 0) body = "-" + body;
    } else if (type == 0) {
      body = format_float(v.as_double());
      if (precision >= 0) {
        std::snprintf(buf, sizeof buf, "%.*g", precision == 0 ? 1 : precision, v.as_double());
        body = buf;
      }
    } else if (type == 'f' || type == 'F' || type == 'e' || type == 'E' || type == 'g' || type == 'G' || type == '%') {
      double d = v.as_double();
      const int p = precision < 0 ? 6 : precision;
      if (type == '%') {
        std::snprintf(buf, sizeof buf, "%.*f%%", p, d * 100);
      } else {
        switch (type) {
          case 'f': std::snprintf(buf, sizeof buf, "%.*f", p, d); break;
          case 'F': std::snprintf(buf, sizeof buf, "%.*F", p, d); break;
          case 'e': std::snprintf(buf, sizeof buf, "%.*e", p, d); break;
          case 'E': std::snprintf(buf, sizeof buf, "%.*E", p, d); break;
          case 'g': std::snprintf(buf, sizeof buf, "%.*g", p, d); break;
          default: std::snprintf(buf, sizeof buf, "%.*G", p, d); break;
        }
      }
      body = buf;
    } else {
      fail("ValueError: Unknown format code '" + std::string(1, type) + "' for object of type '" + type_name(v) + "'");
    }
    if (sign != '-' && !body.empty() && body[0] != '-') body = std::string(1, sign == '+' ? '+' : ' ') + body;
  }
  const size_t len = utf8_decode(body).size();
  if (width <= len) return body;
  const size_t pad = width - len;
  auto fills = [&](size_t n) {
    std::string s;
    for (size_t k = 0; k < n; ++k) s += fill;
    return s;
  };
  if (align == 0) align = numeric ? '>' : '<';
  if (align == '<') return body + fills(pad);
  if (align == '>') return fills(pad) + body;
  if (align == '^') return fills(pad / 2) + body + fills(pad - pad / 2);
  // '=': padding after the sign
  if (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) return body.substr(0, 1) + fills(pad) + body.substr(1);
  return fills(pad) + body;
}

std::string py_format(const std::string& format, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      fail("ValueError: Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = format.find('}', i);
    if (close == std::string::npos) fail("ValueError: Single '{' encountered in format string");
    std::string field = format.substr(i + 1, close - i - 1);
    i = close;
    std::string spec, conversion;
    if (const size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      conversion = field.substr(bang + 1);
      field.resize(bang);
    }
    size_t name_end = field.find_first_of(".[");
    const std::string first = field.substr(0, name_end);
    Value v;
    if (first.empty()) {
      if (auto_index >= args.positional.size()) fail("IndexError: Replacement index " + std::to_string(auto_index) + " out of range for positional args tuple");
      v = args.positional[auto_index++];
    } else if (std::isdigit(static_cast<unsigned char>(first[0]))) {
      const std::optional<int64_t> k = parse_decimal(first);
      if (!k || static_cast<size_t>(*k) >= args.positional.size()) {
        fail("IndexError: Replacement index " + first + " out of range for positional args tuple");
      }
      v = args.positional[static_cast<size_t>(*k)];
    } else {
      bool found = false;
      for (const auto& [name, value] : args.keyword) {
        if (name == first) {
          v = value;
          found = true;
        }
      }
      if (!found) fail("KeyError: '" + first + "'");
    }
    while (name_end != std::string::npos && name_end < field.size()) {
      if (field[name_end] == '.') {
        const size_t e = field.find_first_of(".[", name_end + 1);
        const std::string attr = field.substr(name_end + 1, e == std::string::npos ? std::string::npos : e - name_end - 1);
        const Value* found = v.is_dict() ? v.dict->find(attr) : nullptr;
        if (found == nullptr) fail("AttributeError: '" + type_name(v) + "' object has no attribute '" + attr + "'");
        v = *found;
        name_end = e;
      } else {
        const size_t e = field.find(']', name_end);
        if (e == std::string::npos) fail("ValueError: Missing ']' in format string");
        const std::string key = field.substr(name_end + 1, e - name_end - 1);
        const Value* found = nullptr;
        if (v.is_dict()) {
          found = v.dict->find(key);
        } else if (v.is_list() && !key.empty() && std::isdigit(static_cast<unsigned char>(key[0]))) {
          const std::optional<int64_t> k = parse_decimal(key);
          if (k && static_cast<size_t>(*k) < v.list->items.size()) found = &v.list->items[static_cast<size_t>(*k)];
        }
        if (found == nullptr) fail("KeyError: '" + key + "'");
        v = *found;
        name_end = e + 1;
      }
    }
    if (conversion == "r") {
      v = Value::from(repr(v));
    } else if (conversion == "s") {
      v = Value::from(to_str(v));
    } else if (!conversion.empty()) {
      fail("ValueError: Unknown conversion specifier " + conversion);
    }
    out += spec.empty() ? to_str(v) : format_spec(v, spec);
  }
  return out;
}

}  // namespace strata::chat
