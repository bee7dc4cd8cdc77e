// ROPE: rotary position embedding of rows of head_dim (src0 [head_dim, n_head, n_tok]) at positions src1;
// mode 0 rotates adjacent pairs (x[2i], x[2i+1]), mode 2 (neox) the halves (x[i], x[i + n_rot/2]); values past
// n_rot are copied. In double, rounded to float once (docs/CANONICAL_ARITHMETIC.md section 6): the angle of
// pair i is (pos * freq_scale) * rope_inv_freq(i), its sine and cosine sincos_d's, so the bits equal every
// device's. Backend 1.6's YaRN (f[2] ext_factor, f[3] attn_factor, f[4..5] the correction range): the angle is
// (pos * pos_scale) * freq_i and sine and cosine are multiplied by mscale, all from format::RopeAngles (without
// YaRN pos_scale is freq_scale and freq_i rope_inv_freq(i), the arithmetic above).
// Mode 24 (backend 1.7), the vision encoder's 2-D RoPE: neox pairs, n_rot/2 = i[2] + i[3]; pair i < i[2] turns by
// the token's row (component 1 of src1 [n_tok, 4], component-major), the others by its column (component 2), with
// the index within the section: the angle is pos * rope_inv_freq(index) over n_rot/2 pairs, no scaling or YaRN
// (f[1..5] ignored); the same double arithmetic otherwise, so the bits are the reference's.
#include <vector>

#include "ops.hpp"
#include "strata/format/canonical_double.hpp"
#include "tensor_view.hpp"

namespace strata::cpu {
namespace {

constexpr int kModeAdjacent = 0, kModeNeox = 2, kModeVision = 24, kModeImrope = 40;

// Interleaved M-RoPE (mode 40): which position component (0 t, 1 row, 2 column, 3 e) turns pair `sector`.
int imrope_component(int sector, const int (&s)[4]) {
  if (sector % 3 == 1 && sector < 3 * s[1]) return 1;
  if (sector % 3 == 2 && sector < 3 * s[2]) return 2;
  if (sector % 3 == 0 && sector < 3 * s[0]) return 0;
  return 3;
}

}  // namespace

Check check_rope(const strata_op& op) {
  const strata_tensor &x = op.src[0], &pos = op.src[1], &d = op.dst;
  if (auto e = check_rows(x, "src0", format::GgmlType::F32)) return e;
  if (auto e = check_rows(pos, "src1 (positions)", format::GgmlType::I32)) return e;
  if (auto e = check_rows(d, "dst", format::GgmlType::F32)) return e;
  if (x.ne[3] != 1 || d.ne[0] != x.ne[0] || d.ne[1] != x.ne[1] || d.ne[2] != x.ne[2] || d.ne[3] != 1) {
    return std::string("dst shape differs from src0 [head_dim, n_head, n_tok]");
  }
  const int mode = op.i[0], n_rot = op.i[1];
  if (mode != kModeAdjacent && mode != kModeNeox && mode != kModeVision && mode != kModeImrope) {
    return "rope mode " + std::to_string(mode) + " (known: 0, 2, 24, 40)";
  }
  if (mode == kModeImrope) {
    if (op.i[2] < 0 || op.i[3] < 0 || op.i[4] < 0 || op.i[5] < 0 || op.i[2] + op.i[3] + op.i[4] + op.i[5] <= 0) {
      return std::string("mode 40's sections i[2..5] must be non-negative with a positive sum");
    }
    if (pos.ne[0] != x.ne[2] || (pos.ne[1] != 1 && pos.ne[1] != 4) || pos.ne[2] != 1 || pos.ne[3] != 1) {
      return std::string("src1 must hold one position or four components per token ([n_tok] or [n_tok, 4]) for mode 40");
    }
  } else if (mode == kModeVision) {
    if (pos.ne[0] != x.ne[2] || pos.ne[1] != 4 || pos.ne[2] != 1 || pos.ne[3] != 1) {
      return std::string("src1 must hold four position components per token ([n_tok, 4]) for mode 24");
    }
  } else if (row_count(pos) != 1 || pos.ne[0] != x.ne[2]) {
    return std::string("src1 must hold one position per token");
  }
  if (n_rot <= 0 || n_rot % 2 != 0 || n_rot > x.ne[0]) {
    return "n_rot " + std::to_string(n_rot) + " must be even and within head_dim " + std::to_string(x.ne[0]);
  }
  if (mode == kModeVision && (op.i[2] < 0 || op.i[3] < 0 || op.i[2] + op.i[3] != n_rot / 2)) {
    return "mode 24's sections i[2] " + std::to_string(op.i[2]) + " and i[3] " + std::to_string(op.i[3]) +
           " must be non-negative and sum to n_rot / 2 = " + std::to_string(n_rot / 2);
  }
  return std::nullopt;
}

void run_rope(Context& ctx, const strata_op& op) {
  const strata_tensor &x = op.src[0], &pos = op.src[1], &d = op.dst;
  const int64_t head_dim = x.ne[0], n_head = x.ne[1], n_tok = x.ne[2];
  const int mode = op.i[0], n_rot = op.i[1], half = n_rot / 2;
  const double base = static_cast<double>(op.f[0]);
  const format::RopeAngles angles(op.f);
  const auto* positions = static_cast<const int32_t*>(pos.data);
  const bool vision = mode == kModeVision, imrope = mode == kModeImrope;
  const int sections[4] = {op.i[2], op.i[3], op.i[4], op.i[5]};
  const int section_sum = sections[0] + sections[1] + sections[2] + sections[3];
  const bool four = pos.ne[1] == 4;
  const int row_pairs = op.i[2];  // mode 24: pairs [0, row_pairs) by the row, the rest by the column
  // Pair i's frequency; mode 24: pair i's index within its section, over n_rot/2 pairs.
  std::vector<double> freq(static_cast<size_t>(half));
  for (int i = 0; i < half; ++i) {
    freq[static_cast<size_t>(i)] = vision ? format::rope_inv_freq(base, i < row_pairs ? i : i - row_pairs, half)
                                          : angles.freq(base, i, n_rot);
  }
  for_items(ctx, n_tok, head_dim * n_head * 2, [&](int64_t b, int64_t e) {
    std::vector<double> cos_t(static_cast<size_t>(half)), sin_t(static_cast<size_t>(half));
    for (int64_t t = b; t < e; ++t) {
      if (vision) {
        const double row = static_cast<double>(row_ptr<const int32_t>(pos, 1)[t]);
        const double col = static_cast<double>(row_ptr<const int32_t>(pos, 2)[t]);
        for (int i = 0; i < half; ++i) {
          format::sincos_d((i < row_pairs ? row : col) * freq[static_cast<size_t>(i)], &sin_t[static_cast<size_t>(i)],
                           &cos_t[static_cast<size_t>(i)]);
        }
      } else if (imrope) {
        // The token's components (t, row, column, e); a text token's [n_tok] position is (p, p, p, 0).
        double comp[4];
        for (int c = 0; c < 4; ++c) {
          comp[c] = four ? static_cast<double>(row_ptr<const int32_t>(pos, c)[t])
                         : c == 3 ? 0.0 : static_cast<double>(positions[t]);
        }
        for (int i = 0; i < half; ++i) {
          double& sn = sin_t[static_cast<size_t>(i)];
          double& cs = cos_t[static_cast<size_t>(i)];
          const double p = comp[imrope_component(i % section_sum, sections)] * angles.pos_scale;
          format::sincos_d(p * freq[static_cast<size_t>(i)], &sn, &cs);
          sn = sn * angles.mscale;
          cs = cs * angles.mscale;
        }
      } else {
        const double p = static_cast<double>(positions[t]) * angles.pos_scale;
        for (int i = 0; i < half; ++i) {
          double& s = sin_t[static_cast<size_t>(i)];
          double& c = cos_t[static_cast<size_t>(i)];
          format::sincos_d(p * freq[static_cast<size_t>(i)], &s, &c);
          // Times 1 when attn_factor is 0 or 1: exact, so plain rope keeps its bits.
          s = s * angles.mscale;
          c = c * angles.mscale;
        }
      }
      for (int64_t h = 0; h < n_head; ++h) {
        const float* in = row_ptr<const float>(x, t * n_head + h);
        float* out = row_ptr<float>(d, t * n_head + h);
        for (int i = 0; i < half; ++i) {
          const int64_t i0 = mode == kModeAdjacent ? 2 * i : i;
          const int64_t i1 = mode == kModeAdjacent ? 2 * i + 1 : i + half;
          const double c = cos_t[static_cast<size_t>(i)], s = sin_t[static_cast<size_t>(i)];
          const double x0 = static_cast<double>(in[i0]), x1 = static_cast<double>(in[i1]);
          out[i0] = static_cast<float>(x0 * c - x1 * s);
          out[i1] = static_cast<float>(x0 * s + x1 * c);
        }
        for (int64_t i = n_rot; i < head_dim; ++i) out[i] = in[i];
      }
    }
  });
}

}  // namespace strata::cpu
