#include <gtest/gtest.h>

#include "strata/tensor_role.hpp"

using strata::TensorPart;

TEST(TensorRole, ClassifiesLlamaCppNames) {
  struct Case {
    const char* name;
    TensorPart part;
    int layer;  // -1: none
  } cases[] = {
      {"token_embd.weight", TensorPart::Embeddings, -1},
      {"output.weight", TensorPart::Head, -1},
      {"output_norm.weight", TensorPart::Norm, -1},
      {"blk.0.attn_q.weight", TensorPart::Attention, 0},
      {"blk.12.attn_k_norm.weight", TensorPart::Norm, 12},
      {"blk.47.ffn_gate_inp.weight", TensorPart::Router, 47},
      {"blk.3.exp_probs_b.bias", TensorPart::Router, 3},
      {"blk.3.ffn_down_exps.weight", TensorPart::RoutedExperts, 3},
      {"blk.3.ffn_gate_up_exps.weight", TensorPart::RoutedExperts, 3},
      {"blk.3.ffn_up_exps.bias", TensorPart::Router, 3},  // gpt-oss: kept with the dense weights
      {"blk.3.ffn_up_shexp.weight", TensorPart::SharedExperts, 3},
      {"blk.3.ffn_gate_inp_shexp.weight", TensorPart::SharedExperts, 3},
      {"blk.1.ffn_gate.weight", TensorPart::DenseFfn, 1},
      {"blk.1.attn_kv_a_mqa.weight", TensorPart::Attention, 1},
      {"blk.1.attn_sinks.weight", TensorPart::Attention, 1},
      {"rope_freqs.weight", TensorPart::Other, -1},
  };
  for (const auto& c : cases) {
    const auto r = strata::classify_tensor(c.name);
    EXPECT_EQ(r.part, c.part) << c.name;
    EXPECT_EQ(r.layer.value_or(-1), c.layer) << c.name;
  }
}
