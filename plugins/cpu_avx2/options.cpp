#include "options.hpp"

#include <charconv>
#include <string_view>

namespace strata::cpu {
namespace {

constexpr const char* kKnown = "workers, host_worker, force_avx2, spin_us";
constexpr unsigned kMaxSpinUs = 1000000;
constexpr unsigned kMaxWorkers = 1024;

bool parse_bool(std::string_view v, bool* out) {
  if (v == "true" || v == "1" || v == "yes" || v == "on") {
    *out = true;
    return true;
  }
  if (v == "false" || v == "0" || v == "no" || v == "off") {
    *out = false;
    return true;
  }
  return false;
}

// A whole number from 0 to `most`, or false with a message naming the option and the unit.
bool parse_count(std::string_view key, std::string_view value, unsigned most, const char* unit, unsigned* out,
                 std::string* error) {
  unsigned v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || value.empty() || v > most) {
    *error = "option " + std::string(key) + "=" + std::string(value) + ": expected a whole number of " + unit +
             " from 0 to " + std::to_string(most);
    return false;
  }
  *out = v;
  return true;
}

}  // namespace

bool parse_options(const char* const* options, size_t n, unsigned cores, Options* out, std::string* error) {
  Options o;
  o.workers = cores > 1 ? cores - 1 : 0;
  bool workers_set = false;
  for (size_t i = 0; i < n; ++i) {
    const std::string_view opt = options[i] != nullptr ? options[i] : "";
    const size_t eq = opt.find('=');
    const std::string_view key = opt.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : opt.substr(eq + 1);
    if (key == "workers") {
      if (!parse_count(key, value, kMaxWorkers, "threads", &o.workers, error)) return false;
      workers_set = true;
    } else if (key == "spin_us") {
      if (!parse_count(key, value, kMaxSpinUs, "microseconds", &o.spin_us, error)) return false;
    } else if (key == "host_worker" || key == "force_avx2") {
      bool b = false;
      if (!parse_bool(value, &b)) {
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
