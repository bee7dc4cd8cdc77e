// One plugin instance on one GPU: its options, the stream every op is enqueued on, the scratch memory of the ops,
// and the decode graphs (graph_cache.hpp). Ops run one compute call at a time (the lock).
//
// Scratch memory is grown only outside graph capture: a compute call first runs its ops directly (sizing the
// scratch), and only an op list seen again is captured; a list that waits for its host is sized by a capture
// instead (set_sizing). Growing a scratch buffer drops every captured graph, since graphs hold its old address.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "gpu_runtime.cuh"
#include "strata/plugin_api.h"

namespace strata::gpu {

struct Options {
  int device = 0;            // which GPU of the machine
  bool graphs = true;        // capture repeated op lists (decode steps) into GPU graphs and replay them
  bool fuse = true;          // run op patterns as fused kernels (fusions.cu); off: every op alone, same bytes
  bool overlap = true;       // let a kernel start while the one before it ends (dependent_launch.cuh; sm_90+)
  bool high_priority = false;  // the compute stream at the device's greatest priority (a peer link's service)
  bool canonical_double = false;  // the `_f64ref` kernels: norms, RoPE, attention, softmax and router in double,
                                  // the CPU engine's bits (runtime.canonical_double); off: float and tensor cores
};

// What scratch memory is for; each has one buffer, reused by every op that needs it.
enum class ScratchSlot : int {
  ActQ8,       // MUL_MAT / MOE: the Q8_1 rows of the float activations
  MoeHidden,   // MOE: SwiGLU outputs (f32), one row per (token, expert) pair
  MoeHiddenQ8, // MOE: the same rows as Q8_1
  MoeRows,     // MOE: weighted rows per pair
  MoeIndex,    // MOE: pair lists copied from the host
  AttnPartial, // ATTENTION: split-K partial outputs and their maxima and sums
  Counters,    // counters kernels count finished blocks with (attention_decode.cu, fuse_router.cu): zeroed when
               // allocated, and every kernel leaves the ones it used at zero again (graph replays find them so)
  Work,        // anything else an op needs for the length of one op
  Count
};

// The Q8_1 copy of a float activation tensor that MUL_MAT made last: the next MUL_MAT over the same rows (q, k
// and v all read the normed x) reuses it. Any op writing those rows forgets it.
struct QuantizedActivation {
  const void* src = nullptr;
  int64_t n_in = 0, n_tok = 0;
  uint64_t row_stride = 0;
};

class Context {
 public:
  Context(const strata_host_api* host, const Options& options);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const Options& options() const { return options_; }
  cudaStream_t stream() const { return stream_; }
  const cudaDeviceProp& props() const { return props_; }
  const std::string& device_name() const { return device_name_; }
  const std::string& arch() const { return arch_; }
  // Whether launch_dependent overlaps kernels: the option, on a GPU with programmatic dependent launch.
  bool overlap_launches() const { return options_.overlap && props_.major >= 9; }
  std::mutex& mutex() { return mutex_; }

  // A buffer of at least `bytes` for `slot`, valid until the end of the current op list. Grows (synchronizing
  // the stream first) only when not capturing; throws OpFailure when capture would need it to grow.
  void* scratch(ScratchSlot slot, uint64_t bytes);
  bool capturing() const { return capturing_; }
  void set_capturing(bool on) { capturing_ = on; }
  // A sizing capture (op lists that must never run directly: graph_cache.cu): while on, a request larger than its
  // buffer is noted and answered with the buffer as it is; the capture is then thrown away, grow_noted() grows the
  // buffers (outside capture), and the list is captured again.
  void set_sizing(bool on) {
    sizing_ = on;
    if (on) noted_.fill(0);
  }
  // Grows every buffer a sizing capture found short; true when one grew.
  bool grow_noted();
  // Bumped whenever a scratch buffer moves: graphs captured before hold stale addresses.
  uint64_t scratch_generation() const { return scratch_generation_; }

  QuantizedActivation& quantized() { return quantized_; }

  // GELU's f16 table (backend 1.7, i[0] = 1): format::gelu_f16_table's 65536 floats in device memory, nullptr until
  // uploaded. upload_gelu_table() allocates and copies it once (enqueued on the stream, so the kernels after it see
  // it) and returns it; never during capture: enqueue uploads it before running a list that needs it.
  const float* gelu_table() const { return gelu_table_; }
  const float* upload_gelu_table();

  strata_status* error(strata_status_code code, const std::string& message) const {
    return host_->status_new(code, message.c_str());
  }
  void log(strata_log_level level, const std::string& message) const;

 private:
  const strata_host_api* host_;
  Options options_;
  cudaStream_t stream_ = nullptr;
  cudaDeviceProp props_{};
  std::string device_name_, arch_;
  std::mutex mutex_;
  std::array<void*, static_cast<size_t>(ScratchSlot::Count)> scratch_{};
  std::array<uint64_t, static_cast<size_t>(ScratchSlot::Count)> scratch_bytes_{};
  uint64_t scratch_generation_ = 0;
  bool capturing_ = false;
  bool sizing_ = false;
  std::array<uint64_t, static_cast<size_t>(ScratchSlot::Count)> noted_{};
  QuantizedActivation quantized_;
  float* gelu_table_ = nullptr;
};

}  // namespace strata::gpu
