#include "args.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "strata/suggest.hpp"

namespace strata::cli {
namespace {

std::vector<std::string> split_names(const std::string& names) {
  std::vector<std::string> out;
  std::stringstream ss(names);
  std::string n;
  while (std::getline(ss, n, '|')) out.push_back(n);
  return out;
}

}  // namespace

ArgParser::ArgParser(std::string command, std::string usage, std::string summary)
    : command_(std::move(command)), usage_(std::move(usage)), summary_(std::move(summary)) {
  flag("-h|--help", "show this help and exit", nullptr);
}

void ArgParser::flag(const std::string& names, const std::string& help, bool* out) {
  Opt o;
  o.names = split_names(names);
  o.help = help;
  o.set = [out](const std::string&) {
    if (out != nullptr) *out = true;
  };
  opts_.push_back(std::move(o));
}

void ArgParser::option(const std::string& names, const std::string& meta, const std::string& help, std::string* out) {
  option(names, meta, help, [out](const std::string& v) { *out = v; });
}

void ArgParser::option(const std::string& names, const std::string& meta, const std::string& help,
                       std::function<void(const std::string&)> set) {
  Opt o;
  o.names = split_names(names);
  o.meta = meta;
  o.help = help;
  o.takes_value = true;
  o.set = std::move(set);
  opts_.push_back(std::move(o));
}

void ArgParser::repeated(const std::string& names, const std::string& meta, const std::string& help,
                         std::vector<std::string>* out) {
  option(names, meta, help + " (repeatable)", [out](const std::string& v) { out->push_back(v); });
}

void ArgParser::positional(const std::string& meta, const std::string& help, std::string* out, bool required) {
  positionals_.push_back({meta, help, out, required});
}

ArgParser::Opt* ArgParser::find(const std::string& name) {
  for (auto& o : opts_) {
    for (const auto& n : o.names) {
      if (n == name) return &o;
    }
  }
  return nullptr;
}

bool ArgParser::given(const std::string& name) const {
  for (const auto& o : opts_) {
    for (const auto& n : o.names) {
      if (n == name) return o.given;
    }
  }
  return false;
}

bool ArgParser::parse(const std::vector<std::string>& args) {
  size_t next_pos = 0;
  bool only_positionals = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!only_positionals && a == "--") {
      only_positionals = true;
      continue;
    }
    if (!only_positionals && a.size() > 1 && a[0] == '-') {
      std::string name = a, value;
      bool inline_value = false;
      if (const size_t eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        inline_value = true;
      }
      if (name == "-h" || name == "--help") {
        std::fputs(help().c_str(), stdout);
        return false;
      }
      Opt* o = find(name);
      if (o == nullptr) {
        std::vector<std::string> all;
        for (const auto& opt : opts_) all.insert(all.end(), opt.names.begin(), opt.names.end());
        throw UsageError("unknown option '" + name + "' for '" + command_ + "'" + did_you_mean(name, all) +
                         "; see '" + command_ + " --help'");
      }
      if (o->takes_value && !inline_value) {
        if (i + 1 >= args.size()) throw UsageError("option " + name + " needs a value (" + name + " " + o->meta + ")");
        value = args[++i];
      } else if (!o->takes_value && inline_value) {
        throw UsageError("option " + name + " takes no value");
      }
      o->set(value);
      o->given = true;
      continue;
    }
    if (next_pos >= positionals_.size()) {
      throw UsageError("unexpected argument '" + a + "' for '" + command_ + "'; see '" + command_ + " --help'");
    }
    *positionals_[next_pos++].out = a;
  }
  for (size_t p = next_pos; p < positionals_.size(); ++p) {
    if (positionals_[p].required) {
      throw UsageError("'" + command_ + "' needs " + positionals_[p].meta + "; see '" + command_ + " --help'");
    }
  }
  return true;
}

std::string ArgParser::help() const {
  std::string out = "usage: " + command_ + " " + usage_ + "\n\n" + summary_ + "\n";
  if (!positionals_.empty()) {
    out += "\narguments:\n";
    for (const auto& p : positionals_) out += "  " + p.meta + std::string(p.meta.size() < 24 ? 24 - p.meta.size() : 1, ' ') + p.help + "\n";
  }
  out += "\noptions:\n";
  for (const auto& o : opts_) {
    std::string left;
    for (const auto& n : o.names) left += (left.empty() ? "" : ", ") + n;
    if (o.takes_value) left += " " + o.meta;
    out += "  " + left + std::string(left.size() < 24 ? 24 - left.size() : 1, ' ') + o.help + "\n";
  }
  return out;
}

long long parse_int(const std::string& option, const std::string& value, long long min, long long max) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno == ERANGE) {
    throw UsageError("option " + option + ": '" + value + "' is not a whole number");
  }
  if (v < min || v > max) {
    throw UsageError("option " + option + ": " + value + " is out of range [" + std::to_string(min) + ", " +
                     std::to_string(max) + "]");
  }
  return v;
}

double parse_double(const std::string& option, const std::string& value, double min, double max) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v)) {
    throw UsageError("option " + option + ": '" + value + "' is not a number");
  }
  if (v < min || v > max) {
    std::ostringstream ss;
    ss << "option " << option << ": " << value << " is out of range [" << min << ", " << max << "]";
    throw UsageError(ss.str());
  }
  return v;
}

}  // namespace strata::cli
