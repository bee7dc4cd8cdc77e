#include <gtest/gtest.h>

#include "test_temp_dir.hpp"
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "strata/arch.hpp"
#include "strata/gguf.hpp"
#include "strata/hparams.hpp"

namespace {

namespace fs = std::filesystem;
using strata::ArchIssue;
using strata::HParams;
using strata::TensorSpec;
using strata::gguf::GgmlType;
using strata::gguf::Model;
using strata::gguf::Writer;

std::string temp_path(const std::string& name) { return strata::testing_support::test_temp_path("arch", name); }

void small_qwen3moe_keys(Writer& w) {
  w.set_string("general.architecture", "qwen3moe");
  w.set_u32("qwen3moe.block_count", 2);
  w.set_u32("qwen3moe.context_length", 512);
  w.set_u32("qwen3moe.embedding_length", 64);
  w.set_u32("qwen3moe.attention.head_count", 4);
  w.set_u32("qwen3moe.attention.head_count_kv", 2);
  w.set_u32("qwen3moe.attention.key_length", 32);
  w.set_u32("qwen3moe.attention.value_length", 32);
  w.set_f32("qwen3moe.attention.layer_norm_rms_epsilon", 1e-6f);
  w.set_u32("qwen3moe.expert_count", 4);
  w.set_u32("qwen3moe.expert_used_count", 2);
  w.set_u32("qwen3moe.expert_feed_forward_length", 32);
  w.set_u32("qwen3moe.vocab_size", 100);
}

HParams hparams_of(const std::function<void(Writer&)>& keys) {
  Writer w;
  keys(w);
  const auto f = strata::gguf::File::from_memory(w.to_bytes({}), "keys.gguf");
  return strata::read_hparams(f.metadata());
}

// Writes an F32 model with the architecture's required tensors, after `edit` has changed the list.
Model write_model(const std::string& name, const std::function<void(Writer&)>& keys,
                  const std::function<void(std::vector<TensorSpec>&)>& edit) {
  std::vector<TensorSpec> specs = strata::expected_tensors(hparams_of(keys));
  std::erase_if(specs, [](const TensorSpec& s) { return !s.required; });
  edit(specs);
  Writer w;
  keys(w);
  for (const TensorSpec& s : specs) w.add_tensor(s.name, GgmlType::F32, s.ne);
  const std::string path = temp_path(name);
  w.open(path);
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::vector<uint8_t> zeros(w.tensor_bytes(i));
    w.write_tensor(i, zeros);
  }
  w.close();
  return Model::open(path);
}

std::vector<std::string> messages(const std::vector<ArchIssue>& issues) {
  std::vector<std::string> out;
  for (const auto& i : issues) out.push_back(i.message);
  return out;
}

const TensorSpec* find_spec(const std::vector<TensorSpec>& specs, const std::string& name) {
  for (const auto& s : specs) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

TEST(Arch, Stories260kHasEveryLlamaTensor) {
  const Model model = Model::open(std::string(STRATA_SOURCE_DIR) + "/models/stories260K.gguf");
  const HParams hp = strata::read_hparams(model.metadata());
  EXPECT_TRUE(strata::check_tensors(hp, model).empty());
  EXPECT_NO_THROW(strata::require_valid(hp, model));
  const auto specs = strata::expected_tensors(hp);
  EXPECT_EQ(find_spec(specs, "blk.4.ffn_down.weight")->ne, (std::vector<uint64_t>{172, 64}));
  EXPECT_EQ(find_spec(specs, "blk.0.attn_k.weight")->ne, (std::vector<uint64_t>{64, 32}));
}

TEST(Arch, CompleteQwen3MoePasses) {
  const Model model = write_model("complete.gguf", small_qwen3moe_keys, [](auto&) {});
  EXPECT_EQ(model.tensors().size(), 2u + 2u * 12u);  // the head is tied to token_embd
  const HParams hp = strata::read_hparams(model.metadata());
  EXPECT_TRUE(strata::check_tensors(hp, model).empty());
  EXPECT_NO_THROW(strata::require_valid(hp, model));
}

TEST(Arch, MissingExpertTensorIsNamed) {
  const Model model = write_model("missing.gguf", small_qwen3moe_keys, [](std::vector<TensorSpec>& specs) {
    std::erase_if(specs, [](const TensorSpec& s) { return s.name == "blk.1.ffn_down_exps.weight"; });
  });
  const HParams hp = strata::read_hparams(model.metadata());
  const auto issues = strata::check_tensors(hp, model);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].kind, ArchIssue::Kind::Missing);
  EXPECT_EQ(issues[0].tensor, "blk.1.ffn_down_exps.weight");
  EXPECT_EQ(issues[0].message, "blk.1.ffn_down_exps.weight: missing; a qwen3moe model of this shape needs [32, 64, 4]");
  try {
    strata::require_valid(hp, model);
    FAIL() << "require_valid accepted a model without blk.1.ffn_down_exps.weight";
  } catch (const strata::ArchError& e) {
    EXPECT_NE(std::string(e.what()).find("1 tensor missing or misshapen for qwen3moe"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("blk.1.ffn_down_exps.weight: missing"), std::string::npos);
  }
}

TEST(Arch, MisshapenTensorsAreAllListed) {
  const Model model = write_model("misshapen.gguf", small_qwen3moe_keys, [](std::vector<TensorSpec>& specs) {
    for (auto& s : specs) {
      if (s.name == "blk.0.ffn_down_exps.weight") s.ne = {32, 64, 2};
      if (s.name == "blk.1.attn_q_norm.weight") s.ne = {64};
    }
  });
  const HParams hp = strata::read_hparams(model.metadata());
  EXPECT_EQ(messages(strata::check_tensors(hp, model)),
            (std::vector<std::string>{
                "blk.0.ffn_down_exps.weight: shape [32, 64, 4] expected, file has [32, 64, 2]",
                "blk.1.attn_q_norm.weight: shape [32] expected, file has [64]",
            }));
  try {
    strata::require_valid(hp, model);
    FAIL() << "require_valid accepted misshapen tensors";
  } catch (const strata::ArchError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("2 tensors missing or misshapen"), std::string::npos);
    EXPECT_NE(what.find("\n  blk.0.ffn_down_exps.weight: shape [32, 64, 4] expected, file has [32, 64, 2]"),
              std::string::npos);
    EXPECT_NE(what.find("\n  blk.1.attn_q_norm.weight: shape [32] expected"), std::string::npos);
  }
}

TEST(Arch, UnexpectedTensorsAreReportedButDoNotFailLoading) {
  const Model model = write_model("extra.gguf", small_qwen3moe_keys, [](std::vector<TensorSpec>& specs) {
    specs.push_back({"blk.0.ffn_gate_inp_shexp.weight", {64}, true, {}});
  });
  const HParams hp = strata::read_hparams(model.metadata());
  const auto issues = strata::check_tensors(hp, model);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].kind, ArchIssue::Kind::Unexpected);
  EXPECT_EQ(issues[0].message, "blk.0.ffn_gate_inp_shexp.weight: not a tensor of a qwen3moe model");
  EXPECT_NO_THROW(strata::require_valid(hp, model));
}

TEST(Arch, FusedQkvStandsInForTheSplitProjections) {
  const Model model = write_model("fused.gguf", small_qwen3moe_keys, [](std::vector<TensorSpec>& specs) {
    std::erase_if(specs, [](const TensorSpec& s) {
      return s.name == "blk.0.attn_q.weight" || s.name == "blk.0.attn_k.weight" || s.name == "blk.0.attn_v.weight";
    });
    specs.push_back({"blk.0.attn_qkv.weight", {64, 128 + 64 + 64}, true, {}});
  });
  EXPECT_TRUE(strata::check_tensors(strata::read_hparams(model.metadata()), model).empty());
}

TEST(Arch, Qwen3_30bHas579Tensors) {
  const HParams hp = hparams_of([](Writer& w) {
    small_qwen3moe_keys(w);
    w.set_u32("qwen3moe.block_count", 48);
    w.set_u32("qwen3moe.embedding_length", 2048);
    w.set_u32("qwen3moe.attention.head_count", 32);
    w.set_u32("qwen3moe.attention.head_count_kv", 4);
    w.set_u32("qwen3moe.attention.key_length", 128);
    w.set_u32("qwen3moe.attention.value_length", 128);
    w.set_u32("qwen3moe.expert_count", 128);
    w.set_u32("qwen3moe.expert_used_count", 8);
    w.set_u32("qwen3moe.expert_feed_forward_length", 768);
    w.set_u32("qwen3moe.vocab_size", 151936);
  });
  const auto specs = strata::expected_tensors(hp);
  // Every required tensor and the (optional, untied) head.
  EXPECT_EQ(std::count_if(specs.begin(), specs.end(),
                          [](const TensorSpec& s) { return s.required || s.name == "output.weight"; }),
            579);
  EXPECT_EQ(find_spec(specs, "blk.47.ffn_gate_exps.weight")->ne, (std::vector<uint64_t>{2048, 768, 128}));
  EXPECT_EQ(find_spec(specs, "blk.47.attn_q.weight")->ne, (std::vector<uint64_t>{2048, 4096}));
  EXPECT_EQ(find_spec(specs, "blk.47.attn_output.weight")->ne, (std::vector<uint64_t>{4096, 2048}));
  EXPECT_EQ(find_spec(specs, "blk.0.attn_v.weight")->ne, (std::vector<uint64_t>{2048, 512}));
  EXPECT_EQ(find_spec(specs, "token_embd.weight")->ne, (std::vector<uint64_t>{2048, 151936}));
  EXPECT_FALSE(find_spec(specs, "output.weight")->required);  // may be tied to token_embd
}

// DeepSeek-V3 as llama.cpp's converter writes it (before the k_b/v_b split): 1025 tensors.
void deepseek_v3_keys(Writer& w) {
  w.set_string("general.architecture", "deepseek2");
  w.set_u32("deepseek2.block_count", 61);
  w.set_u32("deepseek2.context_length", 163840);
  w.set_u32("deepseek2.embedding_length", 7168);
  w.set_u32("deepseek2.feed_forward_length", 18432);
  w.set_u32("deepseek2.attention.head_count", 128);
  w.set_u32("deepseek2.attention.head_count_kv", 128);
  w.set_f32("deepseek2.attention.layer_norm_rms_epsilon", 1e-6f);
  w.set_u32("deepseek2.leading_dense_block_count", 3);
  w.set_u32("deepseek2.attention.q_lora_rank", 1536);
  w.set_u32("deepseek2.attention.kv_lora_rank", 512);
  w.set_u32("deepseek2.attention.key_length", 192);
  w.set_u32("deepseek2.attention.value_length", 128);
  w.set_u32("deepseek2.rope.dimension_count", 64);
  w.set_u32("deepseek2.expert_count", 256);
  w.set_u32("deepseek2.expert_used_count", 8);
  w.set_u32("deepseek2.expert_feed_forward_length", 2048);
  w.set_u32("deepseek2.expert_shared_count", 1);
  w.set_u32("deepseek2.vocab_size", 129280);
}

TEST(Arch, DeepseekV3Shapes) {
  const auto specs = strata::expected_tensors(hparams_of(deepseek_v3_keys));
  const auto present = std::count_if(specs.begin(), specs.end(), [](const TensorSpec& s) {
    return s.required || s.name == "output.weight" || s.name.find("exp_probs_b") != std::string::npos;
  });
  EXPECT_EQ(present, 1025);
  EXPECT_EQ(find_spec(specs, "blk.3.attn_kv_a_mqa.weight")->ne, (std::vector<uint64_t>{7168, 576}));
  EXPECT_EQ(find_spec(specs, "blk.3.attn_q_b.weight")->ne, (std::vector<uint64_t>{1536, 24576}));
  EXPECT_EQ(find_spec(specs, "blk.3.attn_kv_b.weight")->ne, (std::vector<uint64_t>{512, 32768}));
  EXPECT_EQ(find_spec(specs, "blk.3.attn_output.weight")->ne, (std::vector<uint64_t>{16384, 7168}));
  EXPECT_EQ(find_spec(specs, "blk.2.ffn_down.weight")->ne, (std::vector<uint64_t>{18432, 7168}));
  EXPECT_EQ(find_spec(specs, "blk.3.ffn_down_shexp.weight")->ne, (std::vector<uint64_t>{2048, 7168}));
  EXPECT_EQ(find_spec(specs, "blk.2.ffn_gate_inp.weight"), nullptr);  // a leading dense block
  // Newer files split kv_b into per-head k_b and v_b and record the decompressed head sizes.
  const auto mla = strata::expected_tensors(hparams_of([](Writer& w) {
    deepseek_v3_keys(w);
    w.set_u32("deepseek2.attention.key_length", 576);
    w.set_u32("deepseek2.attention.value_length", 512);
    w.set_u32("deepseek2.attention.key_length_mla", 192);
    w.set_u32("deepseek2.attention.value_length_mla", 128);
  }));
  EXPECT_EQ(find_spec(mla, "blk.3.attn_kv_b.weight"), nullptr);
  EXPECT_EQ(find_spec(mla, "blk.3.attn_k_b.weight")->ne, (std::vector<uint64_t>{128, 512, 128}));
  EXPECT_EQ(find_spec(mla, "blk.3.attn_v_b.weight")->ne, (std::vector<uint64_t>{512, 128, 128}));
}

TEST(Arch, DeepseekFusedGateUpStandsInForGateAndUp) {
  auto keys = [](Writer& w) {
    deepseek_v3_keys(w);
    w.set_u32("deepseek2.block_count", 2);
    w.set_u32("deepseek2.leading_dense_block_count", 1);
    w.set_u32("deepseek2.embedding_length", 64);
    w.set_u32("deepseek2.feed_forward_length", 64);
    w.set_u32("deepseek2.attention.head_count", 2);
    w.set_u32("deepseek2.attention.head_count_kv", 2);
    w.set_u32("deepseek2.attention.q_lora_rank", 32);
    w.set_u32("deepseek2.attention.kv_lora_rank", 32);
    w.set_u32("deepseek2.attention.key_length", 48);
    w.set_u32("deepseek2.attention.value_length", 32);
    w.set_u32("deepseek2.rope.dimension_count", 16);
    w.set_u32("deepseek2.expert_count", 4);
    w.set_u32("deepseek2.expert_used_count", 2);
    w.set_u32("deepseek2.expert_feed_forward_length", 32);
    w.set_u32("deepseek2.vocab_size", 50);
  };
  const Model model = write_model("fused_gate_up.gguf", keys, [](std::vector<TensorSpec>& specs) {
    std::erase_if(specs, [](const TensorSpec& s) {
      return s.name == "blk.1.ffn_gate_exps.weight" || s.name == "blk.1.ffn_up_exps.weight";
    });
    specs.push_back({"blk.1.ffn_gate_up_exps.weight", {64, 64, 4}, true, {}});
  });
  EXPECT_TRUE(strata::check_tensors(strata::read_hparams(model.metadata()), model).empty());
}

TEST(Arch, EveryArchitectureListsItsRouterAndNorms) {
  // Qwen2-MoE's shared expert gate, gpt-oss's sinks and expert biases, GLM's routing bias and MTP block.
  const auto qwen2 = strata::expected_tensors(hparams_of([](Writer& w) {
    w.set_string("general.architecture", "qwen2moe");
    w.set_u32("qwen2moe.block_count", 1);
    w.set_u32("qwen2moe.context_length", 64);
    w.set_u32("qwen2moe.embedding_length", 64);
    w.set_u32("qwen2moe.feed_forward_length", 96);
    w.set_u32("qwen2moe.attention.head_count", 4);
    w.set_f32("qwen2moe.attention.layer_norm_rms_epsilon", 1e-6f);
    w.set_u32("qwen2moe.expert_count", 4);
    w.set_u32("qwen2moe.expert_used_count", 2);
    w.set_u32("qwen2moe.expert_feed_forward_length", 32);
    w.set_u32("qwen2moe.vocab_size", 10);
  }));
  EXPECT_EQ(find_spec(qwen2, "blk.0.ffn_gate_inp_shexp.weight")->ne, (std::vector<uint64_t>{64}));
  EXPECT_EQ(find_spec(qwen2, "blk.0.ffn_up_shexp.weight")->ne, (std::vector<uint64_t>{64, 96}));
  EXPECT_TRUE(find_spec(qwen2, "output.weight")->required);
  EXPECT_FALSE(find_spec(qwen2, "blk.0.attn_q.bias")->required);

  const auto oss = strata::expected_tensors(hparams_of([](Writer& w) {
    w.set_string("general.architecture", "gpt-oss");
    w.set_u32("gpt-oss.block_count", 2);
    w.set_u32("gpt-oss.context_length", 64);
    w.set_u32("gpt-oss.embedding_length", 96);
    w.set_u32("gpt-oss.attention.head_count", 4);
    w.set_u32("gpt-oss.attention.head_count_kv", 2);
    w.set_u32("gpt-oss.attention.key_length", 32);
    w.set_u32("gpt-oss.attention.value_length", 32);
    w.set_f32("gpt-oss.attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_u32("gpt-oss.expert_count", 4);
    w.set_u32("gpt-oss.expert_used_count", 2);
    w.set_u32("gpt-oss.expert_feed_forward_length", 96);
    w.set_u32("gpt-oss.attention.sliding_window", 16);
    w.set_u32("gpt-oss.vocab_size", 10);
  }));
  EXPECT_EQ(find_spec(oss, "blk.1.attn_sinks.weight")->ne, (std::vector<uint64_t>{4}));
  EXPECT_EQ(find_spec(oss, "blk.1.attn_q.weight")->ne, (std::vector<uint64_t>{96, 128}));
  EXPECT_EQ(find_spec(oss, "blk.1.ffn_gate_exps.bias")->ne, (std::vector<uint64_t>{96, 4}));
  EXPECT_EQ(find_spec(oss, "blk.1.post_attention_norm.weight")->ne, (std::vector<uint64_t>{96}));
  EXPECT_EQ(find_spec(oss, "blk.1.ffn_norm.weight"), nullptr);

  const auto glm = strata::expected_tensors(hparams_of([](Writer& w) {
    w.set_string("general.architecture", "glm4moe");
    w.set_u32("glm4moe.block_count", 3);
    w.set_u32("glm4moe.context_length", 64);
    w.set_u32("glm4moe.embedding_length", 64);
    w.set_u32("glm4moe.feed_forward_length", 128);
    w.set_u32("glm4moe.attention.head_count", 4);
    w.set_u32("glm4moe.attention.head_count_kv", 2);
    w.set_f32("glm4moe.attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_u32("glm4moe.expert_count", 4);
    w.set_u32("glm4moe.expert_used_count", 2);
    w.set_u32("glm4moe.expert_shared_count", 1);
    w.set_u32("glm4moe.expert_feed_forward_length", 32);
    w.set_u32("glm4moe.leading_dense_block_count", 1);
    w.set_u32("glm4moe.nextn_predict_layers", 1);
    w.set_u32("glm4moe.vocab_size", 10);
  }));
  EXPECT_EQ(find_spec(glm, "blk.0.ffn_up.weight")->ne, (std::vector<uint64_t>{64, 128}));
  EXPECT_TRUE(find_spec(glm, "blk.1.exp_probs_b.bias")->required);
  EXPECT_EQ(find_spec(glm, "blk.1.nextn.eh_proj.weight"), nullptr);
  EXPECT_EQ(find_spec(glm, "blk.2.nextn.eh_proj.weight")->ne, (std::vector<uint64_t>{128, 64}));
  EXPECT_TRUE(find_spec(glm, "blk.2.ffn_gate_exps.weight")->required);
}

}  // namespace
