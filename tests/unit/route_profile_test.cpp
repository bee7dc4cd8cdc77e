// Routing profiles of a running engine (strata profile's and experts.record's counts), experts.profile's `auto`,
// and each bad profile stopping an engine's start with its message: real files, the generated tiny MoE model.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "engine_backends.hpp"
#include "strata/engine.hpp"
#include "strata/error.hpp"
#include "strata/experts/expert_profile.hpp"
#include "strata/route_profile.hpp"
#include "test_temp_dir.hpp"
#include "tiny_moe_model.hpp"

namespace {

namespace ex = strata::experts;
using strata::TokenId;

std::vector<TokenId> tokens(int n, int salt = 0) {
  std::vector<TokenId> p;
  for (int i = 0; i < n; ++i) p.push_back(static_cast<TokenId>((i * 197 + 3 + salt) % 4096));
  return p;
}

std::string temp(const std::string& name) { return strata::testing_support::test_temp_path("route_profile", name); }

// The message of starting an engine on the tiny model with experts.profile set to `profile`.
std::string start_error(const std::string& profile) {
  strata::EngineSettings s = strata::test::test_settings();
  s.experts.profile = profile;
  try {
    strata::test::open_engine(strata::test::tiny_moe_model(), "reference", s);
  } catch (const strata::Error& e) {
    return e.what();
  }
  return "no error";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(RouteProfile, AnEnginesCountsBecomeAProfileOfItsModel) {
  auto e = strata::test::open_engine(strata::test::tiny_moe_model(), "reference");
  e->feed(0, tokens(20));
  const std::vector<TokenId> one = {5};
  e->feed(0, one);
  ex::ProfileInfo info = strata::model_profile_info(e->model());
  EXPECT_EQ(info.model_path, strata::test::tiny_moe_model());
  EXPECT_EQ(info.file_bytes, std::filesystem::file_size(strata::test::tiny_moe_model()));
  info.recorded_by = "test";
  const ex::ExpertProfile p = strata::engine_profile(*e, info);
  EXPECT_EQ(p.identity(), strata::profile_identity(e->model()));
  EXPECT_EQ(p.positions(), 21u);
  const auto& hp = e->model().hparams();
  for (uint32_t l = 0; l < hp.n_layer; ++l) {
    uint64_t row = 0;
    for (uint32_t x = 0; x < hp.n_expert; ++x) row += p.count({l, x});
    EXPECT_EQ(row, 21u * hp.n_expert_used) << "layer " << l;
  }
  const std::string path = temp("engine.json");
  p.save(path);
  const ex::ExpertProfile back = ex::ExpertProfile::load(path, strata::profile_identity(e->model()));
  EXPECT_EQ(back.rank(), p.rank());
  EXPECT_EQ(back.info().recorded_by, "test");
  // The engine starts with it (on the CPU it is checked, and unused).
  EXPECT_EQ(start_error(path), "no error");
}

TEST(RouteProfile, AutoUsesTheProfileBesideTheModelWhenThereIsOne) {
  auto e = strata::test::open_engine(strata::test::tiny_moe_model(), "reference");
  const std::filesystem::path beside = ex::default_profile_path(strata::test::tiny_moe_model());
  std::filesystem::remove(beside);
  EXPECT_EQ(strata::resolve_profile(std::string("auto"), e->model(), true), std::nullopt);
  EXPECT_EQ(strata::resolve_profile(std::nullopt, e->model(), true), std::nullopt);
  e->feed(0, tokens(8));
  strata::engine_profile(*e, {}).save(beside);
  EXPECT_EQ(strata::resolve_profile(std::string("auto"), e->model(), true), beside.string());
  EXPECT_EQ(start_error("auto"), "no error");
  // A damaged one beside the model is an error, not a silent uniform start.
  std::ofstream(beside, std::ios::trunc) << "{";
  EXPECT_TRUE(contains(start_error("auto"), "not valid JSON")) << start_error("auto");
  std::filesystem::remove(beside);
  EXPECT_EQ(start_error("auto"), "no error");
}

TEST(RouteProfile, EachBadProfileStopsTheStartWithItsMessage) {
  const std::string not_json = temp("not_json.json");
  std::ofstream(not_json) << "counts: 1, 2, 3";
  EXPECT_TRUE(contains(start_error(not_json), "not an expert profile: not valid JSON")) << start_error(not_json);

  const std::string missing = temp("missing.json");
  EXPECT_TRUE(contains(start_error(missing), "cannot read " + missing)) << start_error(missing);

  // Another model's shape: right fingerprint, wrong counts of layers and experts.
  auto e = strata::test::open_engine(strata::test::tiny_moe_model(), "reference");
  const ex::ModelIdentity id = strata::profile_identity(e->model());
  const std::string shape = temp("shape.json");
  ex::ExpertProfile(ex::ModelIdentity{id.fingerprint, id.n_layer + 1, id.n_expert}).save(shape);
  EXPECT_TRUE(contains(start_error(shape), "the profile is of a model with " + std::to_string(id.n_layer + 1) +
                                               " layers; this model has " + std::to_string(id.n_layer)))
      << start_error(shape);

  // A row of the wrong length.
  ex::ExpertProfile good(id);
  std::string text = good.to_json();
  const size_t row = text.find("[0, ");
  ASSERT_NE(row, std::string::npos);
  text.replace(row, 4, "[");  // one count fewer in the first row
  const std::string short_row = temp("short_row.json");
  std::ofstream(short_row) << text;
  EXPECT_TRUE(contains(start_error(short_row), "counts[0] has " + std::to_string(id.n_expert - 1) + " entries"))
      << start_error(short_row);

  // Another model: a profile of the same shape under another fingerprint.
  const std::string other = temp("other.json");
  ex::ExpertProfile(ex::ModelIdentity{"0123456789abcdef", id.n_layer, id.n_expert}).save(other);
  EXPECT_TRUE(contains(start_error(other), "the profile is of model \"0123456789abcdef\"")) << start_error(other);
}

TEST(RouteProfile, RecordWritesTheWholeRunWhenTheEngineEnds) {
  const std::string path = temp("record.json");
  std::filesystem::remove(path);
  strata::EngineSettings s = strata::test::test_settings();
  s.experts.record = path;
  {
    auto e = strata::test::open_engine(strata::test::tiny_moe_model(), "reference", s);
    e->feed(0, tokens(20));
    e->reset_expert_counts();  // a bench's test boundary: the record keeps what came before
    e->cut(0, 0);
    e->feed(0, tokens(7, 1));
    EXPECT_FALSE(std::filesystem::exists(path)) << "written at the end, not before";
  }
  auto e = strata::test::open_engine(strata::test::tiny_moe_model(), "reference");
  const ex::ExpertProfile p = ex::ExpertProfile::load(path, strata::profile_identity(e->model()));
  EXPECT_EQ(p.positions(), 27u);
  EXPECT_EQ(p.info().recorded_by, "experts.record");
  EXPECT_EQ(p.info().model_path, strata::test::tiny_moe_model());
  // No temporary left beside it.
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    files += entry.path().filename().string().rfind("record.json", 0) == 0;
  EXPECT_EQ(files, 1u);

  s.experts.record = temp("no_such_folder/record.json");
  try {
    strata::test::open_engine(strata::test::tiny_moe_model(), "reference", s);
    ADD_FAILURE() << "a record into a missing folder was accepted";
  } catch (const strata::Error& err) {
    EXPECT_TRUE(contains(err.what(), "experts.record: the folder")) << err.what();
  }
}
