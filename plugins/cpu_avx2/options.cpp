#include "options.hpp"

#include <string>
#include <string_view>

#include "strata/plugin_options.hpp"

namespace strata::cpu {
namespace {

constexpr const char* kKnown = "workers, host_worker, force_avx2, spin_us";
constexpr unsigned kMaxSpinUs = 1000000;
constexpr unsigned kMaxWorkers = 1024;

// A whole number from 0 to `most`, or false with a message naming the option and the unit.
bool parse_count(std::string_view key, std::string_view value, unsigned most, const char* unit, unsigned* out,
                 std::string* error) {
  if (parse_whole_option(value, 0, most, out)) return true;
  *error = "option " + std::string(key) + "=" + std::string(value) + ": expected a whole number of " + unit +
           " from 0 to " + std::to_string(most);
  return false;
}

}  // namespace

bool parse_options(const char* const* options, size_t n, unsigned cores, Options* out, std::string* error) {
  Options o;
  o.workers = cores > 1 ? cores - 1 : 0;
  bool workers_set = false;
  for (size_t i = 0; i < n; ++i) {
    const auto [key, value] = split_option(options[i]);
    if (key == "workers") {
      if (!parse_count(key, value, kMaxWorkers, "threads", &o.workers, error)) return false;
      workers_set = true;
    } else if (key == "spin_us") {
      if (!parse_count(key, value, kMaxSpinUs, "microseconds", &o.spin_us, error)) return false;
    } else if (key == "host_worker" || key == "force_avx2") {
      bool b = false;
      if (!parse_bool_option(value, &b)) {
        *error = "option " + std::string(key) + "=" + std::string(value) + ": expected true or false";
        return false;
      }
      (key == "host_worker" ? o.host_worker : o.force_avx2) = b;
    } else {
      *error = "unknown option '" + std::string(key) + "' (known: " + kKnown + ")";
      return false;
    }
  }
  if (!o.host_worker && o.workers == 0) {
    if (workers_set) {
      *error = "options workers=0 and host_worker=false leave no thread to compute; set workers >= 1 or "
               "host_worker=true";
      return false;
    }
    o.workers = 1;
  }
  *out = o;
  return true;
}

}  // namespace strata::cpu
