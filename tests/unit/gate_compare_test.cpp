// `strata gate`: running a prompt (stories260K, against llama2.c run.c's greedy ids), the model's identity, and
// comparing a re-run with a saved one (first diverging position, prompt ids, launch and model differences).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine_backends.hpp"
#include "strata/config.hpp"
#include "strata/error.hpp"
#include "strata/gate.hpp"

namespace gate = strata::gate;
using strata::TokenId;

namespace {

std::string stories() { return strata::test::models_dir() + "/stories260K.gguf"; }

gate::Case make_case(std::vector<TokenId> prompt_ids, std::vector<TokenId> ids, std::string stop = "n_predict") {
  return {"p", "text", std::move(prompt_ids), 0, std::move(ids), std::move(stop)};
}

std::string launch_json(const strata::config::Overrides& overrides) {
  const strata::config::Launch launch = strata::config::load({}, {}, overrides);
  return nlohmann::ordered_json::parse(strata::config::render_json(launch)).at("launch").dump();
}

}  // namespace

TEST(GateCompare, EqualRunsPass) {
  const gate::Case a = make_case({1, 2, 3}, {4, 5, 6, 7});
  const gate::Verdict v = gate::compare_case(a, a, 4);
  EXPECT_EQ(v.kind, gate::Verdict::Kind::Pass);
  EXPECT_EQ(v.compared, 4u);
}

TEST(GateCompare, NamesTheFirstDivergingId) {
  const gate::Verdict v = gate::compare_case(make_case({1, 2}, {4, 5, 6, 7}), make_case({1, 2}, {4, 5, 9, 8}), 4);
  EXPECT_EQ(v.kind, gate::Verdict::Kind::IdsDiffer);
  EXPECT_EQ(v.position, 2u);
  EXPECT_EQ(v.saved, 6);
  EXPECT_EQ(v.now, 9);
}

// Equal prompt ids with other image bytes: the image is named, before any generated id is compared.
TEST(GateCompare, AnImageWithOtherBytesFails) {
  gate::Case a = make_case({1, 2, 3}, {4, 5});
  a.images = {"cat.png"};
  a.image_sha256 = {std::string(64, 'a')};
  gate::Case b = a;
  b.image_sha256 = {std::string(64, 'b')};
  const gate::Verdict v = gate::compare_case(a, b, 2);
  EXPECT_EQ(v.kind, gate::Verdict::Kind::ImageDiffers);
  EXPECT_EQ(v.position, 0u);
  EXPECT_EQ(gate::compare_case(a, a, 2).kind, gate::Verdict::Kind::Pass);
  gate::Case none = a;
  none.images.clear();
  none.image_sha256.clear();
  EXPECT_EQ(gate::compare_case(a, none, 2).kind, gate::Verdict::Kind::ImageDiffers);
}

TEST(GateCompare, PromptIdsAreComparedFirst) {
  const gate::Verdict v = gate::compare_case(make_case({1, 2, 3}, {4}), make_case({1, 7, 3}, {5}), 1);
  EXPECT_EQ(v.kind, gate::Verdict::Kind::PromptDiffers);
  EXPECT_EQ(v.position, 1u);
  EXPECT_EQ(v.saved, 2);
  EXPECT_EQ(v.now, 7);
  const gate::Verdict shorter = gate::compare_case(make_case({1, 2, 3}, {4}), make_case({1, 2}, {4}), 1);
  EXPECT_EQ(shorter.kind, gate::Verdict::Kind::PromptDiffers);
  EXPECT_EQ(shorter.position, 2u);
  EXPECT_EQ(shorter.saved, 3);
  EXPECT_FALSE(shorter.now.has_value());
}

TEST(GateCompare, AnEarlyEndOfTextDiverges) {
  const gate::Verdict v =
      gate::compare_case(make_case({1}, {4, 5}, "eos"), make_case({1}, {4, 5, 6, 7}), 4);
  EXPECT_EQ(v.kind, gate::Verdict::Kind::IdsDiffer);
  EXPECT_EQ(v.position, 2u);
  EXPECT_FALSE(v.saved.has_value());
  EXPECT_EQ(v.now, 6);
  // Both ending at the same place is a pass.
  const gate::Verdict same = gate::compare_case(make_case({1}, {4, 5}, "eos"), make_case({1}, {4, 5}, "eos"), 4);
  EXPECT_EQ(same.kind, gate::Verdict::Kind::Pass);
  EXPECT_EQ(same.compared, 2u);
}

TEST(GateCompare, ComparesOnlyTheFirstNIds) {
  // A re-run with a smaller -n is compared over its own length.
  const gate::Verdict v = gate::compare_case(make_case({1}, {4, 5, 6, 7}), make_case({1}, {4, 5}), 2);
  EXPECT_EQ(v.kind, gate::Verdict::Kind::Pass);
  EXPECT_EQ(v.compared, 2u);
  const gate::Verdict later = gate::compare_case(make_case({1}, {4, 5, 6, 7}), make_case({1}, {4, 5, 6, 8}), 3);
  EXPECT_EQ(later.kind, gate::Verdict::Kind::Pass) << "the difference is after the compared ids";
}

TEST(GateCompare, VerdictTextShowsPositionsIdsAndTheirText) {
  const strata::Tokenizer tok = strata::Tokenizer::from_file(stories());
  const std::vector<TokenId> once = tok.encode("Once upon a time", {true, false, false});
  const std::vector<TokenId> twice = tok.encode("Once upon a day", {true, false, false});
  ASSERT_EQ(once.size(), twice.size());
  size_t at = 0;
  while (once[at] == twice[at]) ++at;

  const gate::Case saved = make_case({1, 2}, once);
  const gate::Case now = make_case({1, 2}, twice);
  const gate::Verdict v = gate::compare_case(saved, now, once.size());
  EXPECT_EQ(gate::verdict_text(v, saved, now, tok),
            "FAIL: ids differ at position " + std::to_string(at) + " (sequence position " + std::to_string(at + 2) +
                "): saved " + std::to_string(once[at]) + " \"" + tok.piece(once[at]) + "\", now " +
                std::to_string(twice[at]) + " \"" + tok.piece(twice[at]) + "\"");
  EXPECT_EQ(gate::verdict_text(gate::compare_case(saved, saved, 3), saved, saved, tok), "PASS (3 ids)");

  const gate::Case prompt_a = make_case(once, {});
  const gate::Case prompt_b = make_case(twice, {});
  const std::string prompt_text = gate::verdict_text(gate::compare_case(prompt_a, prompt_b, 0), prompt_a, prompt_b, tok);
  EXPECT_EQ(prompt_text.rfind("FAIL: prompt_ids differ at position " + std::to_string(at) + ": saved ", 0), 0u)
      << prompt_text;
  EXPECT_NE(prompt_text.find("the tokenizer or the prompt text changed"), std::string::npos) << prompt_text;

  const gate::Case ended = make_case({1, 2}, {once[1]}, "eos");
  const gate::Case longer = make_case({1, 2}, {once[1], once[2]});
  EXPECT_EQ(gate::verdict_text(gate::compare_case(ended, longer, 2), ended, longer, tok),
            "FAIL: ids differ at position 1 (sequence position 3): saved nothing (ids end there, stop eos), now " +
                std::to_string(once[2]) + " \"" + tok.piece(once[2]) + "\"");
}

TEST(GateCompare, LaunchDifferencesNameTheKeys) {
  const std::string base = launch_json({});
  EXPECT_TRUE(gate::launch_differences(base, base).empty());
  const std::vector<std::string> d =
      gate::launch_differences(base, launch_json({"runtime.context=1024", "experts.pcie_frac=0"}));
  EXPECT_EQ(d, (std::vector<std::string>{"experts.pcie_frac: saved \"auto\", now 0.0",
                                         "runtime.context: saved 4096, now 1024"}));
  const std::vector<std::string> plugin = gate::launch_differences(base, launch_json({"plugins.cuda.enabled=false"}));
  EXPECT_EQ(plugin, (std::vector<std::string>{"plugins.cuda.enabled: saved (absent), now false"}));
  EXPECT_EQ(gate::launch_differences(launch_json({"plugins.cuda.enabled=false"}), base),
            (std::vector<std::string>{"plugins.cuda.enabled: saved false, now (absent)"}));
}

TEST(GateModel, FnvMatchesPublishedVectors) {
  EXPECT_EQ(gate::fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(gate::fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(gate::fnv1a64("foobar"), 0x85944171f73967e8ULL);
  EXPECT_EQ(gate::fnv1a64("bar", gate::fnv1a64("foo")), gate::fnv1a64("foobar")) << "it continues from a state";
}

TEST(GateModel, IdentitySeparatesFilesButNotTheirVocabulary) {
  auto dense = strata::Model::load(stories());
  auto moe = strata::Model::load(strata::test::models_dir() + "/stories260K-moe.gguf");
  const gate::ModelIdentity a = gate::identify(*dense);
  const gate::ModelIdentity b = gate::identify(*moe);
  EXPECT_EQ(a.file, "stories260K.gguf");
  EXPECT_EQ(a.bytes, std::filesystem::file_size(stories()));
  EXPECT_EQ(a.architecture, "llama");
  EXPECT_EQ(a.n_vocab, 512u);
  EXPECT_EQ(a.header_hash.size(), 16u);
  // The upcycled MoE keeps the dense model's vocabulary: its ids are comparable, its file is not the same.
  EXPECT_TRUE(gate::same_vocabulary(a, b));
  EXPECT_EQ(a.vocab_hash, b.vocab_hash);
  EXPECT_NE(a.header_hash, b.header_hash);
  const std::vector<std::string> d = gate::model_differences(a, b);
  ASSERT_GE(d.size(), 3u);
  EXPECT_EQ(d[0], "file: saved stories260K.gguf, now stories260K-moe.gguf");
  EXPECT_EQ(gate::identify(*dense), a) << "the identity is a function of the file";
  gate::ModelIdentity other = a;
  other.vocab_hash = "0000000000000000";
  EXPECT_FALSE(gate::same_vocabulary(a, other));
}

TEST(GateRun, GreedyIdsEqualRunC) {
  std::ifstream in(std::string(STRATA_TEST_DATA) + "/stories260K/expected_greedy.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  std::vector<TokenId> want;
  int steps = 0;
  for (const auto& c : expected.at("cases")) {
    if (c.at("prompt") == "Once upon a time" && c.at("temperature").get<double>() == 0.0) {
      want = c.at("tokens_after_bos").get<std::vector<TokenId>>();
      steps = c.at("steps");
    }
  }
  ASSERT_FALSE(want.empty());
  auto engine = strata::test::open_engine(stories(), "reference");
  const int n_prompt_after_bos = 4;
  const gate::Case c = gate::run_case(*engine, {"story", "Once upon a time"}, steps - n_prompt_after_bos);
  EXPECT_EQ(c.name, "story");
  EXPECT_EQ(c.text, "Once upon a time");
  ASSERT_EQ(c.prompt_ids.size(), 5u);
  EXPECT_EQ(c.prompt_ids[0], 1) << "BOS first";
  EXPECT_EQ(c.cut_from, 0u);
  std::vector<TokenId> got(c.prompt_ids.begin() + 1, c.prompt_ids.end());
  got.insert(got.end(), c.ids.begin(), c.ids.end());
  EXPECT_EQ(got, want);
  EXPECT_EQ(c.stop, "n_predict");
  // Determinism: the same engine again gives the same ids.
  const gate::Case again = gate::run_case(*engine, {"story", "Once upon a time"}, steps - n_prompt_after_bos);
  EXPECT_EQ(gate::compare_case(c, again, c.ids.size()).kind, gate::Verdict::Kind::Pass);
}

TEST(GateRun, CutsThePromptToFitTheContext) {
  strata::EngineSettings settings = strata::test::test_settings();
  settings.context = 64;
  auto engine = strata::test::open_engine(stories(), "reference", settings);
  const gate::Prompt long_prompt = gate::builtin_prompts().back();
  const size_t full = engine->model().tokenizer().encode(long_prompt.text, {true, false, false}).size();
  const gate::Case c = gate::run_case(*engine, long_prompt, 8);
  EXPECT_EQ(c.prompt_ids.size(), 56u) << "prompt + N = the context";
  EXPECT_EQ(c.cut_from, full);
  EXPECT_EQ(c.ids.size(), 8u);
  // A saved case's cut is kept: its first tokens, no more.
  const gate::Case kept = gate::run_case(*engine, long_prompt, 8, 20);
  EXPECT_EQ(kept.prompt_ids.size(), 20u);
  EXPECT_TRUE(std::equal(kept.prompt_ids.begin(), kept.prompt_ids.end(), c.prompt_ids.begin()));
  // No room for a prompt: refused with the fix.
  try {
    gate::run_case(*engine, long_prompt, 64);
    ADD_FAILURE() << "-n 64 in a 64-token context ran";
  } catch (const strata::Error& e) {
    EXPECT_NE(std::string(e.what()).find("-n 64 leaves no room for a prompt in runtime.context 64"), std::string::npos)
        << e.what();
  }
}
