// ROPE: rotates the pairs of each head of q or k by the angle of the token's position (docs/CANONICAL_ARITHMETIC.md
// section 6, rope_pair.cuh): inv_freq_p from the host's libm (rope_inv_freq, passed in the kernel's arguments);
// by default in float with a float-float angle (rope_sincos_f); with canonical_double in double rounded to float
// once, the same bits as the reference: theta = (pos * freq_scale) * inv_freq_p, sincos_d,
// (a, b) -> (a cos - b sin, a sin + b cos). Mode 0 pairs (2p, 2p + 1), mode 2 (neox) pairs (p, p + n_rot / 2);
// values from n_rot on are copied. YaRN (f[2..5]): the frequencies and scales of format::RopeAngles. Mode 40
// (interleaved M-RoPE, Qwen3-VL): neox pairs, each pair's position one of the token's four components (rope_pair.cuh,
// imrope_component; src1 [n_tok, 4] or [n_tok]). Mode 24 (2-D vision RoPE, backend 1.7, Qwen3-VL's projector): neox
// pairs, the first i[2] at the row component (1) with frequencies pow(base, -2k / (n_rot / 2)), the other i[3] at the
// column component (2) with their own index from 0 (rope_fill_vision_freqs); no freq_scale, YaRN or attn_factor;
// src1 [n_tok, 4]. One block per token and group of up to 8 heads; positions are read on the device.
// Rows and tokens are nb[1] and nb[2] apart in src0 and dst (views: a slice of each wider column).
#include <string>

#include "ops.hpp"
#include "rope_pair.cuh"
#include "strata/format/tensor_checks.hpp"

namespace strata::gpu {
namespace {

using format::GgmlType;

constexpr int kBlock = 64;
constexpr int kModeAdjacent = kRopeModeAdjacent, kModeNeox = kRopeModeNeox;
constexpr int kMaxPairs = kRopeMaxPairs;  // the table of inverse frequencies travels in the arguments (1 KiB)

struct RopeArgs {
  const char* x;
  char* dst;
  const int32_t* pos;
  uint64_t x_head, x_tok, d_head, d_tok;  // byte strides
  int64_t head_dim;
  int n_rot;
  bool neox;
  float scale;   // RopeAngles' pos_scale: freq_scale, or 1 with YaRN
  float mscale;  // YaRN's attn_factor on cos and sin (1 without)
  RopeFreqs freq;  // doubles for rope_heads_f64ref, hi/lo floats for rope_heads
  bool imrope;           // mode 40: pair k's position from component imrope_component(k, sections)
  RopeSections sections;
  int64_t pos_comp;      // modes 40, 24: int32s between src1's components (0: [n_tok], text positions)
  bool vision;           // mode 24: pair k's position from component vision_component(k, row_pairs)
  int row_pairs;         // mode 24: i[2]
};

// T is the arithmetic: float (rope_heads) or double (rope_heads_f64ref, canonical_double). A block takes up to
// kHeadsPerBlock heads of one token: a pair's angle depends on the token and the pair alone, so each thread finds
// its pairs' sin and cos once and turns them on every head of the block (a 2048-token prompt's q has 32 heads: one
// angle where there were 32; the same arithmetic, so the same bits).
constexpr int kHeadsPerBlock = 8;
template <class T>
__device__ __forceinline__ void rope_block(const RopeArgs& a, int n_head) {
  const int h0 = static_cast<int>(blockIdx.x) * kHeadsPerBlock;
  const int h_end = n_head - h0 < kHeadsPerBlock ? n_head : h0 + kHeadsPerBlock;
  const int64_t t = blockIdx.y;
  const auto head_in = [&](int h) {
    return reinterpret_cast<const float*>(a.x + static_cast<uint64_t>(h) * a.x_head + static_cast<uint64_t>(t) * a.x_tok);
  };
  const auto head_out = [&](int h) {
    return reinterpret_cast<float*>(a.dst + static_cast<uint64_t>(h) * a.d_head + static_cast<uint64_t>(t) * a.d_tok);
  };
  const int32_t pos0 = a.pos[t];
  const int half = a.n_rot / 2;
  for (int k = static_cast<int>(threadIdx.x); k < half; k += kBlock) {
    int ia, ib;
    rope_pair_index(k, a.n_rot, a.neox, ia, ib);
    const int32_t pos = a.imrope   ? imrope_position(a.pos, t, a.pos_comp, imrope_component(k, a.sections))
                        : a.vision ? imrope_position(a.pos, t, a.pos_comp, vision_component(k, a.row_pairs))
                                   : pos0;
    // In place (dst == src0) is safe: this thread alone reads and writes ia and ib of each head.
    if constexpr (sizeof(T) == sizeof(double)) {
      for (int h = h0; h < h_end; ++h) {
        const float* x = head_in(h);
        float* y = head_out(h);
        rope_rotate(x[ia], x[ib], static_cast<double>(pos), static_cast<double>(a.scale), a.freq.d[k], y[ia], y[ib],
                    static_cast<double>(a.mscale));
      }
    } else {
      float s, c;
      rope_sincos_f(pos, a.scale, a.freq.f.hi[k], a.freq.f.lo[k], s, c);
      rope_mscale_f(a.mscale, s, c);
      for (int h = h0; h < h_end; ++h) {
        const float* x = head_in(h);
        float* y = head_out(h);
        rope_rotate_f(x[ia], x[ib], s, c, y[ia], y[ib]);
      }
    }
  }
  for (int h = h0; h < h_end; ++h) {
    const float* x = head_in(h);
    float* y = head_out(h);
    for (int64_t i = a.n_rot + threadIdx.x; i < a.head_dim; i += kBlock) y[i] = x[i];
  }
}

__global__ void rope_heads(RopeArgs a, int n_head) { rope_block<float>(a, n_head); }
__global__ void rope_heads_f64ref(RopeArgs a, int n_head) { rope_block<double>(a, n_head); }

}  // namespace

Check check_rope(const strata_op& op) {
  const strata_tensor &x = op.src[0], &pos = op.src[1], &d = op.dst;
  // The kernel addresses head h of token t at h * nb[1] + t * nb[2] in src0 and dst: any view of whole floats.
  if (auto e = check_strided_rows(x, "src0", GgmlType::F32)) return e;
  if (auto e = format::check_rows(pos, "src1 (positions)", GgmlType::I32)) return e;
  if (auto e = check_strided_rows(d, "dst", GgmlType::F32)) return e;
  if (x.ne[3] != 1 || d.ne[0] != x.ne[0] || d.ne[1] != x.ne[1] || d.ne[2] != x.ne[2] || d.ne[3] != 1) {
    return std::string("dst must have src0's shape [head_dim, n_head, n_tok]");
  }
  const int mode = op.i[0], n_rot = op.i[1];
  if (mode != kModeAdjacent && mode != kModeNeox && mode != kRopeModeImrope && mode != kRopeModeVision) {
    return "i[0] (mode) is " + std::to_string(mode) + " (known: 0, 2, 24, 40)";
  }
  if (mode == kRopeModeImrope) {
    if (op.i[2] < 0 || op.i[3] < 0 || op.i[4] < 0 || op.i[5] < 0 ||
        static_cast<int64_t>(op.i[2]) + op.i[3] + op.i[4] + op.i[5] <= 0 ||
        static_cast<int64_t>(op.i[2]) + op.i[3] + op.i[4] + op.i[5] > INT32_MAX / 3) {
      return std::string("i[2..5] (M-RoPE sections) must be non-negative with a positive sum");
    }
    if ((pos.ne[1] != 1 && pos.ne[1] != 4) || pos.ne[2] != 1 || pos.ne[3] != 1 || pos.ne[0] != x.ne[2]) {
      return "src1 (positions) must be [n_tok] or [n_tok, 4] (n_tok = " + std::to_string(x.ne[2]) + ")";
    }
  } else if (mode == kRopeModeVision) {
    if (pos.ne[1] != 4 || pos.ne[2] != 1 || pos.ne[3] != 1 || pos.ne[0] != x.ne[2]) {
      return "src1 (positions) must be [n_tok, 4] (t, row, column, e; n_tok = " + std::to_string(x.ne[2]) + ")";
    }
  } else if (format::row_count(pos) != 1 || pos.ne[0] != x.ne[2]) {
    return "src1 (positions) must hold one position per token (" + std::to_string(x.ne[2]) + ")";
  }
  if (x.ne[1] > 65535 || x.ne[2] > 65535) return std::string("src0 has more than 65535 heads or tokens");
  if (n_rot <= 0 || n_rot % 2 != 0 || n_rot > x.ne[0]) {
    return "i[1] (n_rot) " + std::to_string(n_rot) + " must be even and within head_dim " + std::to_string(x.ne[0]);
  }
  if (n_rot > 2 * kMaxPairs) return "i[1] (n_rot) " + std::to_string(n_rot) + " is above " + std::to_string(2 * kMaxPairs);
  if (mode == kRopeModeVision &&
      (op.i[2] < 0 || op.i[3] < 0 || static_cast<int64_t>(op.i[2]) + op.i[3] != n_rot / 2)) {
    return "i[2] + i[3] (row and column pairs, each non-negative) must be n_rot / 2 = " + std::to_string(n_rot / 2);
  }
  return std::nullopt;
}

void run_rope(Context& ctx, const strata_op& op) {
  const strata_tensor &x = op.src[0], &pos = op.src[1], &d = op.dst;
  RopeArgs a{};
  a.x = static_cast<const char*>(x.data);
  a.dst = static_cast<char*>(d.data);
  a.pos = static_cast<const int32_t*>(pos.data);
  a.x_head = x.nb[1];
  a.x_tok = x.nb[2];
  a.d_head = d.nb[1];
  a.d_tok = d.nb[2];
  a.head_dim = x.ne[0];
  a.n_rot = op.i[1];
  a.neox = op.i[0] == kModeNeox || op.i[0] == kRopeModeImrope || op.i[0] == kRopeModeVision;
  a.imrope = op.i[0] == kRopeModeImrope;
  a.vision = op.i[0] == kRopeModeVision;
  if (a.imrope) {
    a.sections = RopeSections{{op.i[2], op.i[3], op.i[4], op.i[5]}, op.i[2] + op.i[3] + op.i[4] + op.i[5]};
    a.pos_comp = pos.ne[1] == 4 ? static_cast<int64_t>(pos.nb[1] / sizeof(int32_t)) : 0;
  }
  const bool f64 = ctx.options().canonical_double;
  if (a.vision) {
    a.row_pairs = op.i[2];
    a.pos_comp = static_cast<int64_t>(pos.nb[1] / sizeof(int32_t));
    a.scale = 1.0f;
    a.mscale = 1.0f;
    rope_fill_vision_freqs(a.freq, op.f[0], a.row_pairs, a.n_rot, f64);
  } else {
    const RopeScaling scaling = rope_scaling(op.f);
    a.scale = scaling.pos_scale;
    a.mscale = scaling.mscale;
    rope_fill_freqs(a.freq, op.f, a.n_rot, f64);
  }
  const int n_head = static_cast<int>(x.ne[1]);
  const dim3 grid(static_cast<unsigned>((n_head + kHeadsPerBlock - 1) / kHeadsPerBlock), static_cast<unsigned>(x.ne[2]));
  (f64 ? rope_heads_f64ref : rope_heads)<<<grid, kBlock, 0, ctx.stream()>>>(a, n_head);
  check_launch("ROPE");
}

}  // namespace strata::gpu
