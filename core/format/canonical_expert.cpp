// canonical_expert_row: section 3 of docs/CANONICAL_ARITHMETIC.md, one (token, expert) pair.
#include <string>
#include <vector>

#include "strata/error.hpp"
#include "strata/format/canonical.hpp"
#include "strata/format/quantize_activation.hpp"

namespace strata::format {
namespace {

// An input row as a matrix of either kind reads it: floats for float weights, Q8_1 blocks for quantized ones.
struct ActivationRow {
  const float* x;
  std::vector<block_q8_1> q;  // filled only when a quantized matrix reads the row
};

void check_matrix(const char* name, GgmlType type, int64_t row_len) {
  if (is_float_weight(type)) return;
  if (!has_canonical_dot(type)) {
    throw Error(std::string("canonical_expert_row: ") + name + " has type " + std::string(traits(type).name) +
                ", which has no canonical dot product");
  }
  const int64_t block = canonical_layout(type).block_elems;
  if (row_len % block != 0) {
    throw Error(std::string("canonical_expert_row: ") + name + " rows of " + std::to_string(row_len) +
                " values are not whole " + std::string(traits(type).name) + " blocks (" + std::to_string(block) +
                " values)");
  }
}

void quantize_if_needed(ActivationRow& row, int64_t n, GgmlType a, GgmlType b) {
  if (is_float_weight(a) && is_float_weight(b)) return;
  row.q.resize(static_cast<size_t>(n / QK8_1));
  quantize_row_q8_1(row.x, row.q.data(), n);
}

float row_dot(GgmlType type, const void* matrix, int64_t r, const ActivationRow& in, int64_t n) {
  const uint64_t stride = row_bytes(type, static_cast<uint64_t>(n));
  const void* wrow = static_cast<const unsigned char*>(matrix) + static_cast<uint64_t>(r) * stride;
  if (is_float_weight(type)) return canonical_dot_f(type, wrow, in.x, n);
  return canonical_dot(type, wrow, in.q.data(), n);
}

}  // namespace

void canonical_expert_row(const ExpertMatrices& e, const float* x, float weight, float* out) {
  if (e.n_embd <= 0 || e.n_ff <= 0) {
    throw Error("canonical_expert_row: n_embd " + std::to_string(e.n_embd) + " and n_ff " + std::to_string(e.n_ff) +
                " must be positive");
  }
  check_matrix("gate", e.gate_type, e.n_embd);
  check_matrix("up", e.up_type, e.n_embd);
  check_matrix("down", e.down_type, e.n_ff);

  ActivationRow in{x, {}};
  quantize_if_needed(in, e.n_embd, e.gate_type, e.up_type);
  std::vector<float> h(static_cast<size_t>(e.n_ff));
  if (e.activation > 1) {
    throw Error("canonical_expert_row: activation " + std::to_string(e.activation) +
                " is not 0 (SwiGLU) or 1 (SwiGLU-OAI)");
  }
  for (int64_t r = 0; r < e.n_ff; ++r) {
    float g = row_dot(e.gate_type, e.gate, r, in, e.n_embd);
    float u = row_dot(e.up_type, e.up, r, in, e.n_embd);
    if (e.gate_bias != nullptr) g = g + e.gate_bias[r];
    if (e.up_bias != nullptr) u = u + e.up_bias[r];
    h[static_cast<size_t>(r)] = e.activation == 1 ? swiglu_oai_c(g, u, e.alpha, e.limit) : swiglu_c(g, u);
  }
  ActivationRow hidden{h.data(), {}};
  quantize_if_needed(hidden, e.n_ff, e.down_type, e.down_type);
  for (int64_t r = 0; r < e.n_embd; ++r) {
    float y = row_dot(e.down_type, e.down, r, hidden, e.n_ff);
    if (e.down_bias != nullptr) y = y + e.down_bias[r];
    out[r] = weight * y;
  }
}

}  // namespace strata::format
