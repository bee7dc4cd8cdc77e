// Vocabulary loading: flags and special ids from metadata with llama.cpp's defaults, and a clear error for
// every vocabulary this build cannot tokenize with.
#include <gtest/gtest.h>

#include <cstdio>

#include "strata/error.hpp"
#include "strata/gguf.hpp"
#include "strata/tokenizer.hpp"
#include "tokenizer_vectors.hpp"

namespace strata {
namespace {

// What a thrown strata::Error says ("" when nothing was thrown).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

VocabSpec spec_from(const std::string& name) {
  const gguf::File f = gguf::File::open(test::vocab_path(name).string());
  return read_vocab_spec(f.metadata());
}

TEST(TokenizerVocab, ByteLevelFlagsFromMetadata) {
  const Tokenizer gpt2 = Tokenizer::from_file(test::vocab_path("gpt-2").string());
  EXPECT_EQ(gpt2.model(), TokenizerModel::ByteLevelBpe);
  EXPECT_EQ(gpt2.pre_tokenizer(), PreTokenizer::Gpt2);
  EXPECT_EQ(gpt2.bos(), 50256);
  EXPECT_EQ(gpt2.eos(), 50256);
  EXPECT_EQ(gpt2.unk(), kNoToken);
  EXPECT_FALSE(gpt2.add_bos()) << "gpt-2 has no add_bos_token key, and byte-level BPE defaults to false";
  EXPECT_FALSE(gpt2.add_space_prefix());
  EXPECT_EQ(gpt2.encode("Hello world"), (std::vector<TokenId>{15496, 995}));

  const Tokenizer ds = Tokenizer::from_file(test::vocab_path("deepseek-llm").string());
  EXPECT_EQ(ds.pre_tokenizer(), PreTokenizer::DeepseekLlm);
  EXPECT_TRUE(ds.add_bos());
  EXPECT_EQ(ds.bos(), 100000);
  EXPECT_EQ(ds.eos(), 100001);
  EXPECT_EQ(ds.encode("").size(), 1u);
}

TEST(TokenizerVocab, AddBosAndAddEosFollowTheSpec) {
  VocabSpec spec = spec_from("gpt-2");
  spec.add_bos = true;
  spec.add_eos = true;
  const Tokenizer tok(spec);
  EXPECT_EQ(tok.encode("Hello world"), (std::vector<TokenId>{50256, 15496, 995, 50256}));
  EXPECT_EQ(tok.encode("Hello world", {.add_bos = false}), (std::vector<TokenId>{15496, 995, 50256}));
  EXPECT_EQ(tok.decode(tok.encode("Hello world"), {.remove_special = true}), "Hello world");
}

TEST(TokenizerVocab, Llama3StyleNamesSetBosAndWholeWordTokens) {
  VocabSpec spec = spec_from("gpt-2");
  spec.pre = "llama-bpe";
  spec.add_bos.reset();
  const Tokenizer tok(spec);
  EXPECT_EQ(tok.pre_tokenizer(), PreTokenizer::Llama3);
  EXPECT_TRUE(tok.add_bos()) << "llama.cpp defaults add_bos to true for llama3-style vocabularies";
}

TEST(TokenizerVocab, ErrorsNameTheProblem) {
  VocabSpec spec = spec_from("gpt-2");
  spec.source = "test.gguf";

  VocabSpec bad = spec;
  bad.model = "bert";
  EXPECT_NE(error_of([&] { Tokenizer t(bad); }).find("tokenizer.ggml.model is 'bert'"), std::string::npos);

  bad = spec;
  bad.pre = "qwen3";
  const std::string pre_error = error_of([&] { Tokenizer t(bad); });
  EXPECT_NE(pre_error.find("tokenizer.ggml.pre is 'qwen3'"), std::string::npos) << pre_error;
  EXPECT_NE(pre_error.find("did you mean"), std::string::npos) << pre_error;

  bad = spec;
  bad.merges.clear();
  EXPECT_NE(error_of([&] { Tokenizer t(bad); }).find("tokenizer.ggml.merges is missing"), std::string::npos);

  bad = spec;
  bad.merges[7] = "nospace";
  EXPECT_NE(error_of([&] { Tokenizer t(bad); }).find("tokenizer.ggml.merges[7]"), std::string::npos);

  bad = spec;
  bad.scores.assign(10, 0.0f);
  EXPECT_NE(error_of([&] { Tokenizer t(bad); }).find("tokenizer.ggml.scores has 10 entries"), std::string::npos);

  bad = spec;
  bad.tokens.resize(5);
  bad.types.resize(5);
  bad.bos_id.reset();
  bad.add_bos = true;
  EXPECT_NE(error_of([&] { Tokenizer t(bad); }).find("add_bos_token is true"), std::string::npos)
      << "the default BOS (11) is outside a 5-token vocabulary";

  bad = spec;
  bad.tokens.clear();
  EXPECT_NE(error_of([&] { Tokenizer t(bad); }).find("tokenizer.ggml.tokens is empty"), std::string::npos);

  const Tokenizer tok(spec);
  EXPECT_NE(error_of([&] { tok.decode(std::vector<TokenId>{1, 50257}); }).find("token id 50257"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)tok.piece(-1); }).find("token id -1"), std::string::npos);
}

TEST(TokenizerVocab, AGgufWithoutVocabularyIsRefused) {
  gguf::Writer w;
  w.set_string("general.architecture", "llama");
  const auto bytes = w.to_bytes({});
  const gguf::File f = gguf::File::from_memory(bytes, "novocab.gguf");
  const std::string e = error_of([&] { Tokenizer::from_metadata(f.metadata()); });
  EXPECT_NE(e.find("novocab.gguf"), std::string::npos) << e;
  EXPECT_NE(e.find("no vocabulary"), std::string::npos) << e;
}

// SentencePiece without byte tokens: characters outside the vocabulary become the unknown token.
TEST(TokenizerVocab, SentencePieceWithoutByteTokensUsesUnknown) {
  VocabSpec spec;
  spec.model = "llama";
  spec.tokens = {"<unk>", "<s>", "</s>", "\xE2\x96\x81" "a", "a", "\xE2\x96\x81"};
  spec.scores = {0, 0, 0, -1, -2, -3};
  spec.types = {2, 3, 3, 1, 1, 1};
  const Tokenizer tok(spec);
  EXPECT_EQ(tok.encode("ab"), (std::vector<TokenId>{1, 3, 0}));
  EXPECT_EQ(tok.decode(std::vector<TokenId>{3, 0, 4}), "aa") << "<unk> gives nothing unless rendered";
  EXPECT_EQ(tok.decode(std::vector<TokenId>{3, 0, 4}, {.render_special = true}), "a<unk>a");
}

}  // namespace
}  // namespace strata
