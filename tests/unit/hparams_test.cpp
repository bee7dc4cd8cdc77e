#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "strata/gguf.hpp"
#include "strata/hparams.hpp"

namespace {

using strata::Arch;
using strata::GatingFunc;
using strata::HParams;
using strata::gguf::File;
using strata::gguf::MetadataError;
using strata::gguf::Writer;

File file_from(const Writer& w) { return File::from_memory(w.to_bytes({}), "test.gguf"); }

HParams read(const std::function<void(Writer&)>& fill) {
  Writer w;
  fill(w);
  return strata::read_hparams(file_from(w).metadata());
}

std::string read_error(const std::function<void(Writer&)>& fill) {
  try {
    read(fill);
  } catch (const MetadataError& e) {
    return e.what();
  }
  return "(no error)";
}

// Qwen3-30B-A3B's keys as its GGUF carries them.
void qwen3_30b(Writer& w) {
  w.set_string("general.architecture", "qwen3moe");
  w.set_u32("qwen3moe.block_count", 48);
  w.set_u32("qwen3moe.context_length", 40960);
  w.set_u32("qwen3moe.embedding_length", 2048);
  w.set_u32("qwen3moe.feed_forward_length", 6144);
  w.set_u32("qwen3moe.attention.head_count", 32);
  w.set_u32("qwen3moe.attention.head_count_kv", 4);
  w.set_f32("qwen3moe.rope.freq_base", 1000000.0f);
  w.set_f32("qwen3moe.attention.layer_norm_rms_epsilon", 1e-6f);
  w.set_u32("qwen3moe.expert_used_count", 8);
  w.set_u32("qwen3moe.attention.key_length", 128);
  w.set_u32("qwen3moe.attention.value_length", 128);
  w.set_u32("qwen3moe.expert_count", 128);
  w.set_u32("qwen3moe.expert_feed_forward_length", 768);
  const std::string tokens[] = {"a", "b", "c"};
  w.set_array("tokenizer.ggml.tokens", std::span<const std::string>(tokens));
}

TEST(HParams, Stories260kIsADenseLlamaWithLlamaCppDefaults) {
  const File f = File::open(std::string(STRATA_SOURCE_DIR) + "/models/stories260K.gguf");
  const HParams hp = strata::read_hparams(f.metadata());
  EXPECT_EQ(hp.arch, Arch::Llama);
  EXPECT_EQ(hp.n_layer, 5u);
  EXPECT_EQ(hp.n_embd, 64u);
  EXPECT_EQ(hp.n_ff, 172u);
  EXPECT_EQ(hp.n_head, 8u);
  EXPECT_EQ(hp.n_head_kv, 4u);
  EXPECT_EQ(hp.head_dim_k, 8u);  // no key_length: n_embd / n_head
  EXPECT_EQ(hp.head_dim_v, 8u);
  EXPECT_EQ(hp.n_rot, 8u);
  EXPECT_EQ(hp.n_ctx_train, 2048u);
  EXPECT_EQ(hp.n_vocab, 512u);  // no llama.vocab_size: the token list's length
  EXPECT_FLOAT_EQ(hp.rms_eps, 1e-5f);
  EXPECT_FLOAT_EQ(hp.rope_freq_base, 10000.0f);  // absent: llama.cpp's default
  EXPECT_FLOAT_EQ(hp.rope_freq_scale, 1.0f);
  EXPECT_EQ(hp.rope_scaling, strata::RopeScaling::Linear);
  EXPECT_EQ(hp.rope_orig_ctx, 2048u);
  EXPECT_FALSE(hp.has_experts());
  EXPECT_EQ(hp.n_embd_k_gqa(), 32u);
}

TEST(HParams, Qwen3MoeReadsEveryKey) {
  const HParams hp = read(qwen3_30b);
  EXPECT_EQ(hp.arch, Arch::Qwen3Moe);
  EXPECT_EQ(hp.n_layer, 48u);
  EXPECT_EQ(hp.n_layer_main(), 48u);
  EXPECT_EQ(hp.n_embd, 2048u);
  EXPECT_EQ(hp.n_head, 32u);
  EXPECT_EQ(hp.n_head_kv, 4u);
  EXPECT_EQ(hp.head_dim_k, 128u);  // not 2048 / 32
  EXPECT_EQ(hp.n_rot, 128u);
  EXPECT_EQ(hp.n_embd_q(), 4096u);
  EXPECT_EQ(hp.n_expert, 128u);
  EXPECT_EQ(hp.n_expert_used, 8u);
  EXPECT_EQ(hp.n_ff_exp, 768u);
  EXPECT_EQ(hp.n_vocab, 3u);
  EXPECT_FLOAT_EQ(hp.rope_freq_base, 1e6f);
  EXPECT_FLOAT_EQ(hp.rms_eps, 1e-6f);
  EXPECT_TRUE(hp.expert_weights_norm);
  EXPECT_EQ(hp.gating, GatingFunc::Softmax);
  EXPECT_FLOAT_EQ(hp.expert_weights_scale, 1.0f);
  EXPECT_TRUE(hp.layer_has_experts(0));
}

TEST(HParams, VocabSizeKeyWinsOverTheTokenList) {
  const HParams hp = read([](Writer& w) {
    qwen3_30b(w);
    w.set_u32("qwen3moe.vocab_size", 151936);
  });
  EXPECT_EQ(hp.n_vocab, 151936u);
}

TEST(HParams, ExpertWidthFallsBackToFeedForwardOverUsed) {
  const HParams hp = read([](Writer& w) {
    qwen3_30b(w);
    w.remove("qwen3moe.expert_feed_forward_length");
  });
  EXPECT_EQ(hp.n_ff_exp, 6144u / 8u);
}

TEST(HParams, MissingKeysAreNamed) {
  EXPECT_NE(read_error([](Writer& w) {
              qwen3_30b(w);
              w.remove("qwen3moe.expert_count");
            }).find("qwen3moe.expert_count: missing"),
            std::string::npos);
  EXPECT_NE(read_error([](Writer& w) {
              qwen3_30b(w);
              w.remove("qwen3moe.attention.layer_norm_rms_epsilon");
            }).find("qwen3moe.attention.layer_norm_rms_epsilon: missing"),
            std::string::npos);
  EXPECT_NE(read_error([](Writer& w) {
              qwen3_30b(w);
              w.remove("tokenizer.ggml.tokens");
            }).find("qwen3moe.vocab_size and tokenizer.ggml.tokens"),
            std::string::npos);
  EXPECT_NE(read_error([](Writer& w) { w.set_u32("llama.block_count", 2); }).find("general.architecture: missing"),
            std::string::npos);
}

TEST(HParams, BadValuesAreNamed) {
  EXPECT_NE(read_error([](Writer& w) {
              qwen3_30b(w);
              w.set_string("general.architecture", "mamba");
            }).find("\"mamba\" is not supported; supported: llama, qwen3moe"),
            std::string::npos);
  EXPECT_NE(read_error([](Writer& w) {
              qwen3_30b(w);
              w.set_u32("qwen3moe.attention.head_count_kv", 5);
            }).find("qwen3moe.attention.head_count_kv: 5 does not divide head_count 32"),
            std::string::npos);
  EXPECT_NE(read_error([](Writer& w) {
              qwen3_30b(w);
              w.set_u32("qwen3moe.expert_used_count", 200);
            }).find("qwen3moe.expert_used_count: 200 is more than expert_count 128"),
            std::string::npos);
  EXPECT_NE(read_error([](Writer& w) {
              qwen3_30b(w);
              w.set_string("qwen3moe.block_count", "48");
            }).find("qwen3moe.block_count"),
            std::string::npos);
  EXPECT_NE(read_error([](Writer& w) {
              qwen3_30b(w);
              w.set_string("qwen3moe.rope.scaling.type", "ntk");
            }).find("qwen3moe.rope.scaling.type: \"ntk\" is not one of"),
            std::string::npos);
}

TEST(HParams, PerLayerArraysMustBeUniform) {
  const HParams hp = read([](Writer& w) {
    qwen3_30b(w);
    const uint32_t heads[] = {32, 32, 32};
    w.set_array("qwen3moe.attention.head_count", std::span<const uint32_t>(heads));
  });
  EXPECT_EQ(hp.n_head, 32u);
  EXPECT_NE(read_error([](Writer& w) {
              qwen3_30b(w);
              const uint32_t ff[] = {6144, 4096};
              w.set_array("qwen3moe.feed_forward_length", std::span<const uint32_t>(ff));
            }).find("qwen3moe.feed_forward_length: per-layer values differ"),
            std::string::npos);
}

TEST(HParams, LlamaRotatesWholeHeads) {
  auto llama = [](Writer& w) {
    w.set_string("general.architecture", "llama");
    w.set_u32("llama.block_count", 2);
    w.set_u32("llama.context_length", 4096);
    w.set_u32("llama.embedding_length", 256);
    w.set_u32("llama.feed_forward_length", 512);
    w.set_u32("llama.attention.head_count", 4);
    w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_u32("llama.vocab_size", 1000);
  };
  EXPECT_EQ(read(llama).n_rot, 64u);
  EXPECT_NE(read_error([&](Writer& w) {
              llama(w);
              w.set_u32("llama.rope.dimension_count", 32);
            }).find("llama.rope.dimension_count: 32, but llama rotates whole heads of 64"),
            std::string::npos);
  // Mixtral-style: the experts are feed_forward_length wide and their weights renormalized.
  const HParams moe = read([&](Writer& w) {
    llama(w);
    w.set_u32("llama.expert_count", 8);
    w.set_u32("llama.expert_used_count", 2);
    w.set_string("llama.rope.scaling.type", "yarn");
    w.set_f32("llama.rope.scaling.factor", 4.0f);
    w.set_u32("llama.rope.scaling.original_context_length", 1024);
  });
  EXPECT_EQ(moe.n_ff_exp, 512u);
  EXPECT_TRUE(moe.expert_weights_norm);
  EXPECT_EQ(moe.rope_scaling, strata::RopeScaling::Yarn);
  EXPECT_FLOAT_EQ(moe.rope_freq_scale, 0.25f);
  EXPECT_EQ(moe.rope_orig_ctx, 1024u);
}

void deepseek_v3(Writer& w) {
  w.set_string("general.architecture", "deepseek2");
  w.set_u32("deepseek2.block_count", 61);
  w.set_u32("deepseek2.context_length", 163840);
  w.set_u32("deepseek2.embedding_length", 7168);
  w.set_u32("deepseek2.feed_forward_length", 18432);
  w.set_u32("deepseek2.attention.head_count", 128);
  w.set_u32("deepseek2.attention.head_count_kv", 1);
  w.set_f32("deepseek2.attention.layer_norm_rms_epsilon", 1e-6f);
  w.set_u32("deepseek2.leading_dense_block_count", 3);
  w.set_u32("deepseek2.attention.q_lora_rank", 1536);
  w.set_u32("deepseek2.attention.kv_lora_rank", 512);
  w.set_u32("deepseek2.attention.key_length", 576);
  w.set_u32("deepseek2.attention.value_length", 512);
  w.set_u32("deepseek2.attention.key_length_mla", 192);
  w.set_u32("deepseek2.attention.value_length_mla", 128);
  w.set_u32("deepseek2.rope.dimension_count", 64);
  w.set_u32("deepseek2.expert_count", 256);
  w.set_u32("deepseek2.expert_used_count", 8);
  w.set_u32("deepseek2.expert_feed_forward_length", 2048);
  w.set_u32("deepseek2.expert_shared_count", 1);
  w.set_f32("deepseek2.expert_weights_scale", 2.5f);
  w.set_bool("deepseek2.expert_weights_norm", true);
  w.set_u32("deepseek2.expert_gating_func", 2);
  w.set_u32("deepseek2.vocab_size", 129280);
}

TEST(HParams, Deepseek2LatentAttentionAndSharedExperts) {
  const HParams hp = read(deepseek_v3);
  EXPECT_EQ(hp.arch, Arch::Deepseek2);
  EXPECT_TRUE(hp.is_mla());
  EXPECT_EQ(hp.q_lora_rank, 1536u);
  EXPECT_EQ(hp.kv_lora_rank, 512u);
  EXPECT_EQ(hp.head_dim_k_mla, 192u);
  EXPECT_EQ(hp.n_rot, 64u);
  EXPECT_EQ(hp.n_layer_dense_lead, 3u);
  EXPECT_FALSE(hp.layer_has_experts(2));
  EXPECT_TRUE(hp.layer_has_experts(3));
  EXPECT_EQ(hp.n_ff_shexp, 2048u);
  EXPECT_FLOAT_EQ(hp.expert_weights_scale, 2.5f);
  EXPECT_TRUE(hp.expert_weights_norm);
  EXPECT_EQ(hp.gating, GatingFunc::Sigmoid);
  // V2-era files carry no gating key: softmax.
  EXPECT_EQ(read([](Writer& w) {
              deepseek_v3(w);
              w.remove("deepseek2.expert_gating_func");
            }).gating,
            GatingFunc::Softmax);
  EXPECT_NE(read_error([](Writer& w) {
              deepseek_v3(w);
              w.remove("deepseek2.attention.kv_lora_rank");
            }).find("deepseek2.attention.kv_lora_rank: missing"),
            std::string::npos);
  EXPECT_NE(read_error([](Writer& w) {
              deepseek_v3(w);
              w.set_u32("deepseek2.expert_gating_func", 7);
            }).find("deepseek2.expert_gating_func: 7 is not"),
            std::string::npos);
}

TEST(HParams, GptOssSlidingWindowAlternates) {
  const HParams hp = read([](Writer& w) {
    w.set_string("general.architecture", "gpt-oss");
    w.set_u32("gpt-oss.block_count", 24);
    w.set_u32("gpt-oss.context_length", 131072);
    w.set_u32("gpt-oss.embedding_length", 2880);
    w.set_u32("gpt-oss.feed_forward_length", 2880);
    w.set_u32("gpt-oss.attention.head_count", 64);
    w.set_u32("gpt-oss.attention.head_count_kv", 8);
    w.set_u32("gpt-oss.attention.key_length", 64);
    w.set_u32("gpt-oss.attention.value_length", 64);
    w.set_f32("gpt-oss.attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_u32("gpt-oss.expert_count", 32);
    w.set_u32("gpt-oss.expert_used_count", 4);
    w.set_u32("gpt-oss.expert_feed_forward_length", 2880);
    w.set_u32("gpt-oss.attention.sliding_window", 128);
    w.set_f32("gpt-oss.rope.freq_base", 150000.0f);
    w.set_u32("gpt-oss.vocab_size", 201088);
  });
  EXPECT_EQ(hp.arch, Arch::GptOss);
  EXPECT_EQ(hp.sliding_window, 128u);
  EXPECT_EQ(hp.swa_period, 2u);
  EXPECT_TRUE(hp.layer_is_swa(0));
  EXPECT_FALSE(hp.layer_is_swa(1));
  EXPECT_FLOAT_EQ(hp.rope_freq_base_swa, 150000.0f);
  EXPECT_EQ(hp.gating, GatingFunc::SoftmaxWeight);
}

void glm45_air(Writer& w) {
  w.set_string("general.architecture", "glm4moe");
  w.set_u32("glm4moe.block_count", 47);
  w.set_u32("glm4moe.context_length", 131072);
  w.set_u32("glm4moe.embedding_length", 4096);
  w.set_u32("glm4moe.feed_forward_length", 10944);
  w.set_u32("glm4moe.attention.head_count", 96);
  w.set_u32("glm4moe.attention.head_count_kv", 8);
  w.set_u32("glm4moe.attention.key_length", 128);
  w.set_u32("glm4moe.attention.value_length", 128);
  w.set_u32("glm4moe.rope.dimension_count", 64);
  w.set_f32("glm4moe.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_u32("glm4moe.expert_count", 128);
  w.set_u32("glm4moe.expert_used_count", 8);
  w.set_u32("glm4moe.expert_shared_count", 1);
  w.set_u32("glm4moe.expert_feed_forward_length", 1408);
  w.set_u32("glm4moe.leading_dense_block_count", 1);
  w.set_u32("glm4moe.nextn_predict_layers", 1);
  w.set_bool("glm4moe.expert_weights_norm", true);
  w.set_u32("glm4moe.vocab_size", 151552);
}

TEST(HParams, Glm4MoeDefaultsToSigmoidAndCountsMtpBlocks) {
  const HParams hp = read(glm45_air);
  EXPECT_EQ(hp.gating, GatingFunc::Sigmoid);
  EXPECT_EQ(hp.n_layer, 47u);
  EXPECT_EQ(hp.n_layer_main(), 46u);
  EXPECT_EQ(hp.n_ff_shexp, 1408u);
  EXPECT_EQ(hp.n_rot, 64u);
  EXPECT_TRUE(hp.expert_weights_norm);
  EXPECT_NE(read_error([](Writer& w) {
              glm45_air(w);
              w.set_u32("glm4moe.nextn_predict_layers", 47);
            }).find("glm4moe.nextn_predict_layers: 47 leaves no decoder block"),
            std::string::npos);
}

TEST(HParams, Qwen2MoeSharedExpertDefaultsToFeedForward) {
  const HParams hp = read([](Writer& w) {
    w.set_string("general.architecture", "qwen2moe");
    w.set_u32("qwen2moe.block_count", 24);
    w.set_u32("qwen2moe.context_length", 8192);
    w.set_u32("qwen2moe.embedding_length", 2048);
    w.set_u32("qwen2moe.feed_forward_length", 5632);
    w.set_u32("qwen2moe.attention.head_count", 16);
    w.set_f32("qwen2moe.attention.layer_norm_rms_epsilon", 1e-6f);
    w.set_u32("qwen2moe.expert_count", 60);
    w.set_u32("qwen2moe.expert_used_count", 4);
    w.set_u32("qwen2moe.expert_feed_forward_length", 1408);
    w.set_u32("qwen2moe.vocab_size", 151936);
  });
  EXPECT_EQ(hp.n_head_kv, 16u);  // absent: as many as query heads
  EXPECT_EQ(hp.n_ff_shexp, 5632u);
  EXPECT_FALSE(hp.expert_weights_norm);
}

}  // namespace
