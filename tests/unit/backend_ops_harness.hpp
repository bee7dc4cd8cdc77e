// The op-parity harness: op cases (one small struct per op and shape), the backends under test (every backend
// plugin the registry finds usable, plus cpu_avx2 forced onto its AVX2 path where the CPU has AVX-512), and the
// comparison of a backend's outputs with the reference backend's: memcmp for the canonical ops, NMSE with
// NaN/Inf parity for the others, and guard bytes around every output.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "strata/plugin_api.h"
#include "strata/plugin_host.hpp"

namespace strata::test {

// How an output is compared with the reference's.
enum class Compare {
  Bytes,   // memcmp (canonical arithmetic, exact conversions, integer outputs)
  Nmse,    // f32 values: NaN and Inf at the same places, normalized mean squared error of the rest <= max_nmse
  ByCase,  // only in Output::on_float: the case's Instance::float_check compares it
};

// Whether `label` is a GPU backend in its default mode, which computes RMS_NORM, ROPE, SOFTMAX, ROUTER (and
// ATTENTION) in float (docs/CANONICAL_ARITHMETIC.md section 6): "cuda" and "hip". The `_canonical_double` labels
// (the plugin instantiated with canonical_double=true) run the double kernels and compare as the CPU backends.
bool float_label(const std::string& label);

struct Output {
  std::string name;                  // "dst", "src2 (weights)", "moe.rows"
  size_t bytes = 0;
  std::vector<unsigned char> initial;  // the contents before the op (empty: a sentinel pattern)
  Compare compare = Compare::Bytes;
  Compare on_float = Compare::Bytes;  // how it compares on a float_label; set by float_ops (else = compare)
  bool float_op = false;              // on_float applies
};

// One built case: its inputs (owned), its outputs, and the op over any memory given for the outputs.
struct Instance {
  std::vector<Output> outputs;
  std::function<strata_op(const std::vector<void*>& outputs)> bind;
  std::vector<std::shared_ptr<void>> owned;  // input buffers and descriptors the op points at
  // On a float_label: the case's own comparison of the outputs marked Compare::ByCase ("" when they pass), given
  // the reference's and the backend's bytes of every output.
  std::function<std::string(const std::vector<std::vector<unsigned char>>& want,
                            const std::vector<std::vector<unsigned char>>& got)>
      float_check;

  // Keeps `v` alive as long as the instance and returns its data.
  template <class T>
  T* keep(std::vector<T> v) {
    auto p = std::make_shared<std::vector<T>>(std::move(v));
    owned.push_back(p);
    return p->data();
  }
};

class OpCase {
 public:
  virtual ~OpCase() = default;
  // The op and its parameters: "MUL_MAT(type=q4_K,n_in=768,n_out=37,n_tok=5)".
  virtual std::string vars() const = 0;
  // Largest NMSE accepted for Compare::Nmse outputs.
  virtual double max_nmse() const { return 1e-9; }
  // The same on a float_label (a GPU's float norms, RoPE, softmax, router, attention); by default max_nmse().
  virtual double float_max_nmse() const { return max_nmse(); }
  // The NMSE bound for the backend `label`: the hook every case's comparison goes through.
  double max_nmse_for(const std::string& label) const {
    return float_label(label) ? float_max_nmse() : max_nmse();
  }
  virtual Instance build(std::mt19937& rng) const = 0;
};

// Every case of the suite, in a fixed order.
const std::vector<std::shared_ptr<const OpCase>>& all_cases();
// A name gtest accepts made from vars(): "MUL_MAT_type_q4_K_n_in_768_...".
std::string test_name(const std::string& vars);

// A backend under test.
struct BackendUnderTest {
  std::string label;                 // "cpu_avx2", "cpu_avx2_force_avx2"
  const strata_backend_v1* backend;  // device 0 is used
  void* ctx;
  PluginInstance* instance;
};

// Discovered once: the usable backend plugins in the build's plugin folder. The forced-AVX2 variant of cpu_avx2
// is listed only when its device reports another arch than the default (the CPU has the AVX-512 path).
const std::vector<BackendUnderTest>& backends_under_test();
std::vector<std::string> backend_labels();
const BackendUnderTest* find_backend(const std::string& label);
// cpu_avx2 with one worker (NULL without the plugin): its bytes must equal the default's, whatever the split.
const BackendUnderTest* cpu_one_worker();
// cpu_avx2 with gathers=true and with gathers=false (NULL without the plugin): the AVX-512 kernels that gather and
// their gather-free forms, whichever the CPU would choose, must give the same bytes.
const BackendUnderTest* cpu_gathering();
const BackendUnderTest* cpu_gather_free();

// The outcome of running one case on one backend.
struct RunResult {
  bool supported = true;
  std::string error;                            // a failed compute (empty: ok)
  std::vector<std::vector<unsigned char>> out;  // each output's bytes
  std::vector<std::string> guard_damage;        // outputs whose guard bytes changed
};

RunResult run_on_backend(const BackendUnderTest& b, Instance& inst);
RunResult run_on_reference(Instance& inst);

// "" when `got` matches `want` under `cmp`, else what differs (first index and values).
std::string compare_output(const Output& o, const std::vector<unsigned char>& want, const std::vector<unsigned char>& got,
                           double max_nmse);
// The output as it compares on backend `label` (on_float on a float_label).
Output output_for(const Output& o, const std::string& label);

}  // namespace strata::test
