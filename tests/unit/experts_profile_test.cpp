// Expert profiles: counting, ranking, merging, the file's round trip, and the message for each way a file can
// be wrong.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "strata/error.hpp"
#include "strata/experts/expert_profile.hpp"
#include "test_temp_dir.hpp"

namespace ex = strata::experts;

namespace {

const ex::ModelIdentity kModel{"tiny-q4km", 2, 3};

ex::ExpertProfile sample_profile() {
  ex::ExpertProfile p(kModel);
  p.record_positions(10);
  p.record({0, 0}, 4);
  p.record({0, 2}, 7);
  p.record({1, 1}, 7);
  p.record({1, 2}, 1);
  return p;
}

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = strata::testing_support::test_temp_path("experts_profile", name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// The error of loading `text` as a profile of kModel, with the file's name replaced by FILE.
std::string load_error(const std::string& text, const ex::ModelIdentity& expected = kModel) {
  const std::string path = temp_file("bad.json", text);
  try {
    ex::ExpertProfile::load(path, expected);
  } catch (const strata::Error& e) {
    std::string m = e.what();
    if (m.rfind(path, 0) == 0) m = "FILE" + m.substr(path.size());
    return m;
  }
  return "no error";
}

// A valid profile's text with one part replaced.
std::string profile_text(const std::string& model = R"({"fingerprint": "tiny-q4km", "n_layer": 2, "n_expert": 3})",
                         const std::string& counts = "[[4, 0, 7], [0, 7, 1]]", const std::string& version = "1",
                         const std::string& positions = "10") {
  return R"({"format": "strata-expert-profile", "version": )" + version + R"(, "model": )" + model +
         R"(, "positions": )" + positions + R"(, "counts": )" + counts + "}";
}

}  // namespace

TEST(ExpertsProfile, CountsRatesAndRank) {
  const ex::ExpertProfile p = sample_profile();
  EXPECT_EQ(p.count({0, 2}), 7u);
  EXPECT_EQ(p.count({1, 0}), 0u);
  EXPECT_DOUBLE_EQ(p.rate({0, 0}), 0.4);
  // 7 (0,2) and 7 (1,1) tie: the lower layer first; the zeros follow in (layer, expert) order.
  const std::vector<ex::ExpertKey> expected = {{0, 2}, {1, 1}, {0, 0}, {1, 2}, {0, 1}, {1, 0}};
  EXPECT_EQ(p.rank(), expected);
  EXPECT_DOUBLE_EQ(ex::ExpertProfile(kModel).rate({0, 0}), 0.0);
}

TEST(ExpertsProfile, RecordOutsideTheModelIsRefused) {
  ex::ExpertProfile p(kModel);
  EXPECT_THROW(p.record({2, 0}, 1), strata::Error);
  try {
    p.record({0, 3}, 1);
  } catch (const strata::Error& e) {
    EXPECT_STREQ(e.what(), "expert profile: layer 0 expert 3 is outside the model's 2 layers x 3 experts");
  }
  EXPECT_THROW(ex::ExpertProfile({"x", 0, 3}), strata::Error);
}

TEST(ExpertsProfile, MergeAddsCountsOfTheSameModelOnly) {
  ex::ExpertProfile a = sample_profile();
  a.merge(sample_profile());
  EXPECT_EQ(a.positions(), 20u);
  EXPECT_EQ(a.count({0, 2}), 14u);
  EXPECT_EQ(a.count({1, 2}), 2u);
  ex::ExpertProfile other({"other-model", 2, 3});
  try {
    a.merge(other);
    FAIL() << "merged profiles of different models";
  } catch (const strata::Error& e) {
    EXPECT_STREQ(e.what(),
                 "cannot merge the expert profile of \"other-model\" (2 layers x 3 experts) into one of \"tiny-q4km\" "
                 "(2 layers x 3 experts): profiles of different models do not add up");
  }
  EXPECT_EQ(a.count({0, 2}), 14u);
}

TEST(ExpertsProfile, FileRoundTrip) {
  const ex::ExpertProfile p = sample_profile();
  EXPECT_EQ(p.to_json(),
            "{\n"
            "  \"format\": \"strata-expert-profile\",\n"
            "  \"version\": 2,\n"
            "  \"model\": {\"fingerprint\": \"tiny-q4km\", \"n_layer\": 2, \"n_expert\": 3},\n"
            "  \"positions\": 10,\n"
            "  \"counts\": [\n"
            "    [4, 0, 7],\n"
            "    [0, 7, 1]\n"
            "  ]\n"
            "}\n");
  const std::string path = strata::testing_support::test_temp_path("experts_profile", "round.json");
  p.save(path);
  const ex::ExpertProfile back = ex::ExpertProfile::load(path, kModel);
  EXPECT_EQ(back.identity(), kModel);
  EXPECT_EQ(back.positions(), 10u);
  EXPECT_EQ(back.rank(), p.rank());
  for (uint32_t l = 0; l < 2; ++l)
    for (uint32_t e = 0; e < 3; ++e) EXPECT_EQ(back.count({l, e}), p.count({l, e}));
  EXPECT_EQ(back.to_json(), p.to_json());
  // The rename leaves no temporary behind.
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    files += entry.path().filename().string().rfind("round.json", 0) == 0;
  EXPECT_EQ(files, 1u);
}

TEST(ExpertsProfile, WhatAReaderIsToldSurvivesTheFile) {
  ex::ExpertProfile p = sample_profile();
  ex::ProfileInfo info;
  info.model_name = "m.gguf";
  info.model_path = "/models/m.gguf";
  info.file_bytes = 12345;
  info.prompts = "built-in (8 prompts)";
  info.prompt_count = 8;
  info.decode_tokens = 16;
  info.backend = "reference";
  info.recorded_by = "strata profile";
  p.set_info(info);
  const std::string text = p.to_json();
  EXPECT_NE(text.find(R"("model": {"fingerprint": "tiny-q4km", "n_layer": 2, "n_expert": 3, "name": "m.gguf", )"
                      R"("path": "/models/m.gguf", "file_bytes": 12345},)"),
            std::string::npos)
      << text;
  const ex::ExpertProfile back = ex::ExpertProfile::from_json(text, "mem", kModel);
  EXPECT_EQ(back.info(), info);
  EXPECT_EQ(back.to_json(), text);
}

TEST(ExpertsProfile, VersionOneFilesStillLoad) {
  const ex::ExpertProfile back = ex::ExpertProfile::from_json(profile_text(), "mem", kModel);
  EXPECT_EQ(back.positions(), 10u);
  EXPECT_EQ(back.count({0, 2}), 7u);
  EXPECT_EQ(back.info(), ex::ProfileInfo{});
}

TEST(ExpertsProfile, AddCountsTakesPositionsFromTheBusiestLayer) {
  ex::ExpertProfile p(kModel);
  // Two experts a token: layer 0 routed 5 tokens (10 routes), layer 1 as many.
  const std::vector<uint64_t> routed = {4, 0, 6, 3, 3, 4};
  p.add_counts(routed, 2);
  EXPECT_EQ(p.positions(), 5u);
  EXPECT_EQ(p.count({0, 2}), 6u);
  EXPECT_EQ(p.count({1, 2}), 4u);
  p.add_counts(routed, 2);
  EXPECT_EQ(p.positions(), 10u);
  EXPECT_THROW(p.add_counts(std::vector<uint64_t>{1, 2}, 2), strata::Error);
  EXPECT_EQ(ex::default_profile_path("/m/a.gguf"), std::filesystem::path("/m/a.gguf.profile.json"));
}

TEST(ExpertsProfile, FingerprintsWithQuotesSurviveTheFile) {
  const ex::ModelIdentity odd{"a \"quoted\" name\\with\tcontrol", 1, 1};
  ex::ExpertProfile p(odd);
  p.record_positions(3);
  p.record({0, 0}, 2);
  const ex::ExpertProfile back = ex::ExpertProfile::from_json(p.to_json(), "mem", odd);
  EXPECT_EQ(back.identity(), odd);
  EXPECT_EQ(back.count({0, 0}), 2u);
}

TEST(ExpertsProfile, EachDamagedFileHasItsMessage) {
  EXPECT_EQ(load_error(profile_text()), "no error");
  EXPECT_EQ(load_error("{\"format\": "),
            "FILE: not an expert profile: not valid JSON at byte 11: delete the file or point experts.profile to a "
            "profile saved by strata");
  EXPECT_EQ(load_error("{\"format\" 1}"),
            "FILE: not an expert profile: not valid JSON at byte 10: delete the file or point experts.profile to a "
            "profile saved by strata");
  EXPECT_EQ(load_error(""),
            "FILE: not an expert profile: not valid JSON at byte 0: delete the file or point experts.profile to a "
            "profile saved by strata");
  EXPECT_EQ(load_error("[1, 2]"), "FILE: not an expert profile: the file holds a JSON array, not an object");
  EXPECT_EQ(load_error(R"({"version": 1})"),
            "FILE: not an expert profile: \"format\" is missing, expected \"strata-expert-profile\"");
  EXPECT_EQ(load_error(R"({"format": "gguf"})"),
            "FILE: not an expert profile: \"format\" is \"gguf\", expected \"strata-expert-profile\"");
  std::string extra = profile_text();
  extra.insert(1, R"("comment": "hi", )");
  EXPECT_EQ(load_error(extra),
            "FILE: unknown key \"comment\" in the profile (known: format, version, model, positions, counts)");
  EXPECT_EQ(load_error(profile_text(R"({"fingerprint": "tiny-q4km", "n_layer": 2, "n_expert": 3, "arch": "x"})")),
            "FILE: unknown key \"arch\" in \"model\" (known: fingerprint, n_layer, n_expert)");
  EXPECT_EQ(load_error(profile_text(R"(["tiny-q4km"])")), "FILE: \"model\" is a JSON array, not an object");
  EXPECT_EQ(load_error(profile_text(R"({"n_layer": 2, "n_expert": 3})")), "FILE: \"model\" has no \"fingerprint\"");
  EXPECT_EQ(load_error(profile_text(R"({"fingerprint": 7, "n_layer": 2, "n_expert": 3})")),
            "FILE: model.fingerprint is 7: it must be a string");
  EXPECT_EQ(load_error(profile_text(R"({"fingerprint": "tiny-q4km", "n_layer": 0, "n_expert": 3})")),
            "FILE: model.n_layer is 0: it must be between 1 and 4294967295");
  EXPECT_EQ(load_error(profile_text(R"({"fingerprint": "tiny-q4km", "n_layer": 2.5, "n_expert": 3})")),
            "FILE: model.n_layer is 2.5: it must be a whole number >= 0");
  EXPECT_EQ(load_error(profile_text(R"({"fingerprint": "tiny-q4km", "n_layer": 2})")),
            "FILE: \"model\" has no \"n_expert\"");
  EXPECT_EQ(load_error(profile_text(), {"tiny-q4km", 3, 3}),
            "FILE: the profile is of a model with 2 layers; this model has 3: record a profile with this model "
            "(strata profile --model M) or remove experts.profile");
  EXPECT_EQ(load_error(profile_text(), {"tiny-q4km", 2, 4}),
            "FILE: the profile is of a model with 3 experts per layer; this model has 4: record a profile with this "
            "model (strata profile --model M) or remove experts.profile");
  EXPECT_EQ(load_error(profile_text(), {"tiny-q8", 2, 3}),
            "FILE: the profile is of model \"tiny-q4km\"; this model is \"tiny-q8\": record a profile with this model "
            "(strata profile --model M) or remove experts.profile");
  const std::string model = R"({"fingerprint": "tiny-q4km", "n_layer": 2, "n_expert": 3})";
  EXPECT_EQ(load_error(profile_text(model, "[[4, 0, 7], [0, 7, 1]]", "3")),
            "FILE: expert profile version 3; this build reads versions 1 and 2: record the profile again with this "
            "build (strata profile)");
  // Version 2's fields belong to version 2: a version 1 file with them is damaged.
  EXPECT_EQ(load_error(profile_text(R"({"fingerprint": "tiny-q4km", "n_layer": 2, "n_expert": 3, "name": "m"})")),
            "FILE: unknown key \"name\" in \"model\" (known: fingerprint, n_layer, n_expert)");
  const std::string v2_model = R"({"fingerprint": "tiny-q4km", "n_layer": 2, "n_expert": 3, "name": "m.gguf"})";
  EXPECT_EQ(load_error(profile_text(v2_model, "[[4, 0, 7], [0, 7, 1]]", "2")), "no error");
  EXPECT_EQ(load_error(profile_text(v2_model, "[[4, 0, 7], [0, 7, 1]]", "2"), {"tiny-q8", 2, 3}),
            "FILE: the profile is of model \"tiny-q4km\"; this model is \"tiny-q8\" (it was recorded with m.gguf): "
            "record a profile with this model (strata profile --model M) or remove experts.profile");
  EXPECT_EQ(load_error(profile_text(R"({"fingerprint": "tiny-q4km", "n_layer": 2, "n_expert": 3, "file_bytes": "9"})",
                                    "[[4, 0, 7], [0, 7, 1]]", "2")),
            "FILE: model.file_bytes is \"9\": it must be a whole number >= 0");
  std::string bad_source = profile_text(model, "[[4, 0, 7], [0, 7, 1]]", "2");
  bad_source.insert(1, R"("source": {"prompts": "x", "seed": 1}, )");
  EXPECT_EQ(load_error(bad_source),
            "FILE: unknown key \"seed\" in \"source\" (known: prompts, prompt_count, decode_tokens, backend, "
            "recorded_by)");
  EXPECT_EQ(load_error(profile_text(model, "[[4, 0, 7], [0, 7, 1]]", "\"1\"")),
            "FILE: \"version\" is \"1\": it must be a whole number");
  EXPECT_EQ(load_error(profile_text(model, "[[4, 0, 7], [0, 7, 1]]", "1", "-3")),
            "FILE: \"positions\" is -3: it must be a whole number >= 0");
  EXPECT_EQ(load_error(profile_text(model, "{}")), "FILE: \"counts\" is a JSON object, not an array");
  EXPECT_EQ(load_error(profile_text(model, "[[4, 0, 7]]")), "FILE: \"counts\" has 1 rows; the model has 2 layers");
  EXPECT_EQ(load_error(profile_text(model, "[[4, 0, 7], 5]")), "FILE: counts[1] is a JSON number, not an array");
  EXPECT_EQ(load_error(profile_text(model, "[[4, 0, 7], [0, 7]]")),
            "FILE: counts[1] has 2 entries; the model has 3 experts per layer");
  EXPECT_EQ(load_error(profile_text(model, "[[4, -1, 7], [0, 7, 1]]")),
            "FILE: counts[0][1] is -1: it must be a whole number >= 0");
  EXPECT_EQ(load_error(profile_text(model, "[[4, 0, 7], [0, 0.5, 1]]")),
            "FILE: counts[1][1] is 0.5: it must be a whole number >= 0");
  EXPECT_EQ(load_error(profile_text(model, "[[4, 0, 7], [0, null, 1]]")),
            "FILE: counts[1][1] is null: it must be a whole number >= 0");
  EXPECT_EQ(load_error(profile_text(model, "[[4, 0, 11], [0, 7, 1]]")),
            "FILE: counts[0][2] is 11, more than the 10 positions recorded: the file is damaged; record the profile "
            "again");
  EXPECT_EQ(load_error(R"({"format": "strata-expert-profile"})"), "FILE: the profile has no \"version\"");
}

TEST(ExpertsProfile, MissingOversizedAndFolderPaths) {
  const std::string missing = strata::testing_support::test_temp_path("experts_profile", "none.json");
  try {
    ex::ExpertProfile::load(missing, kModel);
    FAIL() << "loaded a missing file";
  } catch (const strata::Error& e) {
    EXPECT_EQ(std::string(e.what()), "experts.profile: cannot read " + missing +
                                         ": No such file or directory: check the path, or remove experts.profile to "
                                         "start from a uniform cache");
  }
  const std::string big = temp_file("big.json", "");
  std::filesystem::resize_file(big, (uint64_t{64} << 20) + 1);  // sparse: costs no disk
  try {
    ex::ExpertProfile::load(big, kModel);
    FAIL() << "loaded an oversized file";
  } catch (const strata::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              big + ": not an expert profile: 67108865 bytes, and a profile is at most 67108864 bytes");
  }
  const std::string folder = std::filesystem::path(big).parent_path().string();
  try {
    ex::ExpertProfile::load(folder, kModel);
    FAIL() << "loaded a folder";
  } catch (const strata::Error& e) {
    EXPECT_EQ(std::string(e.what()), "experts.profile: " + folder + " is not a regular file: point it to a profile");
  }
  std::filesystem::remove(big);
}

TEST(ExpertsProfile, SaveIntoAMissingFolderSaysSo) {
  const std::string path = strata::testing_support::test_temp_path("experts_profile", "no/such/dir/p.json");
  try {
    sample_profile().save(path);
    FAIL() << "saved into a missing folder";
  } catch (const strata::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("expert profile: cannot write " + path + ".tmp.", 0), 0u) << e.what();
  }
}
