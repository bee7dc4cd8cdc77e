#include "graph_cache.hpp"

#include <cstring>

#include "ops.hpp"

namespace strata::gpu {

GraphCache::~GraphCache() { clear(); }

void GraphCache::clear() {
  for (Entry& e : entries_) {
    if (e.exec != nullptr) (void)cudaGraphExecDestroy(e.exec);
  }
  entries_.clear();
  seen_once_.clear();
}

bool GraphCache::capturable(const strata_op* ops, size_t n_ops) {
  for (size_t i = 0; i < n_ops; ++i) {
    if (ops[i].kind == STRATA_OP_MOE) return false;
  }
  return n_ops > 0;
}

bool GraphCache::waits(const strata_op* ops, size_t n_ops) {
  for (size_t i = 0; i < n_ops; ++i) {
    if (ops[i].kind == STRATA_OP_WAIT) return true;
  }
  return false;
}

std::vector<unsigned char> GraphCache::key_of(const strata_op* ops, size_t n_ops) {
  std::vector<unsigned char> key(n_ops * sizeof(strata_op));
  std::memcpy(key.data(), ops, key.size());
  for (size_t i = 0; i < n_ops; ++i) {
    if (ops[i].kind == STRATA_OP_MOE_ROUTED && ops[i].extra != nullptr) {
      const auto* t = static_cast<const unsigned char*>(ops[i].extra);
      key.insert(key.end(), t, t + sizeof(strata_expert_table));
      // The form (backend 1.6) is host memory too, read when the kernels are enqueued: its bias pointers and
      // constants are in the graph's launches.
      if (const strata_expert_form* f = static_cast<const strata_expert_table*>(ops[i].extra)->form) {
        const auto* b = reinterpret_cast<const unsigned char*>(f);
        key.insert(key.end(), b, b + sizeof(strata_expert_form));
      }
    }
  }
  return key;
}

void GraphCache::run(Context& ctx, const strata_op* ops, size_t n_ops) {
  ctx.quantized() = {};
  const bool program = waits(ops, n_ops);
  if (!program && (!ctx.options().graphs || !capturable(ops, n_ops))) {
    for (size_t i = 0; i < n_ops;) i += run_ops_at(ctx, ops, i, n_ops);
    return;
  }
  std::vector<unsigned char> key = key_of(ops, n_ops);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->key != key) continue;
    if (it->generation != ctx.scratch_generation()) {  // scratch moved: the graph points at freed memory
      (void)cudaGraphExecDestroy(it->exec);
      entries_.erase(it);
      break;
    }
    entries_.splice(entries_.begin(), entries_, it);
    check_cuda(cudaGraphLaunch(it->exec, ctx.stream()), "cudaGraphLaunch");
    ++replays_;
    return;
  }
  if (program) {
    // Sized by a capture; captured again only when a buffer had to grow (then nothing of it ran).
    cudaGraphExec_t exec = capture(ctx, ops, n_ops, true);
    if (ctx.grow_noted()) {
      (void)cudaGraphExecDestroy(exec);
      exec = capture(ctx, ops, n_ops, false);
    }
    keep_and_launch(ctx, std::move(key), exec);
    return;
  }
  if (key != seen_once_) {
    // First sight: run directly, which also sizes the scratch memory the capture will use.
    for (size_t i = 0; i < n_ops;) i += run_ops_at(ctx, ops, i, n_ops);
    seen_once_ = std::move(key);
    return;
  }
  keep_and_launch(ctx, std::move(key), capture(ctx, ops, n_ops, false));
  seen_once_.clear();
}

cudaGraphExec_t GraphCache::capture(Context& ctx, const strata_op* ops, size_t n_ops, bool sizing) {
  ctx.quantized() = {};
  cudaGraph_t graph = nullptr;
  check_cuda(cudaStreamBeginCapture(ctx.stream(), cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  ctx.set_capturing(true);
  ctx.set_sizing(sizing);
  try {
    for (size_t i = 0; i < n_ops;) i += run_ops_at(ctx, ops, i, n_ops);
  } catch (...) {
    ctx.set_capturing(false);
    ctx.set_sizing(false);
    (void)cudaStreamEndCapture(ctx.stream(), &graph);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    throw;
  }
  ctx.set_capturing(false);
  ctx.set_sizing(false);
  check_cuda(cudaStreamEndCapture(ctx.stream(), &graph), "cudaStreamEndCapture");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  check_cuda(err, "cudaGraphInstantiate");
  return exec;
}

void GraphCache::keep_and_launch(Context& ctx, std::vector<unsigned char> key, cudaGraphExec_t exec) {
  if (entries_.size() >= capacity_) {
    (void)cudaGraphExecDestroy(entries_.back().exec);
    entries_.pop_back();
  }
  entries_.push_front(Entry{std::move(key), exec, ctx.scratch_generation()});
  ++captures_;
  check_cuda(cudaGraphLaunch(exec, ctx.stream()), "cudaGraphLaunch");
}

}  // namespace strata::gpu
