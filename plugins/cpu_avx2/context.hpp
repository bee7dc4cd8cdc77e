// One plugin instance: its options, the kernel path, the worker pool and the scratch memory of the ops. Ops run
// one at a time per instance (the backend's compute and the expert pool's compute take the same lock).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>

#include "isa.hpp"
#include "kernels.hpp"
#include "options.hpp"
#include "quant_act.hpp"
#include "strata/plugin_api.h"
#include "thread_pool.hpp"

namespace strata::cpu {

struct Scratch {
  QuantRows act;          // quantized input rows (MUL_MAT's src1, an MoE window's x)
  QuantRows hidden;       // an MoE window's requantized SwiGLU outputs, one row per pair
  AlignedBuffer h, u;     // an MoE window's gate (then SwiGLU) and up outputs, one row per pair
  AlignedBuffer rows;     // an MoE window's weighted rows when the caller wants only the sums
  AlignedBuffer index;    // per-op index tables (pair lists, row views)
  AlignedBuffer pieces;   // an MoE pass's pieces per expert
  AlignedBuffer work;     // per-op float work space (attention scores, ...)
  AlignedBuffer tiles;    // token tiles of a many-token product (token_tiles.hpp) and their index
};

class Context {
 public:
  Context(const strata_host_api* host, const Options& options);

  const strata_host_api* host() const { return host_; }
  const Options& options() const { return options_; }
  // How many threads compute and why that many, in words (set once at init).
  const std::string& setup_line() const { return setup_line_; }
  void set_setup_line(std::string line) { setup_line_ = std::move(line); }
  IsaPath path() const { return path_; }
  bool gathers() const { return gathers_; }
  const KernelTable& kernels() const { return *kernels_; }
  ThreadPool& pool() { return pool_; }
  Scratch& scratch() { return scratch_; }
  std::mutex& mutex() { return mutex_; }
  const std::string& device_name() const { return device_name_; }

  strata_status* error(strata_status_code code, const std::string& message) const {
    return host_->status_new(code, message.c_str());
  }
  void log(strata_log_level level, const std::string& message) const {
    host_->log(level, "cpu_avx2", message.c_str());
  }

 private:
  const strata_host_api* host_;
  Options options_;
  std::string setup_line_;
  IsaPath path_;
  bool gathers_;  // the AVX-512 kernels may gather (options.gathers, or gathers_fast)
  const KernelTable* kernels_;
  ThreadPool pool_;
  Scratch scratch_;
  std::mutex mutex_;
  std::string device_name_;
};

}  // namespace strata::cpu
