// The schema table: its defaults, the reference generated from it, and the environment table's keys.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "strata/config.hpp"

namespace cfg = strata::config;

TEST(ConfigSchema, DefaultsAreTheDocumentedOnes) {
  const cfg::Launch l = cfg::defaults();
  EXPECT_FALSE(l.model.has_value());
  EXPECT_TRUE(l.plugin_path.empty());
  EXPECT_EQ(l.backend, "auto");
  EXPECT_TRUE(l.plugins.empty());
  EXPECT_EQ(l.experts.cache.kind, cfg::CacheSize::Kind::Auto);
  EXPECT_FALSE(l.experts.pcie_frac.has_value());
  EXPECT_EQ(l.experts.adapt_swaps, 4);
  EXPECT_EQ(l.experts.policy, cfg::CachePolicy::Lfu);
  EXPECT_FALSE(l.experts.profile.has_value());
  EXPECT_EQ(l.experts.peer_hot, 0.5);
  EXPECT_EQ(l.runtime.context, 4096);
  EXPECT_EQ(l.runtime.kv_type, cfg::KvType::F16);
  EXPECT_EQ(l.runtime.slots, 1);
  EXPECT_EQ(l.runtime.threads, 0);
  EXPECT_EQ(l.runtime.batch, 4096);
  EXPECT_EQ(l.runtime.peer_device, -1);
  EXPECT_EQ(l.runtime.layer_split, 0);
  EXPECT_TRUE(l.runtime.graphs);
  EXPECT_EQ(l.sampling.temperature, 0.8);
  EXPECT_EQ(l.sampling.top_k, 40);
  EXPECT_EQ(l.sampling.top_p, 0.95);
  EXPECT_EQ(l.sampling.min_p, 0.05);
  EXPECT_EQ(l.sampling.repeat_penalty, 1.0);
  EXPECT_EQ(l.sampling.repeat_last_n, 64);
  EXPECT_EQ(l.sampling.seed, 1);
  EXPECT_EQ(l.sampling.n_predict, 256);
  EXPECT_EQ(l.serve.host, "127.0.0.1");
  EXPECT_EQ(l.serve.port, 8080);
  EXPECT_FALSE(l.serve.api_key.has_value());
  EXPECT_EQ(l.serve.queue, 64);
  EXPECT_EQ(l.serve.request_timeout_s, 600.0);
  EXPECT_EQ(l.serve.idle_timeout_s, 30.0);
  EXPECT_EQ(l.serve.max_body, 8u << 20);
  EXPECT_EQ(l.serve.elastic.lanes, 1);
  EXPECT_EQ(l.serve.elastic.hold_s, 30.0);
}

TEST(ConfigSchema, EveryValueOfTheDefaultsSaysDefault) {
  const cfg::Launch l = cfg::defaults();
  // One provenance per value key of the reference (sections and plugin wildcards have none).
  size_t values = 0;
  for (const cfg::KeyReference& row : cfg::reference()) {
    if (row.type == "section" || row.key.rfind("plugins", 0) == 0) continue;
    ++values;
    ASSERT_EQ(l.provenance.count(row.key), 1u) << row.key;
    EXPECT_EQ(l.from(row.key).text(), "default") << row.key;
  }
  EXPECT_EQ(values, l.provenance.size());
  EXPECT_EQ(values, 46u);
}

TEST(ConfigSchema, NoFileAndNoOverridesIsClean) {
  EXPECT_TRUE(cfg::check_file({}, {}, {}).empty());
}

TEST(ConfigSchema, ReferenceMarkdownHasEveryKeyAndSwitch) {
  const std::string md = cfg::reference_markdown();
  EXPECT_NE(md.find("| key | type | default | description |"), std::string::npos);
  EXPECT_NE(md.find("| `runtime.context` | int >= 16 | `4096` | context length in tokens |"), std::string::npos);
  EXPECT_NE(md.find("| `experts.policy` | one of: lru, lfu | `lfu` |"), std::string::npos);
  EXPECT_NE(md.find("| `experts.pcie_frac` | auto or float 0..1 | `auto` |"), std::string::npos);
  EXPECT_NE(md.find("| `sampling.repeat_penalty` | float > 0 | `1.0` |"), std::string::npos);
  EXPECT_NE(md.find("| `serve.elastic.lanes` | int 1..2 | `1` |"), std::string::npos);
  EXPECT_NE(md.find("| `model` | path | (not set) |"), std::string::npos);
  EXPECT_NE(md.find("| `plugins.<name>.enabled` | bool | `true` |"), std::string::npos);
  EXPECT_NE(md.find("| `plugins.<name>.<option>` |"), std::string::npos);
  for (const cfg::KeyReference& row : cfg::reference())
    EXPECT_NE(md.find("| `" + row.key + "` |"), std::string::npos) << row.key;
  for (const cfg::EnvSwitch& s : cfg::environment_switches())
    EXPECT_NE(md.find("| `" + s.variable + "` | `" + s.key + "` |"), std::string::npos) << s.variable;
}

TEST(ConfigSchema, EveryEnvironmentSwitchNamesAKnownKey) {
  for (const cfg::EnvSwitch& s : cfg::environment_switches()) {
    for (const cfg::Diagnostic& d : cfg::check_file({}, {{s.variable, "1"}}, {})) {
      EXPECT_EQ(d.message.find("unknown key"), std::string::npos) << d.text();
      EXPECT_EQ(d.origin, "environment " + s.variable);
    }
  }
}

TEST(ConfigSchema, EnumNamesMapToTheirValues) {
  const cfg::Launch a = cfg::load({}, {}, {"experts.policy=lru", "runtime.kv_type=q8_0"});
  EXPECT_EQ(a.experts.policy, cfg::CachePolicy::Lru);
  EXPECT_EQ(a.runtime.kv_type, cfg::KvType::Q8_0);
  const cfg::Launch b = cfg::load({}, {}, {"experts.policy=lfu", "runtime.kv_type=f16"});
  EXPECT_EQ(b.experts.policy, cfg::CachePolicy::Lfu);
  EXPECT_EQ(b.runtime.kv_type, cfg::KvType::F16);
  EXPECT_NE(cfg::render_yaml(a).find("  policy: lru "), std::string::npos);
  EXPECT_NE(cfg::render_yaml(a).find("  kv_type: q8_0 "), std::string::npos);
}

TEST(ConfigSchema, ShippedConfigsPassCheck) {
  // The default launch runs the upcycled MoE; the CPU one the dense model.
  for (const auto& [name, model] : {std::pair{"default.yaml", "stories260K-moe.gguf"},
                                    std::pair{"cpu.yaml", "stories260K.gguf"}}) {
    const std::filesystem::path file = std::filesystem::path(STRATA_SOURCE_DIR) / "configs" / name;
    const std::vector<cfg::Diagnostic> d = cfg::check_file(file, {}, {});
    for (const cfg::Diagnostic& x : d) ADD_FAILURE() << x.text();
    const cfg::Launch l = cfg::load(file, {}, {});
    ASSERT_TRUE(l.model.has_value());
    EXPECT_EQ(std::filesystem::path(*l.model),
              (std::filesystem::path(STRATA_SOURCE_DIR) / "models" / model).lexically_normal());
    EXPECT_EQ(l.backend, "auto");
    EXPECT_EQ(l.sampling.temperature, 0.0);
  }
}

// The GPU launches too: they must load and check clean on any machine (the backend is chosen only when they run).
TEST(ConfigSchema, ShippedGpuAndGateConfigsPassCheck) {
  for (const char* name : {"cuda.yaml", "hybrid.yaml", "gate-default.yaml", "gate-cuda.yaml"}) {
    SCOPED_TRACE(name);
    const std::filesystem::path file = std::filesystem::path(STRATA_SOURCE_DIR) / "configs" / name;
    for (const cfg::Diagnostic& x : cfg::check_file(file, {}, {})) ADD_FAILURE() << x.text();
  }
  const cfg::Launch hybrid = cfg::load(std::filesystem::path(STRATA_SOURCE_DIR) / "configs" / "hybrid.yaml", {}, {});
  EXPECT_EQ(hybrid.backend, "cuda");
  EXPECT_EQ(hybrid.experts.cache.kind, cfg::CacheSize::Kind::Percent);
  EXPECT_EQ(hybrid.experts.cache.percent, 25.0);
  EXPECT_FALSE(hybrid.experts.pcie_frac.has_value()) << "auto: the link probe sets it";
}

TEST(ConfigSchema, DocsReferenceIsGeneratedFromTheSchema) {
  const std::string header =
      "# Configuration reference\n\n"
      "<!-- Generated from core/src/config/schema.cpp by strata::config::reference_markdown(); do not edit. -->\n\n";
  const std::string expected = header + cfg::reference_markdown();
  const std::filesystem::path doc = std::filesystem::path(STRATA_SOURCE_DIR) / "docs" / "CONFIG.md";
  std::ifstream in(doc, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (text.str() != expected) {
    const std::filesystem::path fresh = std::filesystem::temp_directory_path() / "strata-CONFIG.md";
    std::ofstream(fresh, std::ios::binary) << expected;
    ADD_FAILURE() << doc << " is out of date with the schema: the generated text is in " << fresh
                  << "; copy it over";
  }
}

TEST(ConfigSchema, ReadmeReferenceIsGeneratedFromTheSchema) {
  const std::filesystem::path readme = std::filesystem::path(STRATA_SOURCE_DIR) / "README.md";
  std::ifstream in(readme, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  const std::string begin = "<!-- config-reference:begin -->\n", end = "<!-- config-reference:end -->";
  const size_t a = s.find(begin), b = s.find(end);
  ASSERT_NE(a, std::string::npos) << "README.md lost its config-reference markers";
  ASSERT_NE(b, std::string::npos);
  EXPECT_EQ(s.substr(a + begin.size(), b - a - begin.size()), cfg::reference_markdown())
      << "README.md's configuration reference is out of date: paste the output of `strata config reference` "
         "between the markers";
}
