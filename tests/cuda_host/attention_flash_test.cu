// The float attention's kernels (attention_flash.cuh) run on the host: whole blocks emulated with one fiber per GPU
// thread, the warp's collectives (ldmatrix, mma.sync m16n8k16, shuffles, barriers) by an emulator built
// from PTX's documented fragment layouts, so the kernels' own index arithmetic, staging, masking and folds run as
// they do on the GPU. The MMA's stand-in sums in double and rounds once (the hardware's internal order is its
// own); 2^x is exp2f. What is checked, with no GPU:
//   - the tiles kernel (prompts) and the split kernel with its combine (windows of a few tokens) give the same bytes
//     for every position, in windows of 1, 2, 3, 8, 9 and 37 tokens, at depths across several segments, with the
//     split grid's warps striding over segments or not;
//   - every row agrees with a plain double computation of attention within the f16 operands' error;
//   - unwritten cache columns past the positions, and columns below a sliding window (NaN keys and values), never
//     reach a row;
//   - the hooks for gpt-oss (a sliding window, per-head sink logits) give the double computation's rows and the
//     same bytes in every window too.
#include <gtest/gtest.h>

#include <ucontext.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../unit/float_nmse.hpp"
#include "attention_flash.cuh"
#include "strata/format/fp16.hpp"
#include "strata/format/quantize_weights.hpp"

namespace strata::gpu::attention::flash {
namespace {

// ---- the emulator ----------------------------------------------------------------------------------------------

// A block's GPU threads run as fibers on one host thread, switched only at the collectives: a block is more threads
// than the machine has cores and every collective is a barrier, so OS threads spent most of these tests' time in
// the kernel waking each other (on a 2-core machine, three quarters of it). The fibers run round robin, each until
// it waits at a barrier; a barrier opens when its last thread arrives.
struct FiberBlock;
inline thread_local FiberBlock* running_block = nullptr;

class FiberBarrier {
 public:
  explicit FiberBarrier(int n) : n_(n) {}
  void arrive_and_wait();

 private:
  const int n_;
  int count_ = 0;
  unsigned phase_ = 0;
};

struct FiberBlock {
  static constexpr size_t kStackBytes = size_t{256} << 10;
  struct Fiber {
    ucontext_t ctx;
    std::unique_ptr<char[]> stack;
    HostWarp* lane = nullptr;
    bool done = false;
  };
  std::vector<Fiber> fibers;
  ucontext_t scheduler;
  int current = 0;
  std::function<void(int)> body;

  // Runs body(tid) for every lane (tid its index), each with its lane as host_warp, until every one has returned.
  void run(const std::vector<HostWarp*>& lanes, std::function<void(int)> f) {
    const int n = static_cast<int>(lanes.size());
    body = std::move(f);
    fibers = std::vector<Fiber>(static_cast<size_t>(n));
    running_block = this;
    for (int i = 0; i < n; ++i) {
      Fiber& fb = fibers[static_cast<size_t>(i)];
      fb.lane = lanes[static_cast<size_t>(i)];
      fb.stack.reset(new char[kStackBytes]);
      getcontext(&fb.ctx);
      fb.ctx.uc_stack.ss_sp = fb.stack.get();
      fb.ctx.uc_stack.ss_size = kStackBytes;
      fb.ctx.uc_link = &scheduler;
      makecontext(&fb.ctx, &FiberBlock::entry, 0);
    }
    for (int left = n; left > 0;) {
      for (int i = 0; i < n; ++i) {
        Fiber& fb = fibers[static_cast<size_t>(i)];
        if (fb.done) continue;
        current = i;
        host_warp = fb.lane;
        swapcontext(&scheduler, &fb.ctx);
        if (fb.done) --left;
      }
    }
    host_warp = nullptr;
    running_block = nullptr;
  }
  void yield() { swapcontext(&fibers[static_cast<size_t>(current)].ctx, &scheduler); }
  static void entry() {
    FiberBlock* b = running_block;
    const int i = b->current;
    b->body(i);
    b->fibers[static_cast<size_t>(i)].done = true;  // returns to the scheduler through uc_link
  }
};

void FiberBarrier::arrive_and_wait() {
  if (++count_ == n_) {
    count_ = 0;
    ++phase_;
    return;
  }
  const unsigned phase = phase_;
  while (phase_ == phase) running_block->yield();
}

struct WarpShared {
  FiberBarrier bar{32};
  float f[32];
  int i[32];
  const void* p[32];
  uint32_t a[32][4], b[32][2];
  float c[32][4];
};

struct BlockShared {
  explicit BlockShared(int threads) : bar(threads) {
    for (int w = 0; w < threads / 32; ++w) warps.push_back(std::make_unique<WarpShared>());
  }
  FiberBarrier bar;
  std::vector<std::unique_ptr<WarpShared>> warps;
};

float half_at(const void* base, int index) {
  uint16_t h;
  std::memcpy(&h, static_cast<const unsigned char*>(base) + 2 * index, 2);
  return format::fp16_to_fp32(h);
}
uint16_t half_bits(uint32_t word, int k) { return static_cast<uint16_t>(word >> (16 * k)); }
float half_of(uint32_t word, int k) { return format::fp16_to_fp32(half_bits(word, k)); }

class EmulatedLane : public HostWarp {
 public:
  EmulatedLane(int lane, WarpShared& w, BlockShared& b) : lane_(lane), w_(w), b_(b) {}
  void sync_warp() override { w_.bar.arrive_and_wait(); }
  void sync_block() override { b_.bar.arrive_and_wait(); }
  float shfl_xor(float v, int mask) override {
    w_.f[lane_] = v;
    w_.bar.arrive_and_wait();
    const float r = w_.f[lane_ ^ mask];
    w_.bar.arrive_and_wait();
    return r;
  }
  int shfl_xor_int(int v, int mask) override {
    w_.i[lane_] = v;
    w_.bar.arrive_and_wait();
    const int r = w_.i[lane_ ^ mask];
    w_.bar.arrive_and_wait();
    return r;
  }
  float shfl_up(float v, int delta) override {
    w_.f[lane_] = v;
    w_.bar.arrive_and_wait();
    const float r = lane_ >= delta ? w_.f[lane_ - delta] : v;
    w_.bar.arrive_and_wait();
    return r;
  }
  // Lane 8i + r gives the address of row r of matrix i; this lane gets row lane / 4, columns 2 (lane % 4) and +1
  // (trans: rows 2 (lane % 4) and +1 of column lane / 4), the lower-indexed element in the low half.
  void ldsm_x4(uint32_t (&r)[4], const void* p, bool trans) override {
    w_.p[lane_] = p;
    w_.bar.arrive_and_wait();
    for (int m = 0; m < 4; ++m) {
      uint16_t lo, hi;
      if (!trans) {
        const void* row = w_.p[8 * m + lane_ / 4];
        lo = format::fp32_to_fp16(half_at(row, 2 * (lane_ % 4)));
        hi = format::fp32_to_fp16(half_at(row, 2 * (lane_ % 4) + 1));
      } else {
        lo = format::fp32_to_fp16(half_at(w_.p[8 * m + 2 * (lane_ % 4)], lane_ / 4));
        hi = format::fp32_to_fp16(half_at(w_.p[8 * m + 2 * (lane_ % 4) + 1], lane_ / 4));
      }
      r[m] = static_cast<uint32_t>(lo) | static_cast<uint32_t>(hi) << 16;
    }
    w_.bar.arrive_and_wait();
  }
  // PTX's m16n8k16 f16 layouts (lane = 4 g + t): A register 0 row g columns 2t, 2t+1; 1 row g+8; 2 row g columns
  // 8+2t..; 3 row g+8 columns 8+2t..; B register 0 rows (k) 2t, 2t+1 of column g, 1 rows 8+2t..; C/D elements 0, 1
  // row g columns 2t, 2t+1, elements 2, 3 row g+8.
  void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) override {
    for (int k = 0; k < 4; ++k) w_.a[lane_][k] = a[k], w_.c[lane_][k] = d[k];
    w_.b[lane_][0] = b0, w_.b[lane_][1] = b1;
    w_.bar.arrive_and_wait();
    for (int e = 0; e < 4; ++e) {
      const int row = lane_ / 4 + (e >= 2 ? 8 : 0), col = 2 * (lane_ % 4) + (e & 1);
      double sum = w_.c[lane_][e];
      for (int k = 0; k < 16; ++k) {
        const float av = half_of(w_.a[4 * (row % 8) + (k % 8) / 2][(row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0)], k % 2);
        const float bv = half_of(w_.b[4 * col + (k % 8) / 2][k >= 8 ? 1 : 0], k % 2);
        sum += static_cast<double>(av) * static_cast<double>(bv);
      }
      d[e] = static_cast<float>(sum);
    }
    w_.bar.arrive_and_wait();
  }
  float ex2(float x) override { return std::exp2(x); }

 private:
  int lane_;
  WarpShared& w_;
  BlockShared& b_;
};

// Runs body(place, smem) for every thread of one block, each a fiber (FiberBlock).
template <class Body>
void run_block(int bx, int by, int gx, size_t smem_bytes, Body body) {
  BlockShared shared(kThreads);
  std::vector<uint64_t> smem((smem_bytes + 7) / 8 + 2, 0);
  std::vector<std::unique_ptr<EmulatedLane>> lanes;
  std::vector<HostWarp*> lane_of;
  for (int tid = 0; tid < kThreads; ++tid) {
    lanes.push_back(std::make_unique<EmulatedLane>(tid % 32, *shared.warps[static_cast<size_t>(tid / 32)], shared));
    lane_of.push_back(lanes.back().get());
  }
  FiberBlock().run(lane_of, [&](int tid) {
    body(Place{tid, bx, by, gx}, reinterpret_cast<unsigned char*>(smem.data()));
  });
}

// ---- the cases -------------------------------------------------------------------------------------------------

struct Shape {
  bool q8;
  int head_dim, n_head, n_kv_head, n_ctx, first, count;
  int window = 0;      // gpt-oss's sliding window: keys p - window + 1 .. p (0: all)
  bool sinks = false;  // gpt-oss's per-head sink logits in the softmax's denominator
};

class Case {
 public:
  explicit Case(const Shape& s) : s_(s) {
    std::mt19937 rng(static_cast<uint32_t>(s.head_dim * 31 + s.first + s.count));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int kv_dim = s.head_dim * s.n_kv_head, filled = s.first + s.count;
    col_bytes_ = s.q8 ? static_cast<size_t>(kv_dim / 32) * 34 : static_cast<size_t>(kv_dim) * 2;
    for (auto* cache : {&k_, &v_}) {
      cache->assign(col_bytes_ * static_cast<size_t>(s.n_ctx), 0);
      std::vector<float> col(static_cast<size_t>(kv_dim));
      for (int j = 0; j < s.n_ctx; ++j) {
        // Unwritten columns, and those below the first position's sliding window: NaN (never to reach a row).
        const bool seen = j < filled && (s.window == 0 || j > s.first - s.window);
        for (float& x : col) x = seen ? normal(rng) : NAN;
        unsigned char* dst = cache->data() + static_cast<size_t>(j) * col_bytes_;
        if (s.q8) {
          format::quantize_row(format::GgmlType::Q8_0, col.data(), dst, kv_dim);
        } else {
          for (int i = 0; i < kv_dim; ++i) {
            const uint16_t h = format::fp32_to_fp16(col[static_cast<size_t>(i)]);
            std::memcpy(dst + 2 * i, &h, 2);
          }
        }
      }
    }
    q_.resize(static_cast<size_t>(s.head_dim) * s.n_head * s.count);
    for (float& x : q_) x = normal(rng);
    for (int h = 0; h < s.n_head; ++h) sinks_.push_back(1.0f + normal(rng));
    for (int t = 0; t < s.count; ++t) pos_.push_back(s.first + t);
  }

  size_t row_floats() const { return static_cast<size_t>(s_.head_dim) * s_.n_head; }

  Args args(int t0, int n, float* out) const {
    Operands o{};
    o.q = reinterpret_cast<const char*>(q_.data() + static_cast<size_t>(t0) * row_floats());
    o.q_head = static_cast<uint64_t>(s_.head_dim) * sizeof(float);
    o.q_tok = row_floats() * sizeof(float);
    o.k = reinterpret_cast<const char*>(k_.data());
    o.v = reinterpret_cast<const char*>(v_.data());
    o.k_stride = o.v_stride = col_bytes_;
    o.pos = pos_.data() + t0;
    o.dst = reinterpret_cast<char*>(out + static_cast<size_t>(t0) * row_floats());
    o.d_stride = row_floats() * sizeof(float);
    o.head_dim = s_.head_dim;
    o.n_head = s_.n_head;
    o.group = s_.n_head / s_.n_kv_head;
    o.n_tok = n;
    o.n_ctx = s_.n_ctx;
    o.vec4 = s_.head_dim % 4 == 0 ? 1 : 0;
    o.scale = 1.0 / std::sqrt(static_cast<double>(s_.head_dim));
    Args a{};
    a.o = o;
    a.seg_keys = segment_keys(s_.n_ctx);
    a.n_seg = (s_.n_ctx + a.seg_keys - 1) / a.seg_keys;
    a.row_tiles = (n * o.group + 15) / 16;
    a.scale_log2 = static_cast<float>(o.scale) * kLog2e;
    a.window = s_.window;
    a.sinks = s_.sinks ? sinks_.data() : nullptr;
    // As the plugin's launch decides it (16-byte f16 loads where the columns allow them).
    a.vec16 = !s_.q8 && s_.head_dim % 8 == 0 && reinterpret_cast<uintptr_t>(k_.data()) % 16 == 0 &&
                      reinterpret_cast<uintptr_t>(v_.data()) % 16 == 0 && col_bytes_ % 16 == 0
                  ? 1
                  : 0;
    return a;
  }

  // The raw q8_0 staging's piece size as the plugin picks it (attention_flash.cu's q8_unit_for), 0 where none.
  int q8_unit() const {
    if (!s_.q8 || s_.head_dim % 32 != 0) return 0;
    const size_t run = static_cast<size_t>(s_.head_dim / 32) * kCacheQ8Bytes;
    for (size_t u : {size_t{8}, size_t{4}}) {
      if (run % u == 0 && col_bytes_ % u == 0 && reinterpret_cast<uintptr_t>(k_.data()) % u == 0 &&
          reinterpret_cast<uintptr_t>(v_.data()) % u == 0) {
        return static_cast<int>(u);
      }
    }
    return 0;
  }

  template <int kDp, Cache kCache, int kBufs = 2>
  void tiles(std::vector<float>& out, int window, int q8_unit = 0) const {
    for (int t0 = 0; t0 < s_.count; t0 += window) {
      const int n = std::min(window, s_.count - t0);
      Args a = args(t0, n, out.data());
      a.q8_unit = q8_unit;
      const size_t smem = tiles_smem<kDp, kBufs>() + (q8_unit != 0 ? kBufs * q8_raw_bytes<kDp>() : 0);
      const int gx = (n * a.o.group + 16 * kWarps - 1) / (16 * kWarps);
      for (int by = 0; by < s_.n_kv_head; ++by) {
        for (int bx = 0; bx < gx; ++bx) {
          run_block(bx, by, gx, smem, [&](const Place& at, unsigned char* smem) {
            tiles_body<kCache, kDp, kBufs>(a, at, smem);
          });
        }
      }
    }
  }

  template <int kDp, Cache kCache, int kBufs>
  void split(std::vector<float>& out, int window, int gx, int q8_unit = 0) const {
    for (int t0 = 0; t0 < s_.count; t0 += window) {
      const int n = std::min(window, s_.count - t0);
      Args a = args(t0, n, out.data());
      std::vector<float> part(static_cast<size_t>(n) * s_.n_head * a.n_seg * record_floats(kDp), -7.0f);
      a.part = part.data();
      a.q8_unit = q8_unit;
      const size_t smem =
          split_smem<kDp, kBufs>() + (q8_unit != 0 ? kWarps * kBufs * q8_raw_bytes<kDp>() : 0);
      for (int by = 0; by < s_.n_kv_head * a.row_tiles; ++by) {
        for (int bx = 0; bx < gx; ++bx) {
          run_block(bx, by, gx, smem, [&](const Place& at, unsigned char* smem) {
            split_body<kCache, kDp, kBufs>(a, at, smem);
          });
        }
      }
      for (int t = 0; t < n; ++t) {
        for (int h = 0; h < s_.n_head; ++h) {
          // The combine with two O buffers where the split ran on one block a row tile, else with one.
          const auto combine = gx == 1 ? combine_body<kDp, true> : combine_body<kDp, false>;
          run_block(h, t, s_.n_head, combine_smem<kDp, true>(), [&](const Place& at, unsigned char* smem) {
            float v = 0.0f;
            combine(a, at, smem, v);
            if (at.tid < s_.head_dim) out_row(a.o, t, h)[at.tid] = v;
          });
        }
      }
    }
  }

  // Attention in double over the cache's values as stored (f16 or q8_0 decoded exactly).
  std::vector<float> exact() const {
    std::vector<float> out(row_floats() * static_cast<size_t>(s_.count));
    const int G = s_.n_head / s_.n_kv_head, D = s_.head_dim;
    auto value = [&](const std::vector<unsigned char>& c, int j, int i) {
      const unsigned char* col = c.data() + static_cast<size_t>(j) * col_bytes_;
      if (!s_.q8) return static_cast<double>(half_at(col, i));
      const unsigned char* b = col + (i / 32) * 34;
      uint16_t d;
      std::memcpy(&d, b, 2);
      return static_cast<double>(format::fp16_to_fp32(d)) * static_cast<int8_t>(b[2 + i % 32]);
    };
    for (int t = 0; t < s_.count; ++t) {
      for (int h = 0; h < s_.n_head; ++h) {
        const float* q = q_.data() + static_cast<size_t>(t) * row_floats() + static_cast<size_t>(h) * D;
        const int kvh = h / G, p = pos_[static_cast<size_t>(t)];
        const int lo = s_.window > 0 ? std::max(0, p - s_.window + 1) : 0;
        std::vector<double> w(static_cast<size_t>(p) + 1, 0.0);
        double mx = -INFINITY;
        for (int j = lo; j <= p; ++j) {
          double dot = 0;
          for (int i = 0; i < D; ++i) dot += static_cast<double>(q[i]) * value(k_, j, kvh * D + i);
          w[static_cast<size_t>(j)] = dot / std::sqrt(static_cast<double>(D));
          mx = std::max(mx, w[static_cast<size_t>(j)]);
        }
        const double sink = s_.sinks ? static_cast<double>(sinks_[static_cast<size_t>(h)]) : -INFINITY;
        mx = std::max(mx, sink);
        double sum = s_.sinks ? std::exp(sink - mx) : 0.0;
        for (int j = lo; j <= p; ++j) sum += (w[static_cast<size_t>(j)] = std::exp(w[static_cast<size_t>(j)] - mx));
        for (int i = 0; i < D; ++i) {
          double acc = 0;
          for (int j = lo; j <= p; ++j) acc += w[static_cast<size_t>(j)] * value(v_, j, kvh * D + i);
          out[static_cast<size_t>(t) * row_floats() + static_cast<size_t>(h) * D + static_cast<size_t>(i)] =
              static_cast<float>(acc / sum);
        }
      }
    }
    return out;
  }

 private:
  Shape s_;
  size_t col_bytes_ = 0;
  std::vector<unsigned char> k_, v_;
  std::vector<float> q_;
  std::vector<int32_t> pos_;
  std::vector<float> sinks_;
};

std::string first_difference(const std::vector<float>& a, const std::vector<float>& b, size_t row_floats) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      return "token " + std::to_string(i / row_floats) + ", value " + std::to_string(i % row_floats) + ": " +
             std::to_string(a[i]) + " vs " + std::to_string(b[i]);
    }
  }
  return "";
}

template <int kDp, Cache kCache>
void check_windows(const Shape& s) {
  SCOPED_TRACE("head_dim " + std::to_string(s.head_dim) + (s.q8 ? " q8_0" : " f16") + ", heads " +
               std::to_string(s.n_head) + "/" + std::to_string(s.n_kv_head) + ", n_ctx " + std::to_string(s.n_ctx) +
               ", positions " + std::to_string(s.first) + ".." + std::to_string(s.first + s.count - 1) +
               (s.window > 0 ? ", window " + std::to_string(s.window) : "") + (s.sinks ? ", sinks" : ""));
  const Case c(s);
  const size_t n = c.row_floats() * static_cast<size_t>(s.count);
  std::vector<float> prompt(n, -1.0f);
  c.tiles<kDp, kCache>(prompt, s.count);
  for (float x : prompt) ASSERT_TRUE(std::isfinite(x)) << "a row took in an unwritten column or was never written";
  EXPECT_EQ(test::nmse_mismatch("the prompt's rows against attention in double", c.exact(), prompt, 1e-5), "");
  for (int window : {37, 9}) {
    std::vector<float> out(n, -1.0f);
    c.tiles<kDp, kCache>(out, window);
    EXPECT_EQ(first_difference(prompt, out, c.row_floats()), "") << "tiles in windows of " << window;
  }
  {
    std::vector<float> out(n, -1.0f);
    c.tiles<kDp, kCache, 1>(out, s.count);  // one chunk buffer (devices with less shared memory)
    EXPECT_EQ(first_difference(prompt, out, c.row_floats()), "") << "tiles with one chunk buffer";
  }
  // The split kernel with two chunk buffers a warp (the next chunk's keys in flight) on one block a row tile, with
  // one buffer for both on two, and (f16 caches) with three on one and on three blocks: each must give the same
  // bytes.
  struct SplitForm {
    int gx, bufs;
  };
  for (int window : {1, 2, 3, 8}) {
    for (const SplitForm f : {SplitForm{1, 2}, SplitForm{2, 1}, SplitForm{1, 3}, SplitForm{3, 3}}) {
      std::vector<float> out(n, -1.0f);
      if (f.bufs == 2) {
        c.split<kDp, kCache, 2>(out, window, f.gx);
      } else if (f.bufs == 1) {
        c.split<kDp, kCache, 1>(out, window, f.gx);
      } else if constexpr (kCache == Cache::F16) {
        c.split<kDp, kCache, 3>(out, window, f.gx);
      } else {
        continue;  // three buffers are for f16 chunks copied asynchronously
      }
      EXPECT_EQ(first_difference(prompt, out, c.row_floats()), "")
          << "split windows of " << window << " tokens, " << f.gx << " block(s) a row tile, " << f.bufs
          << " chunk buffer(s)";
    }
  }
  // q8_0 chunks staged raw (copied in 8- or 4-byte pieces, converted in shared memory), where the head's run of
  // blocks allows it: the same bytes as the load-and-convert path, in both kernels and both buffer forms.
  const int unit = c.q8_unit();
  if (unit == 0) return;
  for (int window : {s.count, 7}) {
    std::vector<float> out(n, -1.0f);
    c.tiles<kDp, kCache, 2>(out, window, unit);
    EXPECT_EQ(first_difference(prompt, out, c.row_floats()), "") << "tiles, q8_0 staged raw in " << unit
                                                                   << "-byte pieces, windows of " << window;
  }
  {
    std::vector<float> out(n, -1.0f);
    c.tiles<kDp, kCache, 1>(out, s.count, unit);
    EXPECT_EQ(first_difference(prompt, out, c.row_floats()), "") << "tiles, q8_0 staged raw, one chunk buffer";
  }
  for (int window : {1, 3}) {
    for (int gx : {1, 2}) {
      std::vector<float> out(n, -1.0f);
      if (gx == 1) {
        c.split<kDp, kCache, 2>(out, window, gx, unit);
      } else {
        c.split<kDp, kCache, 1>(out, window, gx, unit);
      }
      EXPECT_EQ(first_difference(prompt, out, c.row_floats()), "")
          << "split, q8_0 staged raw, windows of " << window << " tokens, " << gx << " block(s) a row tile";
    }
  }
}

TEST(AttentionFlash, WindowsGiveThePromptsBytesF16) {
  // Segments of 128 keys (n_ctx 1024): positions 100..139 cross chunks 1..2 and segment 0..1.
  check_windows<32, Cache::F16>({false, 32, 4, 2, 1024, 100, 40});
}

TEST(AttentionFlash, WindowsGiveThePromptsBytesQ8AndPaddedHeads) {
  // head_dim 8 (stories260K) padded to 32, q8_0 caches, a group of 4, depth across three segments.
  check_windows<32, Cache::Q8_0>({true, 8, 8, 4, 512, 250, 24});
}

TEST(AttentionFlash, WindowsGiveThePromptsBytesWithFourValueLoads) {
  // head_dim 36: no 16-byte loads (36 is not a multiple of 8), pieces of 4 values, padded to 64.
  check_windows<64, Cache::F16>({false, 36, 2, 2, 700, 60, 20});
}

TEST(AttentionFlash, WindowsGiveThePromptsBytesHead128) {
  // qwen3's head size, a group of 8 (one 16-row tile holds two tokens), segments of 256 keys (n_ctx 70000).
  check_windows<128, Cache::F16>({false, 128, 8, 1, 70000, 250, 12});
}

TEST(AttentionFlash, DeepWindowsFoldManySegments) {
  // Positions near 17,000 in segments of 128 keys: 133 segments, so the combine folds two groups (128 and 5), the
  // second padded with empty folds to the eight it reads ahead.
  check_windows<32, Cache::F16>({false, 32, 2, 1, 32768, 16990, 9});
}

TEST(AttentionFlash, SlidingWindowsAndSinksPlugIn) {
  // gpt-oss's attention: a 16-key window (positions 100..139 cross a chunk and a 128-key segment boundary, so
  // the first chunks and segments are skipped for the later rows) and per-head sinks; then a 300-key window over
  // several segments with sinks at head size 128.
  check_windows<32, Cache::F16>({false, 32, 8, 2, 1024, 100, 40, 16, true});
  check_windows<128, Cache::Q8_0>({true, 128, 8, 2, 2048, 500, 8, 300, true});
}

TEST(AttentionFlash, RawQ8ChunksGiveThePromptsBytes) {
  // q8_0 caches staged raw: head size 64 (a key's run of 68 bytes: 4-byte pieces) across segments, and 128 (136
  // bytes: 8-byte pieces) with a group of 4.
  check_windows<64, Cache::Q8_0>({true, 64, 4, 2, 1024, 200, 12});
  check_windows<128, Cache::Q8_0>({true, 128, 8, 2, 1024, 120, 10});
}

TEST(AttentionFlash, SegmentKeysFollowTheCapacity) {
  EXPECT_EQ(segment_keys(4096), 128);
  EXPECT_EQ(segment_keys(65536), 128);
  EXPECT_EQ(segment_keys(65537), 256);
  EXPECT_EQ(segment_keys(262144), 512);
}

}  // namespace
}  // namespace strata::gpu::attention::flash
