// ROPE: dst f32 [head_dim, n_head, n_tok] = src0 f32 of that shape rotated at the positions src1 i32 [n_tok].
// i[0] mode: 0 rotates adjacent pairs (2p, 2p+1) (llama), 2 rotates the halves' pairs (p, p + n_rot/2) (neox,
// qwen3moe); i[1] n_rot (even, at most head_dim); f[0] freq_base; f[1] freq_scale. For pair p < n_rot/2 of a
// token at position pos (docs/CANONICAL_ARITHMETIC.md section 6):
//   inv_freq_p = pow(freq_base, -2p / n_rot)    (double, the host's libm: every plugin computes it on the host)
//   theta = (pos * freq_scale) * inv_freq_p      (double; pos * freq_scale is exact)
//   (a, b) -> (a cos theta - b sin theta, a sin theta + b cos theta)   (double, sincos_d, rounded to float)
// YaRN (f[2] ext_factor != 0; f[3] attn_factor, f[4..5] the correction range lo, hi): theta = pos * freq_p with
// freq_p = inv_freq_p * (freq_scale * (1 - mix) + mix), mix = ext_factor * (1 - clamp((p - lo) / max(0.001, hi -
// lo), 0, 1)) (format::RopeAngles, double); cos and sin are multiplied by attn_factor (f[3], 0 reads as 1) before
// the rotation. Values at n_rot and beyond are copied unchanged.
// Mode 40, interleaved M-RoPE (Qwen3-VL): neox pairs, and pair k's position is one of four components (t, row,
// column, e) of the token, src1 [n_tok, 4] component-major (or [n_tok]: (p, p, p, 0)): row when k % 3 == 1 and
// k < 3 s1, column when k % 3 == 2 and k < 3 s2, t when k % 3 == 0 and k < 3 s0, e otherwise (s = i[2..5], the
// sections; pairs are counted modulo their sum).
// Mode 24 (backend 1.7), 2-D vision RoPE (Qwen3-VL's projector): neox pairs (k, k + n_rot/2), n_rot/2 = i[2] + i[3];
// pair k < i[2] turns by the row component with index k, the others by the column component with index k - i[2];
// theta = pos * inv_freq(index) over n_rot/2 (pow(freq_base, -2 index / (n_rot/2))), no scaling or YaRN.
#include <cmath>
#include <string>
#include <vector>

#include "ops.hpp"
#include "rows.hpp"
#include "strata/format/canonical_double.hpp"

namespace strata::reference {
namespace {

constexpr int kModeImrope = 40;  // ggml's GGML_ROPE_TYPE_IMROPE
constexpr int kModeVision = 24;  // ggml's GGML_ROPE_TYPE_VISION

// Which position component (0 t, 1 row, 2 column, 3 e) drives pair `sector` under interleaved M-RoPE.
int imrope_component(int sector, const int (&s)[4]) {
  if (sector % 3 == 1 && sector < 3 * s[1]) return 1;
  if (sector % 3 == 2 && sector < 3 * s[2]) return 2;
  if (sector % 3 == 0 && sector < 3 * s[0]) return 0;
  return 3;
}

}  // namespace

void rope(const strata_op& op) {
  const char* name = "ROPE";
  const strata_tensor& x = op.src[0];
  const strata_tensor& pos = op.src[1];
  const strata_tensor& dst = op.dst;
  const int mode = op.i[0];
  const int n_rot = op.i[1];
  require_type(name, "src0", x, GgmlType::F32);
  require_contiguous_rows(name, "src0", x);
  require_type(name, "src1 (positions)", pos, GgmlType::I32);
  require_type(name, "dst", dst, GgmlType::F32);
  require(pos.ne[0] == x.ne[2], name, "src1 (positions)", pos,
          "one position per token (" + std::to_string(x.ne[2]) + ")");
  require(dst.ne[0] == x.ne[0] && dst.ne[1] == x.ne[1] && dst.ne[2] == x.ne[2], name, "dst", dst, "src0's shape");
  require(mode == 0 || mode == 2 || mode == kModeImrope || mode == kModeVision, name, "src0", x,
          "i[0] (mode) 0, 2, 24 or 40, not " + std::to_string(mode));
  const int sections[4] = {op.i[2], op.i[3], op.i[4], op.i[5]};
  const int section_sum = sections[0] + sections[1] + sections[2] + sections[3];
  if (mode == kModeImrope) {
    require(sections[0] >= 0 && sections[1] >= 0 && sections[2] >= 0 && sections[3] >= 0 && section_sum > 0, name,
            "src0", x, "i[2..5] (M-RoPE sections) non-negative with a positive sum");
    require(pos.ne[1] == 1 || pos.ne[1] == 4, name, "src1 (positions)", pos, "[n_tok] or [n_tok, 4]");
  }
  require(n_rot > 0 && n_rot % 2 == 0 && n_rot <= x.ne[0], name, "src0", x,
          "i[1] (n_rot) even and at most head_dim, not " + std::to_string(n_rot));
  if (mode == kModeVision) {
    require(sections[0] >= 0 && sections[1] >= 0 && sections[0] + sections[1] == n_rot / 2, name, "src0", x,
            "i[2] + i[3] (row and column pairs) = n_rot / 2");
    require(pos.ne[1] == 4, name, "src1 (positions)", pos, "[n_tok, 4] (t, row, column, e)");
  }
  const double base = static_cast<double>(op.f[0]);
  const format::RopeAngles angles(op.f);
  const int half = n_rot / 2;
  for (int64_t t = 0; t < x.ne[2]; ++t) {
    // The token's position components (t, row, column, e); plain modes use the first.
    double comp[4];
    const bool multi = mode == kModeImrope || mode == kModeVision;
    for (int c = 0; c < 4; ++c) {
      comp[c] = multi && pos.ne[1] == 4 ? static_cast<double>(read_i32(pos, t, c))
                : multi && c == 3       ? 0.0
                                        : static_cast<double>(read_i32(pos, t));
    }
    for (int64_t h = 0; h < x.ne[1]; ++h) {
      std::vector<float> row = read_row(x, h, t);
      for (int k = 0; k < half; ++k) {
        double theta = 0.0;
        if (mode == kModeVision) {
          const bool row_pair = k < sections[0];
          const int index = row_pair ? k : k - sections[0];
          theta = comp[row_pair ? 1 : 2] * format::rope_inv_freq(base, index, half);
        } else {
          const double p = mode == kModeImrope ? comp[imrope_component(k % section_sum, sections)] : comp[0];
          theta = p * angles.pos_scale * angles.freq(base, k, n_rot);
        }
        double sin_t = 0.0, cos_t = 0.0;
        format::sincos_d(theta, &sin_t, &cos_t);
        if (mode != kModeVision) {
          sin_t = sin_t * angles.mscale;
          cos_t = cos_t * angles.mscale;
        }
        const size_t ia = mode == 0 ? static_cast<size_t>(2 * k) : static_cast<size_t>(k);
        const size_t ib = mode == 0 ? static_cast<size_t>(2 * k + 1) : static_cast<size_t>(k + half);  // neox, M-RoPE
        const double a = static_cast<double>(row[ia]);
        const double b = static_cast<double>(row[ib]);
        row[ia] = static_cast<float>(a * cos_t - b * sin_t);
        row[ib] = static_cast<float>(a * sin_t + b * cos_t);
      }
      write_row(dst, row.data(), h, t);
    }
  }
}

}  // namespace strata::reference
