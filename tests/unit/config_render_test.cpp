// `strata config show`: the effective launch as YAML with provenance comments, and as JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "config_test_files.hpp"
#include "strata/config.hpp"

namespace cfg = strata::config;
using strata::test::TempDir;

namespace {

// The rendered line that holds `text`, or "" when none does.
std::string line_with(const std::string& rendered, const std::string& text) {
  size_t at = rendered.find(text);
  if (at == std::string::npos) return "";
  const size_t start = rendered.rfind('\n', at) + 1;
  return rendered.substr(start, rendered.find('\n', at) - start);
}

const char* const kLaunch =
    "backend: cpu_avx2\n"
    "plugins:\n"
    "  cuda: {enabled: false, device: 0, tuning: {tiles: [1, 2]}, odd: \"null\", empty: \"\"}\n"
    "experts: {cache: 12.5%, pcie_frac: 0.25, policy: lru}\n"
    "runtime:\n"
    "  context: 8192\n"
    "  kv_type: q8_0\n"
    "sampling: {temperature: 0, seed: 7}\n"
    "serve: {host: \"0.0.0.0\", max_body: 1000000, api_key: hidden}\n";

}  // namespace

TEST(ConfigRender, DefaultsSayDefault) {
  const std::string y = cfg::render_yaml(cfg::defaults());
  EXPECT_EQ(y.substr(0, y.find('\n')), "# effective launch; each comment says where the value came from");
  EXPECT_EQ(line_with(y, "model:"), "model: ~                    # default");
  EXPECT_EQ(line_with(y, "plugins:"), "plugins: {}                 # none named: every plugin found is enabled with its defaults");
  EXPECT_EQ(line_with(y, "  context:"), "  context: 4096             # default");
  EXPECT_EQ(line_with(y, "  cache:"), "  cache: auto               # default");
  EXPECT_EQ(line_with(y, "  max_body:"), "  max_body: 8MiB            # default");
  EXPECT_EQ(line_with(y, "  temperature:"), "  temperature: 0.8          # default");
  EXPECT_EQ(line_with(y, "  elastic:"), "  elastic:");
  EXPECT_EQ(line_with(y, "    hold_s:"), "    hold_s: 30.0            # default");
}

TEST(ConfigRender, YamlShowsEveryValueWithItsOrigin) {
  TempDir dir;
  const auto file = dir.write("launch.yaml", kLaunch);
  const cfg::Launch l = cfg::load(file, {{"STRATA_THREADS", "3"}}, {"sampling.top_k=5"});
  const std::string y = cfg::render_yaml(l);
  const std::string f = file.string();
  EXPECT_NE(y.find("# effective launch from " + f + ";"), std::string::npos);
  EXPECT_NE(line_with(y, "backend: cpu_avx2").find("# " + f + ":1"), std::string::npos);
  EXPECT_NE(line_with(y, "    enabled: false").find("# " + f + ":3"), std::string::npos);
  EXPECT_NE(line_with(y, "    tuning.tiles: 1,2").find("# " + f + ":3"), std::string::npos);
  EXPECT_NE(line_with(y, "    odd: \"null\"").find("# " + f + ":3"), std::string::npos);
  EXPECT_NE(line_with(y, "  cache: 12.5%").find("# " + f + ":4"), std::string::npos);
  EXPECT_NE(line_with(y, "  pcie_frac: 0.25").find("# " + f + ":4"), std::string::npos);
  EXPECT_NE(line_with(y, "  context: 8192").find("# " + f + ":6"), std::string::npos);
  EXPECT_NE(line_with(y, "  threads: 3").find("# environment STRATA_THREADS"), std::string::npos);
  EXPECT_NE(line_with(y, "  top_k: 5").find("# -o"), std::string::npos);
  EXPECT_NE(line_with(y, "  batch: 4096").find("# default"), std::string::npos);
  EXPECT_NE(line_with(y, "  max_body: 1000000").find("# " + f + ":9"), std::string::npos);
  EXPECT_NE(line_with(y, "  api_key: <redacted>").find("# " + f + ":9"), std::string::npos);
  EXPECT_EQ(y.find("hidden"), std::string::npos);
}

TEST(ConfigRender, YamlLoadsBackToTheSameLaunch) {
  TempDir dir;
  dir.write("models/m.gguf", "GGUF");
  const auto file = dir.write("launch.yaml", std::string(kLaunch) + "model: models/m.gguf\n");
  cfg::Launch original = cfg::load(file, {}, {"serve.api_key=~"});
  const auto shown = dir.write("shown.yaml", cfg::render_yaml(original));
  const cfg::Launch again = cfg::load(shown, {}, {});
  EXPECT_EQ(again.model, original.model);
  EXPECT_EQ(again.plugin_path, original.plugin_path);
  EXPECT_EQ(again.backend, original.backend);
  EXPECT_EQ(again.plugins, original.plugins);
  EXPECT_EQ(again.experts, original.experts);
  EXPECT_EQ(again.runtime, original.runtime);
  EXPECT_EQ(again.sampling, original.sampling);
  EXPECT_EQ(again.serve, original.serve);
  EXPECT_EQ(again.plugin("cuda")->flattened(),
            (std::vector<std::string>{"device=0", "tuning.tiles=1,2", "odd=null", "empty="}));
}

TEST(ConfigRender, JsonHasTypedValuesAndProvenance) {
  TempDir dir;
  const auto file = dir.write("launch.yaml", kLaunch);
  const cfg::Launch l = cfg::load(file, {}, {"experts.cache=8GiB"});
  const nlohmann::json j = nlohmann::json::parse(cfg::render_json(l));
  const std::string f = file.string();
  EXPECT_EQ(j["file"], f);
  const nlohmann::json& v = j["launch"];
  EXPECT_TRUE(v["model"].is_null());
  EXPECT_EQ(v["backend"], "cpu_avx2");
  EXPECT_EQ(v["plugin_path"], nlohmann::json::array());
  EXPECT_EQ(v["plugins"]["cuda"]["enabled"], false);
  EXPECT_EQ(v["plugins"]["cuda"]["options"]["tuning.tiles"], "1,2");
  EXPECT_EQ(v["plugins"]["cuda"]["options"]["device"], "0");
  EXPECT_EQ(v["experts"]["cache"], 8ull << 30);
  EXPECT_EQ(v["experts"]["pcie_frac"], 0.25);
  EXPECT_EQ(v["experts"]["policy"], "lru");
  EXPECT_EQ(v["experts"]["profile"], nullptr);
  EXPECT_EQ(v["runtime"]["context"], 8192);
  EXPECT_EQ(v["runtime"]["kv_type"], "q8_0");
  EXPECT_EQ(v["runtime"]["graphs"], true);
  EXPECT_EQ(v["sampling"]["temperature"], 0.0);
  EXPECT_EQ(v["sampling"]["seed"], 7);
  EXPECT_EQ(v["serve"]["max_body"], 1000000);
  EXPECT_EQ(v["serve"]["api_key"], "<redacted>");
  EXPECT_EQ(v["serve"]["elastic"]["lanes"], 1);
  const nlohmann::json& p = j["provenance"];
  EXPECT_EQ(p["experts.cache"], "-o");
  EXPECT_EQ(p["runtime.context"], f + ":6");
  EXPECT_EQ(p["plugins.cuda.tuning.tiles"], f + ":3");
  EXPECT_EQ(p["serve.queue"], "default");

  const nlohmann::json d = nlohmann::json::parse(cfg::render_json(cfg::defaults()));
  EXPECT_EQ(d["launch"]["experts"]["cache"], "auto");
  EXPECT_EQ(d["launch"]["experts"]["pcie_frac"], "auto");
  EXPECT_EQ(d["file"], nullptr);
  EXPECT_EQ(cfg::render_json(cfg::load({}, {}, {"experts.cache=25%"})).find("\"cache\": \"25%\"") != std::string::npos,
            true);
}
