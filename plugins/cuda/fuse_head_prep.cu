// Fusion: the attention's head preparation in one kernel. The ops after the q, k, v projections,
//   [RMS_NORM(q_alt <- q, per head)] ROPE(q' <- q_alt)  [RMS_NORM(k_alt <- k)] ROPE(k' <- k_alt)
//   KV_STORE(key cache <- k')  KV_STORE(value cache <- v)
// (qwen3: all six; llama: the ropes and stores; any run of two or more of them in this shape), run as one launch:
// one 32-lane group per (head, token) takes its row through norm, rope and store in registers and shared memory,
// with the very arithmetic of the separate ops (rms_row.cuh, rope_pair.cuh, kv_store_block.cuh; float by default,
// double with canonical_double) and writing every buffer they write (q_alt, k_alt included), so the bytes are
// theirs. A store whose source is not a rope's output (v) is a job of its own, cut into rows of the head size.
#include <algorithm>

#include "dependent_launch.cuh"
#include "fusion_match.hpp"
#include "kv_store_block.cuh"
#include "ops.hpp"
#include "rms_row.cuh"
#include "rope_pair.cuh"

namespace strata::gpu {
namespace {

using format::GgmlType;

constexpr int kGroups = 2;  // rows per block, one 32-lane group each
constexpr int kThreads = kGroups * kNormGroup;
constexpr int kMaxRow = static_cast<int>(kNormGroupRowMax);
constexpr int kMaxChains = 2;  // q and k
constexpr int kMaxJobs = 4;

// Rows of n floats, `units` of them per token, read at src and taken through the norm, rope and store that are
// present. Unit u of token t of each tensor lies at its base + u * unit + t * tok (bytes).
struct HeadJob {
  const char* src;
  uint64_t src_unit, src_tok;
  char* norm_dst;  // nullptr: no norm
  uint64_t norm_unit, norm_tok;
  const float* norm_w;  // nullptr: no weight
  float eps;
  char* rope_dst;  // nullptr: no rope
  uint64_t rope_unit, rope_tok;
  const int32_t* rope_pos;
  float rope_scale;
  int n_rot;
  bool neox;
  char* cache;  // nullptr: no store; unit u of column pos[t] starts at value u * n
  uint64_t cache_col;
  const int32_t* store_pos;
  int64_t n_ctx;
  bool q8;
  int n, units;
};

struct HeadPrepArgs {
  HeadJob job[kMaxJobs];
  RopeFreqs freq;  // the ropes' one table (their parameters are equal): doubles for the _f64ref kernel
  float mscale;    // their YaRN attn_factor on cos and sin (1 without)
};

__device__ __forceinline__ const float* row_at(const char* base, uint64_t unit, uint64_t tok, int u, int64_t t) {
  return reinterpret_cast<const float*>(base + static_cast<uint64_t>(u) * unit + static_cast<uint64_t>(t) * tok);
}
__device__ __forceinline__ float* row_at(char* base, uint64_t unit, uint64_t tok, int u, int64_t t) {
  return reinterpret_cast<float*>(base + static_cast<uint64_t>(u) * unit + static_cast<uint64_t>(t) * tok);
}

// blockIdx.z is the job, blockIdx.y the token, blockIdx.x a pair of units. T is the norm's and rope's arithmetic
// (rms_row.cuh, rope_pair.cuh): float in head_prep_kernel, double in head_prep_kernel_f64ref (canonical_double).
template <class T>
__device__ __forceinline__ void head_prep(const HeadPrepArgs& a) {
  __shared__ float rows[kGroups][kMaxRow];
  wait_for_inputs();  // before any return (dependent_launch.cuh)
  start_dependents();
  const HeadJob& j = a.job[blockIdx.z];
  const int unit0 = static_cast<int>(blockIdx.x) * kGroups;
  if (unit0 >= j.units) return;  // the whole block leaves together
  const int g = static_cast<int>(threadIdx.x) / kNormGroup, lane = static_cast<int>(threadIdx.x) % kNormGroup;
  const int u = unit0 + g < j.units ? unit0 + g : unit0;
  const bool live = unit0 + g < j.units;  // a spare group runs along (barriers, shuffles) and writes nothing
  const int64_t t = blockIdx.y;
  float* r = rows[g];

  float v[kNormSlots];
  const float* x = row_at(j.src, j.src_unit, j.src_tok, u, t);
#pragma unroll
  for (int s = 0; s < kNormSlots; ++s) {
    const int i = lane + s * kNormGroup;
    v[s] = i < j.n ? x[i] : 0.0f;
  }
  if (j.norm_dst != nullptr) {
    const T scale = rms_scale(norm_group_sum_squares<T>(v), j.n, static_cast<T>(j.eps));
    float* y = row_at(j.norm_dst, j.norm_unit, j.norm_tok, u, t);
#pragma unroll
    for (int s = 0; s < kNormSlots; ++s) {
      const int i = lane + s * kNormGroup;
      if (i < j.n) {
        v[s] = rms_value(v[s], scale, j.norm_w, i);
        if (live) y[i] = v[s];
      }
    }
  }
#pragma unroll
  for (int s = 0; s < kNormSlots; ++s) {
    const int i = lane + s * kNormGroup;
    if (i < j.n) r[i] = v[s];
  }
  __syncthreads();

  if (j.rope_dst != nullptr) {
    float* y = row_at(j.rope_dst, j.rope_unit, j.rope_tok, u, t);
    const int32_t p = j.rope_pos[t];
    // Each pair is read and rewritten by one lane only.
    for (int k = lane; k < j.n_rot / 2; k += kNormGroup) {
      int ia, ib;
      rope_pair_index(k, j.n_rot, j.neox, ia, ib);
      float ya, yb;
      if constexpr (sizeof(T) == sizeof(double)) {
        rope_rotate(r[ia], r[ib], static_cast<double>(p), static_cast<double>(j.rope_scale), a.freq.d[k], ya, yb,
                    static_cast<double>(a.mscale));
      } else {
        float sn, cs;
        rope_sincos_f(p, j.rope_scale, a.freq.f.hi[k], a.freq.f.lo[k], sn, cs);
        rope_mscale_f(a.mscale, sn, cs);
        rope_rotate_f(r[ia], r[ib], sn, cs, ya, yb);
      }
      r[ia] = ya;
      r[ib] = yb;
      if (live) {
        y[ia] = ya;
        y[ib] = yb;
      }
    }
    if (live) {
      for (int i = j.n_rot + lane; i < j.n; i += kNormGroup) y[i] = r[i];
    }
    __syncthreads();
  }

  if (j.cache != nullptr && live) {
    const int32_t p = j.store_pos[t];
    if (p < 0 || p >= j.n_ctx) return;  // as KV_STORE: a position outside the cache writes nothing
    char* col = j.cache + static_cast<uint64_t>(p) * j.cache_col;
    if (j.q8) {
      const int blocks = j.n / kKvQ8Block;
      for (int b = lane; b < blocks; b += kNormGroup) {
        kv_store_q8_0_block(r + b * kKvQ8Block, col, static_cast<int64_t>(u) * blocks + b);
      }
    } else {
      auto* c = reinterpret_cast<uint16_t*>(col) + static_cast<int64_t>(u) * j.n;
      for (int i = lane; i < j.n; i += kNormGroup) c[i] = f32_to_f16_bits(r[i]);
    }
  }
}

__global__ void __launch_bounds__(kThreads) head_prep_kernel(HeadPrepArgs a) { head_prep<float>(a); }
__global__ void __launch_bounds__(kThreads) head_prep_kernel_f64ref(HeadPrepArgs a) { head_prep<double>(a); }

// ---- matching -------------------------------------------------------------------------------------------------

constexpr uint64_t kF32 = sizeof(float);

bool rows_apart(const strata_tensor& t, int64_t n) { return t.nb[1] >= static_cast<uint64_t>(n) * kF32; }

// One table and one scaling serve both ropes: mode, n_rot, base, scale and YaRN's four floats equal.
bool same_rope_params(const strata_op& a, const strata_op& b) {
  if (a.i[0] != b.i[0] || a.i[1] != b.i[1]) return false;
  for (int f = 0; f < 6; ++f) {
    if (a.f[f] != b.f[f]) return false;
  }
  return true;
}

// A [norm] + rope chain whose rows can be prepared one (head, token) per group.
bool chain_ok(const strata_op* norm, const strata_op& rope) {
  // Modes 40 (M-RoPE) and 24 (vision) take a position per pair: the fused kernel reads one a token and knows pairs
  // of modes 0 and 2 only, so ROPE runs the others alone.
  if (check_rope(rope) || (rope.i[0] != kRopeModeAdjacent && rope.i[0] != kRopeModeNeox)) return false;
  const strata_tensor &x = rope.src[0], &pos = rope.src[1], &y = rope.dst;
  const int64_t hd = x.ne[0];
  if (hd > kMaxRow || !rows_apart(x, hd) || !rows_apart(y, hd)) return false;
  if (!same_or_disjoint(x, y) || !disjoint(pos, y)) return false;
  if (norm == nullptr) return true;
  const strata_tensor &nx = norm->src[0], &w = norm->src[1];
  if (check_rms_norm(*norm) || nx.ne[0] != hd || nx.ne[1] != x.ne[1] || nx.ne[2] != x.ne[2] || nx.ne[3] != 1) return false;
  if (!rows_apart(nx, hd) || !all_same_or_disjoint({&nx, &x, &y})) return false;
  return disjoint(w, x) && disjoint(w, y) && disjoint(pos, x);
}

// Does the store write the chain's rope output, head h of token t being values [h * hd, (h + 1) * hd) of column t?
bool store_feeds_from(const strata_op& rope, const strata_op& store) {
  const strata_tensor &y = rope.dst, &s = store.src[0];
  const int64_t hd = y.ne[0];
  if (s.data != y.data || s.ne[0] != hd * y.ne[1] || s.ne[1] != y.ne[2] || y.nb[1] != hd * kF32 || s.nb[1] != y.nb[2]) {
    return false;
  }
  return format::is_type(store.dst, GgmlType::F16) || hd % kKvQ8Block == 0;
}

// A store on its own: the column cut into rows of `unit` values.
int lone_unit(const strata_op& store, int64_t preferred) {
  const int64_t n = store.src[0].ne[0];
  const bool q8 = format::is_type(store.dst, GgmlType::Q8_0);
  const auto fits = [&](int64_t u) { return u > 0 && u <= kMaxRow && n % u == 0 && (!q8 || u % kKvQ8Block == 0); };
  if (fits(preferred)) return static_cast<int>(preferred);
  if (fits(n)) return static_cast<int>(n);
  for (int64_t u = kMaxRow; u >= kKvQ8Block; u /= 2) {
    if (fits(u)) return static_cast<int>(u);
  }
  return 0;
}

void set_store(HeadJob& job, const strata_op& store) {
  job.cache = static_cast<char*>(store.dst.data);
  job.cache_col = store.dst.nb[1];
  job.store_pos = static_cast<const int32_t*>(store.src[1].data);
  job.n_ctx = store.dst.ne[1];
  job.q8 = format::is_type(store.dst, GgmlType::Q8_0);
}

// What a job reads and writes, for the hazard check between jobs.
struct JobTensors {
  const strata_tensor* reads[4] = {};
  const strata_tensor* writes[3] = {};
};

bool jobs_independent(const JobTensors* jt, int n_jobs) {
  for (int p = 0; p < n_jobs; ++p) {
    for (int q = 0; q < n_jobs; ++q) {
      if (p == q) continue;
      for (const strata_tensor* w : jt[p].writes) {
        if (w == nullptr) continue;
        for (const strata_tensor* o : jt[q].reads) {
          if (o != nullptr && !disjoint(*w, *o)) return false;
        }
        for (const strata_tensor* o : jt[q].writes) {
          if (o != nullptr && !disjoint(*w, *o)) return false;
        }
      }
    }
  }
  return true;
}

}  // namespace

size_t fuse_head_prep(Context& ctx, const strata_op* ops, size_t i, size_t n) {
  const strata_op* norms[kMaxChains] = {};
  const strata_op* ropes[kMaxChains] = {};
  const strata_op* chain_store[kMaxChains] = {};
  const strata_op* lone[kMaxJobs] = {};
  int chains = 0, lones = 0;
  size_t j = i;
  while (j < n && chains < kMaxChains) {
    const bool with_norm = ops[j].kind == STRATA_OP_RMS_NORM && j + 1 < n && ops[j + 1].kind == STRATA_OP_ROPE &&
                           same_tensor(ops[j].dst, ops[j + 1].src[0]);
    const strata_op* rope = with_norm ? &ops[j + 1] : ops[j].kind == STRATA_OP_ROPE ? &ops[j] : nullptr;
    const strata_op* norm = with_norm ? &ops[j] : nullptr;
    if (rope == nullptr || !chain_ok(norm, *rope)) break;
    if (chains > 0 && !same_rope_params(*ropes[0], *rope)) break;
    norms[chains] = norm;
    ropes[chains] = rope;
    ++chains;
    j += with_norm ? 2 : 1;
  }
  const int64_t head_dim = chains > 0 ? ropes[0]->src[0].ne[0] : 0;
  while (j < n && ops[j].kind == STRATA_OP_KV_STORE && chains + lones < kMaxJobs && !check_kv_store(ops[j])) {
    int c = 0;
    while (c < chains && (chain_store[c] != nullptr || !store_feeds_from(*ropes[c], ops[j]))) ++c;
    if (c < chains) {
      chain_store[c] = &ops[j];
    } else if (lone_unit(ops[j], head_dim) > 0) {
      lone[lones++] = &ops[j];
    } else {
      break;
    }
    ++j;
  }
  const size_t used = j - i;
  if (used < 2) return 0;

  HeadPrepArgs a{};
  JobTensors jt[kMaxJobs];
  int64_t n_tok = -1;
  bool same_tokens = true;
  int max_units = 0;
  const auto tokens = [&](int64_t nt) {
    if (n_tok >= 0 && nt != n_tok) same_tokens = false;
    n_tok = nt;
  };
  for (int c = 0; c < chains; ++c) {
    const strata_op &rope = *ropes[c];
    const strata_tensor& src = norms[c] != nullptr ? norms[c]->src[0] : rope.src[0];
    HeadJob& job = a.job[c];
    job.n = static_cast<int>(src.ne[0]);
    job.units = static_cast<int>(src.ne[1]);
    job.src = static_cast<const char*>(src.data);
    job.src_unit = src.nb[1];
    job.src_tok = src.nb[2];
    if (const strata_op* norm = norms[c]) {
      job.norm_dst = static_cast<char*>(norm->dst.data);
      job.norm_unit = norm->dst.nb[1];
      job.norm_tok = norm->dst.nb[2];
      job.norm_w = static_cast<const float*>(norm->src[1].data);
      job.eps = norm->f[0];
      jt[c].writes[0] = &norm->dst;
      jt[c].reads[1] = &norm->src[1];
    }
    job.rope_dst = static_cast<char*>(rope.dst.data);
    job.rope_unit = rope.dst.nb[1];
    job.rope_tok = rope.dst.nb[2];
    job.rope_pos = static_cast<const int32_t*>(rope.src[1].data);
    job.rope_scale = rope_scaling(rope.f).pos_scale;
    job.n_rot = rope.i[1];
    job.neox = rope.i[0] == kRopeModeNeox;
    jt[c].reads[0] = &src;
    jt[c].reads[2] = &rope.src[1];
    jt[c].writes[1] = &rope.dst;
    if (const strata_op* store = chain_store[c]) {
      set_store(job, *store);
      jt[c].reads[3] = &store->src[1];
      jt[c].writes[2] = &store->dst;
      for (const strata_tensor* t : {&src, &rope.dst, &rope.src[0], &rope.src[1], &store->src[1]}) {
        if (!disjoint(store->dst, *t)) return 0;
      }
      if (norms[c] != nullptr && !disjoint(store->dst, norms[c]->src[1])) return 0;
    }
    tokens(src.ne[2]);
    max_units = std::max(max_units, job.units);
  }
  for (int l = 0; l < lones; ++l) {
    const strata_op& store = *lone[l];
    const strata_tensor& src = store.src[0];
    HeadJob& job = a.job[chains + l];
    job.n = lone_unit(store, head_dim);
    job.units = static_cast<int>(src.ne[0] / job.n);
    job.src = static_cast<const char*>(src.data);
    job.src_unit = static_cast<uint64_t>(job.n) * kF32;
    job.src_tok = src.nb[1];
    set_store(job, store);
    jt[chains + l].reads[0] = &src;
    jt[chains + l].reads[1] = &store.src[1];
    jt[chains + l].writes[0] = &store.dst;
    if (!disjoint(store.dst, src) || !disjoint(store.dst, store.src[1])) return 0;
    tokens(src.ne[1]);
    max_units = std::max(max_units, job.units);
  }
  const int n_jobs = chains + lones;
  if (!same_tokens || n_tok <= 0 || !jobs_independent(jt, n_jobs)) return 0;
  const bool f64 = ctx.options().canonical_double;
  if (chains > 0) {
    rope_fill_freqs(a.freq, ropes[0]->f, ropes[0]->i[1], f64);
    a.mscale = rope_scaling(ropes[0]->f).mscale;
  }

  forget_quantized_writes(ctx, ops + i, used);
  const dim3 grid(static_cast<unsigned>((max_units + kGroups - 1) / kGroups), static_cast<unsigned>(n_tok),
                  static_cast<unsigned>(n_jobs));
  launch_dependent(ctx, f64 ? head_prep_kernel_f64ref : head_prep_kernel, grid, kThreads, 0, a);
  check_launch("head preparation (fused RMS_NORM, ROPE, KV_STORE)");
  return used;
}

}  // namespace strata::gpu
