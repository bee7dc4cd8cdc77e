// The command-line parser of every subcommand: declared flags and options, --help, and unknown flags rejected
// with the nearest known one suggested. A usage error exits 2.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "strata/error.hpp"

namespace strata::cli {

class UsageError : public Error {
 public:
  using Error::Error;
};

class ArgParser {
 public:
  // `command` is how the user typed it ("strata config check"); `usage` the line after it ("FILE [options]").
  ArgParser(std::string command, std::string usage, std::string summary);

  // --name (no value).
  void flag(const std::string& names, const std::string& help, bool* out);
  // --name VALUE or --name=VALUE. `names` may list aliases separated by '|', e.g. "-o|--override".
  void option(const std::string& names, const std::string& meta, const std::string& help, std::string* out);
  // The same, with the value converted and checked by `set` (which throws UsageError naming the problem).
  void option(const std::string& names, const std::string& meta, const std::string& help,
              std::function<void(const std::string&)> set);
  // Repeatable option: every value is appended.
  void repeated(const std::string& names, const std::string& meta, const std::string& help,
                std::vector<std::string>* out);
  // Positional arguments, in order.
  void positional(const std::string& meta, const std::string& help, std::string* out, bool required = true);

  // Parses args (without the program and command words). Returns false when --help was asked for (the help text
  // has then been printed to stdout). Throws UsageError.
  bool parse(const std::vector<std::string>& args);
  // Was the option given on the command line (by any of its names)?
  bool given(const std::string& name) const;

  std::string help() const;

 private:
  struct Opt {
    std::vector<std::string> names;
    std::string meta, help;
    bool takes_value = false;
    std::function<void(const std::string&)> set;
    bool given = false;
  };
  struct Pos {
    std::string meta, help;
    std::string* out;
    bool required;
  };
  Opt* find(const std::string& name);
  std::string command_, usage_, summary_;
  std::vector<Opt> opts_;
  std::vector<Pos> positionals_;
};

// Converters for option values, throwing UsageError with the option's name.
long long parse_int(const std::string& option, const std::string& value, long long min, long long max);
double parse_double(const std::string& option, const std::string& value, double min, double max);

}  // namespace strata::cli
