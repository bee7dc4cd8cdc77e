// Python's printf-style formatting, `"%s: %d" % (name, n)`, which templates use through `%` and the format filter.
#include <cstdint>
#include <cstdio>

#include "builtins.hpp"

namespace strata::chat {

// The conversions are built from the template's own %-specs (checked above), as Python hands them to printf.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"

std::string percent_format(const std::string& format, const Value& args) {
  std::vector<Value> positional;
  const Value* mapping = nullptr;
  if (args.is_list() && args.list->tuple) {
    positional = args.list->items;
  } else {
    if (args.is_dict()) mapping = &args;
    positional.push_back(args);
  }
  size_t next = 0;
  bool used_mapping = false;
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (++i >= format.size()) fail("ValueError: incomplete format");
    Value v;
    bool have_value = false;
    if (format[i] == '(') {
      const size_t close = format.find(')', i);
      if (close == std::string::npos) fail("ValueError: incomplete format key");
      if (mapping == nullptr) fail("TypeError: format requires a mapping");
      const std::string key = format.substr(i + 1, close - i - 1);
      const Value* found = mapping->dict->find(key);
      if (found == nullptr) fail("KeyError: '" + key + "'");
      v = *found;
      have_value = true;
      used_mapping = true;
      i = close + 1;
    }
    std::string flags;
    while (i < format.size() && (format[i] == '-' || format[i] == '+' || format[i] == ' ' || format[i] == '#' || format[i] == '0')) {
      flags += format[i++];
    }
    std::string width, precision;
    while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) width += format[i++];
    if (i < format.size() && format[i] == '.') {
      precision = ".";
      ++i;
      while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) precision += format[i++];
    }
    if (i >= format.size()) fail("ValueError: incomplete format");
    const char type = format[i];
    if (type == '%') {
      out += '%';
      continue;
    }
    if (!have_value) {
      if (next >= positional.size()) fail("TypeError: not enough arguments for format string");
      v = positional[next++];
    }
    // printf writes into a fixed buffer: widths and precisions past it are refused (Python would allocate).
    if ((!width.empty() && parse_decimal(width).value_or(INT64_MAX) > 400) ||
        (precision.size() > 1 && parse_decimal(precision.substr(1)).value_or(INT64_MAX) > 400)) {
      if (type != 's' && type != 'r' && type != 'a') fail("OverflowError: %-format width or precision too large");
    }
    const std::string spec = "%" + flags + width + precision;
    char buf[512];
    switch (type) {
      case 's':
      case 'r':
      case 'a': {
        std::string s = type == 's' ? to_str(v) : repr(v);
        if (precision.size() > 1) {
          s = utf8_encode(utf8_decode(s).substr(0, checked_size(parse_decimal(precision.substr(1)).value_or(INT64_MAX))));
        }
        const size_t w = width.empty() ? 0 : checked_size(parse_decimal(width).value_or(INT64_MAX));
        const size_t len = utf8_decode(s).size();
        if (len < w) s = flags.find('-') != std::string::npos ? s + std::string(w - len, ' ') : std::string(w - len, ' ') + s;
        out += s;
        break;
      }
      case 'd':
      case 'i':
      case 'u':
      case 'x':
      case 'X':
      case 'o': {
        if (!v.is_number()) fail("TypeError: %" + std::string(1, type) + " format: a real number is required, not " + type_name(v));
        const long long n = v.kind == Value::Kind::Float ? static_cast<long long>(v.number)
                                                         : v.kind == Value::Kind::Bool ? v.boolean : v.integer;
        const char t = type == 'i' || type == 'u' ? 'd' : type;
        std::snprintf(buf, sizeof buf, (spec + "ll" + t).c_str(), n);
        out += buf;
        break;
      }
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G':
        if (!v.is_number()) fail("TypeError: must be real number, not " + type_name(v));
        std::snprintf(buf, sizeof buf, (spec + type).c_str(), v.as_double());
        out += buf;
        break;
      case 'c':
        if (v.is_string()) {
          out += v.text;
        } else {
          utf8_append(out, static_cast<char32_t>(v.integer));
        }
        break;
      default: fail("ValueError: unsupported format character '" + std::string(1, type) + "'");
    }
  }
  if (!used_mapping && mapping == nullptr && next < positional.size()) {
    fail("TypeError: not all arguments converted during string formatting");
  }
  return out;
}

#pragma GCC diagnostic pop

}  // namespace strata::chat
