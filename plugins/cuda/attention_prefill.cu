// ATTENTION for many tokens (prefill): a block takes kRows consecutive (token, q head) rows of one kv head (for
// qwen3's group of 8: 8 tokens x 8 heads) and walks the key tiles 0..(its largest position), loading each key and
// value tile once into shared memory for all its rows. Scores: each thread 2 x kC (row, key) dots, 2 x 2 at a time,
// the 32-lane tree depth first (attention_common.cuh), from permuted rows of doubles (q and keys converted from
// float once, when staged: a float-to-double conversion issues at a quarter of the double fma rate on sm_90, and
// each staged value serves many dots), 16-byte loads of 2 terms.
// Then an online softmax per row (keys past a row's position masked out) and the weighted values, each thread
// kRows/8 rows x kT value indices, in double. Rows are finished in the block: no partials, no combine. Tiles past
// every row's position, or below every row's sliding window (backend 1.6), are never loaded (causal skipping); the
// grid depends on the shapes only. The sinks (1.6) join each row's denominator at the end.
#include "attention_paths.hpp"
#include "dynamic_smem.hpp"
#include "ops.hpp"
#include "warp_reduce.cuh"

namespace strata::gpu::attention {
namespace {

constexpr int kTk = 32;  // key positions per tile

// kT terms per leaf (head_dim padded to 32 * kT); kRows rows per block keep the thread's outputs at 32 doubles.
template <int kT>
constexpr int rows_for() {
  return kT >= 8 ? 32 : 64;
}

template <int kT, int kRows>
struct Layout {
  static constexpr int kDp = kLanes * kT;   // padded head_dim
  static constexpr int kS = kDp + 2;        // permuted row stride (doubles): neighbouring rows start 4 banks apart
  static constexpr int kSc = kTk + 1;       // score row stride (doubles)
  // Shared memory, in this order: per row m, l, alpha; scores [kRows][kSc]; weights [kTk][kRows]; q [kRows][kS] and
  // keys [kTk][kS] (permuted; all doubles); values [kTk][kDp] (floats: each is converted once per use, but serves
  // kRows / 8 rows, and doubles would not fit head_dim 256); the rows' positions (int).
  static constexpr size_t kDoubles = 3 * kRows + kRows * kSc + kTk * kRows + kRows * kS + kTk * kS;
  static constexpr size_t kFloats = kTk * kDp;
  static constexpr size_t kBytes = kDoubles * sizeof(double) + kFloats * sizeof(float) + kRows * sizeof(int);
  static_assert(kDoubles % 2 == 0, "the float rows must stay 16-byte aligned");
};

template <Cache kCache, int kT, int kRows>
__global__ void __launch_bounds__(kThreads, 1) attention_tiled_f64ref(Operands o) {
  using L = Layout<kT, kRows>;
  constexpr int kS = L::kS, kDp = L::kDp, kSc = L::kSc;
  extern __shared__ double smem[];
  double* m_run = smem;
  double* l_run = m_run + kRows;
  double* alpha = l_run + kRows;
  double* sc = alpha + kRows;  // [kRows][kSc]
  double* wt = sc + kRows * kSc;  // [kTk][kRows]
  double* qs = wt + kTk * kRows;
  double* ks = qs + kRows * kS;
  auto* vs = reinterpret_cast<float*>(ks + kTk * kS);
  auto* rpos = reinterpret_cast<int*>(vs + kTk * kDp);

  const int tid = static_cast<int>(threadIdx.x), squad = tid / kLanes, lane = tid % kLanes;
  const int G = o.group, D = o.head_dim, kvh = static_cast<int>(blockIdx.y);
  // The last tokens usually see the most positions: their blocks start first.
  const int64_t row0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kRows;
  const int64_t n_rows = static_cast<int64_t>(o.n_tok) * G;
  const int64_t koff = static_cast<int64_t>(kvh) * D;

  // Row r is (token, head) = ((row0 + r) / G, kvh * G + (row0 + r) % G). Its position, or -1 (outside the cache:
  // a NaN row) or -2 (no such row): both see no key.
  for (int r = tid; r < kRows; r += kThreads) {
    const int64_t gr = row0 + r;
    int p = -2;
    if (gr < n_rows) {
      p = o.pos[gr / G];
      if (p < 0 || p >= o.n_ctx) p = -1;
    }
    rpos[r] = p;
    m_run[r] = -INFINITY;
    l_run[r] = 0.0;
  }
  zero_padding<kT>(qs, kRows, kS, D);
  zero_padding<kT>(ks, kTk, kS, D);
  for (int i = tid; i < kRows * D; i += kThreads) {
    const int r = i / D, d = i % D;
    const int64_t gr = row0 + r;
    float x = 0.0f;
    if (gr < n_rows) x = q_row(o, static_cast<int>(gr / G), kvh * G + static_cast<int>(gr % G))[d];
    qs[r * kS + permuted_index<kT>(d)] = static_cast<double>(x);
  }
  __syncthreads();
  // Keys first..last cover every row's (a sliding window's start, from its tile's start, at the lowest).
  int last = -1, first = o.n_ctx;
  for (int r = 0; r < kRows; ++r) {
    last = max(last, rpos[r]);
    if (rpos[r] >= 0) first = min(first, window_first_key(rpos[r], o.window));
  }
  first = first / kTk * kTk;

  // Scores: squads tile the kRows x kTk scores; a thread computes rows s_row + {0, 8} x keys s_key + {0, 4, ...}.
  constexpr int kRowSquads = kRows / 16, kKeySquads = kSquads / kRowSquads;
  constexpr int kKeysPerSquad = kTk / kKeySquads, kC = kKeysPerSquad / 4;
  static_assert(kRowSquads * kKeySquads == kSquads && kC % 2 == 0, "score tiling");
  const int s_row = (squad % kRowSquads) * 16 + lane % 8;
  const int s_key = (squad / kRowSquads) * kKeysPerSquad + lane / 8;
  // Softmax: kTpr neighbouring threads per row.
  constexpr int kTpr = kThreads / kRows, kPerThread = kTk / kTpr;
  const int m_row = tid / kTpr, m_sub = tid % kTpr;
  // Weighted values: squad's rows squad * kRW + a, value indices lane + 32 i.
  constexpr int kRW = kRows / kSquads;
  double acc[kRW][kT];
#pragma unroll
  for (int a = 0; a < kRW; ++a) {
#pragma unroll
    for (int i = 0; i < kT; ++i) acc[a][i] = 0.0;
  }

  for (int j0 = first; j0 <= last; j0 += kTk) {
    const int n = min(kTk, last + 1 - j0);
    __syncthreads();  // the previous tile's keys, values and weights are used up
    load_columns<kCache, kT>(o.k, o.k_stride, koff, D, j0, n, o.vec4 != 0, ks, kS);
    load_columns<kCache, 0>(o.v, o.v_stride, koff, D, j0, n, o.vec4 != 0, vs, kDp);
    __syncthreads();
#pragma unroll 1
    for (int c0 = 0; c0 < kC; c0 += 2) {
      double s[2][2];
      dot32_tile<kT, 2, 2>(qs + s_row * kS, 8 * kS, ks + (s_key + 4 * c0) * kS, 4 * kS, s);
#pragma unroll
      for (int a = 0; a < 2; ++a) {
#pragma unroll
        for (int c = 0; c < 2; ++c) sc[(s_row + 8 * a) * kSc + s_key + 4 * (c0 + c)] = o.scale * s[a][c];
      }
    }
    __syncthreads();
    {
      // Keys past the tile's end or the row's position, or below its window, get weight 0 (a score of -inf).
      const int pr = rpos[m_row];
      const int lo = pr >= 0 ? window_first_key(pr, o.window) : 0;
      double sv[kPerThread];
      double mx = -INFINITY;
#pragma unroll
      for (int u = 0; u < kPerThread; ++u) {
        const int jj = m_sub + kTpr * u;
        sv[u] = jj < n && j0 + jj <= pr && j0 + jj >= lo ? sc[m_row * kSc + jj] : -INFINITY;
        mx = fmax(mx, sv[u]);
      }
      for (int m = 1; m < kTpr; m *= 2) mx = fmax(mx, shfl_xor_double(mx, m));
      const double m_old = m_run[m_row];
      const double m_new = fmax(m_old, mx);
      double sum = 0.0;
#pragma unroll
      for (int u = 0; u < kPerThread; ++u) {
        const double e = sv[u] == -INFINITY ? 0.0 : exp(sv[u] - m_new);
        wt[(m_sub + kTpr * u) * kRows + m_row] = e;
        sum = sum + e;
      }
      for (int m = 1; m < kTpr; m *= 2) sum = sum + shfl_xor_double(sum, m);
      if (m_sub == 0) {
        const double al = m_old == -INFINITY ? 0.0 : exp(m_old - m_new);
        alpha[m_row] = al;
        l_run[m_row] = l_run[m_row] * al + sum;
        m_run[m_row] = m_new;
      }
    }
    __syncthreads();
#pragma unroll
    for (int a = 0; a < kRW; ++a) {
      const double al = alpha[squad * kRW + a];
#pragma unroll
      for (int i = 0; i < kT; ++i) acc[a][i] = acc[a][i] * al;
    }
    for (int jj = 0; jj < n; ++jj) {
      double w[kRW];
      float v[kT];
#pragma unroll
      for (int a = 0; a < kRW; ++a) w[a] = wt[jj * kRows + squad * kRW + a];
#pragma unroll
      for (int i = 0; i < kT; ++i) v[i] = vs[jj * kDp + lane + kLanes * i];
#pragma unroll
      for (int a = 0; a < kRW; ++a) {
#pragma unroll
        for (int i = 0; i < kT; ++i) acc[a][i] = acc[a][i] + w[a] * static_cast<double>(v[i]);
      }
    }
  }

#pragma unroll
  for (int a = 0; a < kRW; ++a) {
    const int r = squad * kRW + a;
    const int64_t gr = row0 + r;
    if (gr >= n_rows) continue;
    auto* out = reinterpret_cast<float*>(o.dst + static_cast<uint64_t>(gr / G) * o.d_stride) +
                static_cast<int64_t>(kvh * G + static_cast<int>(gr % G)) * D;
    const bool bad = rpos[r] < 0;
    double total = l_run[r], rescale = 1.0;
    if (o.sinks != nullptr && !bad) {
      // The sink: M = max(m, sink) as the reference's std::max; the keys' terms rescaled to it (exactly 1 when
      // the sink is not above m), and exp(sink - M) added to the denominator after them.
      const double sink = static_cast<double>(o.sinks[kvh * G + static_cast<int>(gr % G)]);
      const double m = m_run[r];
      const double big = m < sink ? sink : m;
      rescale = exp(m - big);
      total = total * rescale + exp(sink - big);
    }
#pragma unroll
    for (int i = 0; i < kT; ++i) {
      const int d = lane + kLanes * i;
      // A position outside the cache (the host's checks rule it out): NaN, visibly wrong, rather than stale memory.
      if (d < D) out[d] = bad ? __int_as_float(0x7fc00000) : static_cast<float>(acc[a][i] * rescale / total);
    }
  }
}

template <Cache kCache, int kT>
void launch_tiled(const Context& ctx, const Operands& o, int n_kv_head) {
  constexpr int kRows = rows_for<kT>();
  auto* const kernel = attention_tiled_f64ref<kCache, kT, kRows>;
  constexpr auto bytes = Layout<kT, kRows>::kBytes;
  allow_dynamic_smem<attention_tiled_f64ref<kCache, kT, kRows>>(ctx, bytes);
  const int64_t tiles = (static_cast<int64_t>(o.n_tok) * o.group + kRows - 1) / kRows;
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(n_kv_head));
  kernel<<<grid, kThreads, bytes, ctx.stream()>>>(o);
}

template <Cache kCache>
void launch_tiled_for(const Context& ctx, const Operands& o, int n_kv_head) {
  if (o.head_dim <= 2 * kLanes) {
    launch_tiled<kCache, 2>(ctx, o, n_kv_head);
  } else if (o.head_dim <= 4 * kLanes) {
    launch_tiled<kCache, 4>(ctx, o, n_kv_head);
  } else {
    launch_tiled<kCache, 8>(ctx, o, n_kv_head);
  }
}

}  // namespace

bool prefill_fits(const Context& ctx, int64_t head_dim) {
  const size_t need = head_dim <= 2 * kLanes   ? Layout<2, rows_for<2>()>::kBytes
                      : head_dim <= 4 * kLanes ? Layout<4, rows_for<4>()>::kBytes
                                               : Layout<8, rows_for<8>()>::kBytes;
#if defined(STRATA_GPU_HIP)
  const size_t limit = ctx.props().sharedMemPerBlock;
#else
  const size_t limit = ctx.props().sharedMemPerBlockOptin;
#endif
  return need <= limit;
}

int64_t prefill_blocks(int64_t n_tok, int64_t group, int64_t head_dim, int64_t n_kv_head) {
  const int64_t rows = head_dim > 4 * kLanes ? rows_for<8>() : rows_for<4>();
  return (n_tok * group + rows - 1) / rows * n_kv_head;
}

void run_prefill(Context& ctx, const Operands& o, Cache cache, int n_kv_head) {
  switch (cache) {
    case Cache::F16: launch_tiled_for<Cache::F16>(ctx, o, n_kv_head); break;
    case Cache::Q8_0: launch_tiled_for<Cache::Q8_0>(ctx, o, n_kv_head); break;
    case Cache::F32: launch_tiled_for<Cache::F32>(ctx, o, n_kv_head); break;
  }
  check_launch("ATTENTION (prefill tiles)");
}

}  // namespace strata::gpu::attention
