#include "options.hpp"

#include <string>
#include <string_view>

#include "strata/plugin_options.hpp"

namespace strata::cpu {
namespace {

constexpr const char* kKnown = "workers, reserve, host_worker, force_avx2, gathers, spin_us, pin, canonical_double";
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

std::string plural(unsigned n, const char* one) { return std::to_string(n) + " " + one + (n == 1 ? "" : "s"); }

// workers=auto: what the physical cores leave after the caller and the reserve.
void auto_workers(const CpuTopology& cpus, Options* o) {
  const unsigned taken = (o->host_worker ? 1u : 0u) + o->reserve;
  o->workers = cpus.cores > taken ? cpus.cores - taken : 0u;
  o->why = plural(cpus.cores, "physical core") + " of " + plural(cpus.cpus, "CPU");
  if (o->host_worker) o->why += ", 1 for the calling thread";
  if (o->reserve > 0) o->why += ", " + std::to_string(o->reserve) + " reserved for the engine's own threads";
  if (!o->host_worker && o->workers == 0) {
    o->workers = 1;
    o->why += "; at least one worker";
  }
  o->why = plural(o->workers, "worker") + " (workers=auto: " + o->why + ")";
}

}  // namespace

bool parse_options(const char* const* options, size_t n, const CpuTopology& cpus, Options* out, std::string* error) {
  Options o;
  bool workers_auto = true;
  for (size_t i = 0; i < n; ++i) {
    const auto [key, value] = split_option(options[i]);
    if (key == "workers") {
      workers_auto = value == "auto";
      if (!workers_auto && !parse_whole_option(value, 0, kMaxWorkers, &o.workers)) {
        *error = "option workers=" + std::string(value) + ": expected auto or a whole number of threads from 0 to " +
                 std::to_string(kMaxWorkers);
        return false;
      }
    } else if (key == "gathers") {
      bool b = false;
      if (value != "auto" && !parse_bool_option(value, &b)) {
        *error = "option gathers=" + std::string(value) + ": expected auto, true or false";
        return false;
      }
      o.gathers = value == "auto" ? -1 : b ? 1 : 0;
    } else if (key == "reserve") {
      if (!parse_count(key, value, kMaxWorkers, "cores", &o.reserve, error)) return false;
    } else if (key == "spin_us") {
      if (!parse_count(key, value, kMaxSpinUs, "microseconds", &o.spin_us, error)) return false;
    } else if (key == "host_worker" || key == "force_avx2" || key == "pin" || key == "canonical_double") {
      bool b = false;
      if (!parse_bool_option(value, &b)) {
        *error = "option " + std::string(key) + "=" + std::string(value) + ": expected true or false";
        return false;
      }
      // canonical_double (runtime.canonical_double, which the host passes to every backend plugin): accepted and
      // without effect, since this backend always computes norms, RoPE, softmax, router and attention in double.
      if (key != "canonical_double") (key == "host_worker" ? o.host_worker : key == "pin" ? o.pin : o.force_avx2) = b;
    } else {
      *error = "unknown option '" + std::string(key) + "' (known: " + kKnown + ")";
      return false;
    }
  }
  if (workers_auto) {
    auto_workers(cpus, &o);
  } else if (!o.host_worker && o.workers == 0) {
    *error = "options workers=0 and host_worker=false leave no thread to compute; set workers >= 1 or "
             "host_worker=true";
    return false;
  } else {
    o.why = plural(o.workers, "worker") + " (workers=" + std::to_string(o.workers) + ")";
  }
  *out = o;
  return true;
}

}  // namespace strata::cpu
