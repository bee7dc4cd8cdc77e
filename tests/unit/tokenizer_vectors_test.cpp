// Every case of llama.cpp's tokenizer test vectors, exactly; and decoding gives the input back.
#include <gtest/gtest.h>

#include <chrono>

#include "strata/tokenizer.hpp"
#include "tokenizer_vectors.hpp"

namespace strata {
namespace {

class TokenizerVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerVectors, EveryCaseGivesLlamaCppsIds) {
  const auto path = test::vocab_path(GetParam());
  const Tokenizer tok = Tokenizer::from_file(path.string());
  const auto inputs = test::read_vector_inputs(path.string() + ".inp");
  const auto expected = test::read_vector_outputs(path.string() + ".out");
  ASSERT_GT(inputs.size(), 0u) << "no cases in " << path << ".inp";
  ASSERT_EQ(inputs.size(), expected.size()) << "the .inp and .out files disagree on the number of cases";

  size_t passed = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto ids = tok.encode(inputs[i], {.add_bos = false, .add_eos = false, .parse_special = false});
    if (ids != expected[i]) {
      ADD_FAILURE() << GetParam() << ": case " << i << " of " << inputs.size() << " differs\n  input:    "
                    << test::escape_bytes(inputs[i]) << "\n  expected: " << test::format_ids(expected[i])
                    << "\n  got:      " << test::format_ids(ids);
      break;
    }
    ++passed;
  }
  EXPECT_EQ(passed, inputs.size());
  RecordProperty("cases_passed", static_cast<int>(passed));
  std::printf("%s: %zu/%zu cases\n", GetParam().c_str(), passed, inputs.size());
}

TEST_P(TokenizerVectors, DecodeGivesTheInputBack) {
  const auto path = test::vocab_path(GetParam());
  const Tokenizer tok = Tokenizer::from_file(path.string());
  const auto inputs = test::read_vector_inputs(path.string() + ".inp");
  ASSERT_GT(inputs.size(), 0u);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto ids = tok.encode(inputs[i], {.add_bos = false, .add_eos = false});
    // For SentencePiece the decoder drops the dummy-prefix space that encoding added.
    EXPECT_EQ(tok.decode(ids), inputs[i]) << "case " << i << ": " << test::escape_bytes(inputs[i]);
    // With BOS first the dummy prefix stays, as in llama.cpp.
    if (tok.add_bos() && tok.add_space_prefix() && !inputs[i].empty()) {
      const auto with_bos = tok.encode(inputs[i]);
      EXPECT_EQ(tok.decode(with_bos, {.remove_special = true}), " " + inputs[i]) << "case " << i;
    }
  }
}

// Milliseconds for all cases, and a 100 KB text made of them (Release: about 50 ms). The bound is loose enough
// for sanitizer builds on a busy machine; a quadratic step would take minutes.
TEST_P(TokenizerVectors, EncodingIsFast) {
  const auto path = test::vocab_path(GetParam());
  const Tokenizer tok = Tokenizer::from_file(path.string());
  const auto inputs = test::read_vector_inputs(path.string() + ".inp");
  std::string big;
  while (big.size() < 100 * 1024) {
    for (const auto& s : inputs) big += s + "\n";
  }
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  size_t n_all = 0;
  for (const auto& s : inputs) n_all += tok.encode(s).size();
  const auto t1 = clock::now();
  const size_t n_big = tok.encode(big).size();
  const auto t2 = clock::now();
  const double ms_all = std::chrono::duration<double, std::milli>(t1 - t0).count();
  const double ms_big = std::chrono::duration<double, std::milli>(t2 - t1).count();
  std::printf("%s: all cases %.2f ms (%zu tokens); %zu bytes %.2f ms (%zu tokens)\n", GetParam().c_str(), ms_all,
              n_all, big.size(), ms_big, n_big);
  EXPECT_LT(ms_big, 10000.0);
}

INSTANTIATE_TEST_SUITE_P(Vocabs, TokenizerVectors, ::testing::Values("gpt-2", "deepseek-llm", "phi-3"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n) c = (c == '-') ? '_' : c;
                           return n;
                         });

}  // namespace
}  // namespace strata
