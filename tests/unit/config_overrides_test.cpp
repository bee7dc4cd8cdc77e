// Precedence (defaults < file < environment < -o) with provenance; environment switches; -o syntax; plugin
// option flattening.
#include <gtest/gtest.h>

#include "config_test_files.hpp"
#include "strata/config.hpp"

namespace cfg = strata::config;
using strata::test::TempDir;

namespace {

std::vector<std::string> texts(const std::vector<cfg::Diagnostic>& diagnostics) {
  std::vector<std::string> out;
  for (const cfg::Diagnostic& d : diagnostics) out.push_back(d.text());
  return out;
}

}  // namespace

TEST(ConfigOverrides, PrecedenceDefaultsFileEnvironmentOverride) {
  TempDir dir;
  const auto file = dir.write("launch.yaml",
                              "runtime:\n"
                              "  context: 1024\n"
                              "  threads: 2\n"
                              "  slots: 2\n"
                              "experts: {peer_hot: 0.25}\n");
  const std::string f = file.string();

  const cfg::Launch only_file = cfg::load(file, {}, {});
  EXPECT_EQ(only_file.runtime.context, 1024);
  EXPECT_EQ(only_file.from("runtime.context").text(), f + ":2");
  EXPECT_EQ(only_file.runtime.batch, 4096);
  EXPECT_EQ(only_file.from("runtime.batch").text(), "default");

  const cfg::Environment env = {{"STRATA_CONTEXT", "2048"}, {"STRATA_THREADS", "6"}, {"HOME", "/x"}};
  const cfg::Launch with_env = cfg::load(file, env, {});
  EXPECT_EQ(with_env.runtime.context, 2048);
  EXPECT_EQ(with_env.from("runtime.context").text(), "environment STRATA_CONTEXT");
  EXPECT_EQ(with_env.runtime.threads, 6);
  EXPECT_EQ(with_env.runtime.slots, 2);
  EXPECT_EQ(with_env.from("runtime.slots").text(), f + ":4");

  const cfg::Launch with_o = cfg::load(file, env, {"runtime.context=4096", "experts.peer_hot=0.75"});
  EXPECT_EQ(with_o.runtime.context, 4096);
  EXPECT_EQ(with_o.from("runtime.context").text(), "-o");
  EXPECT_EQ(with_o.runtime.threads, 6);
  EXPECT_EQ(with_o.from("runtime.threads").text(), "environment STRATA_THREADS");
  EXPECT_EQ(with_o.experts.peer_hot, 0.75);
  EXPECT_EQ(with_o.runtime.slots, 2);

  // A later -o wins over an earlier one.
  const cfg::Launch twice = cfg::load(file, {}, {"runtime.context=100", "runtime.context=200"});
  EXPECT_EQ(twice.runtime.context, 200);
  // Without a file: defaults, then the environment and -o.
  const cfg::Launch no_file = cfg::load({}, {{"STRATA_PEER_HOT", "0.1"}}, {});
  EXPECT_EQ(no_file.experts.peer_hot, 0.1);
  EXPECT_EQ(no_file.from("experts.peer_hot").text(), "environment STRATA_PEER_HOT");
  EXPECT_EQ(no_file.file, "");
}

TEST(ConfigOverrides, EnvironmentSwitchesFromTheSeeds) {
  const cfg::Environment env = {{"STRATA_PCIE_BALANCE", "1"},
                                {"STRATA_FORCE_AVX2", "1"},
                                {"STRATA_BACKEND", "cpu_avx2"},
                                {"STRATA_MODEL", ""},  // empty = unset
                                {"STRATA_LOG", "debug"}};
  const std::vector<cfg::Diagnostic> d = cfg::check_file({}, env, {});
  EXPECT_TRUE(d.empty()) << (d.empty() ? "" : d.front().text());
  const cfg::Launch l = cfg::load({}, env, {});
  ASSERT_NE(l.plugin("pcie_balance"), nullptr);
  EXPECT_TRUE(l.plugin("pcie_balance")->enabled);
  EXPECT_EQ(l.from("plugins.pcie_balance.enabled").text(), "environment STRATA_PCIE_BALANCE");
  ASSERT_NE(l.plugin("cpu_avx2"), nullptr);
  EXPECT_EQ(l.plugin("cpu_avx2")->flattened(), std::vector<std::string>{"force_avx2=1"});
  EXPECT_EQ(l.from("plugins.cpu_avx2.force_avx2").text(), "environment STRATA_FORCE_AVX2");
  EXPECT_EQ(l.backend, "cpu_avx2");
  EXPECT_FALSE(l.model.has_value());

  const cfg::Launch off = cfg::load({}, {{"STRATA_PCIE_BALANCE", "0"}}, {});
  EXPECT_FALSE(off.plugin("pcie_balance")->enabled);
}

TEST(ConfigOverrides, EnvironmentErrorsNameTheVariable) {
  const cfg::Environment env = {{"STRATA_PEER_HOT", "hot"}, {"STRATA_CONTEXT", "8"}, {"STRATA_PCIE_BALANCE", "yep"}};
  EXPECT_EQ(texts(cfg::check_file({}, env, {})),
            (std::vector<std::string>{
                "environment STRATA_PCIE_BALANCE: plugins.pcie_balance.enabled: expected true or false, got 'yep'",
                "environment STRATA_PEER_HOT: experts.peer_hot: expected a number, got 'hot'",
                "environment STRATA_CONTEXT: runtime.context: 8 is out of range: must be >= 16",
            }));
}

TEST(ConfigOverrides, MisspeltSwitchIsAWarningNotAnError) {
  const cfg::Environment env = {{"STRATA_PCIE_BALANSE", "1"}};
  const std::vector<cfg::Diagnostic> d = cfg::check_file({}, env, {});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].severity, cfg::Diagnostic::Severity::Warning);
  EXPECT_EQ(d[0].text(),
            "environment STRATA_PCIE_BALANSE: warning: not a launch switch, ignored (did you mean "
            "'STRATA_PCIE_BALANCE'?)");
  EXPECT_NO_THROW(cfg::load({}, env, {}));
}

TEST(ConfigOverrides, PluginPathFromTheEnvironmentIsColonSeparated) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "p1");
  std::filesystem::create_directories(dir.path() / "p2");
  const std::string p1 = (dir.path() / "p1").string(), p2 = (dir.path() / "p2").string();
  const cfg::Launch l = cfg::load({}, {{"STRATA_PLUGIN_PATH", p1 + ":" + p2 + ":"}}, {});
  EXPECT_EQ(l.plugin_path, (std::vector<std::string>{p1, p2}));
  EXPECT_EQ(texts(cfg::check_file({}, {{"STRATA_PLUGIN_PATH", p1 + ":" + p1 + "/none"}}, {})),
            std::vector<std::string>{"environment STRATA_PLUGIN_PATH: plugin_path: folder not found: " + p1 + "/none"});
}

TEST(ConfigOverrides, BadOverrideSyntax) {
  EXPECT_EQ(texts(cfg::check_file({}, {}, {"foo"})),
            std::vector<std::string>{"-o foo: expected KEY=VALUE, e.g. -o runtime.context=8192 or -o "
                                     "plugins.cuda.enabled=false"});
  EXPECT_EQ(texts(cfg::check_file({}, {}, {"=3"})),
            std::vector<std::string>{"-o =3: expected KEY=VALUE, e.g. -o runtime.context=8192 or -o "
                                     "plugins.cuda.enabled=false"});
  EXPECT_EQ(texts(cfg::check_file({}, {}, {"runtime..context=3"})),
            std::vector<std::string>{"-o runtime..context=3: 'runtime..context' is not a key path: write the keys "
                                     "joined by single dots, e.g. experts.cache"});
  EXPECT_EQ(texts(cfg::check_file({}, {}, {"runtime.context=[1"})),
            std::vector<std::string>{"-o runtime.context=[1: runtime.context: the value is not valid YAML (end of "
                                     "sequence flow not found): put quotes around a plain string"});
  // Past yaml-cpp's depth limit (its own message: "bad file").
  const std::vector<std::string> deep = texts(cfg::check_file({}, {}, {"runtime.context=" + std::string(5000, '[')}));
  ASSERT_EQ(deep.size(), 1u);
  EXPECT_NE(deep[0].find("the value is not valid YAML (nested too deeply"), std::string::npos) << deep[0];
}

TEST(ConfigOverrides, OverrideValuesAreCheckedLikeFileValues) {
  EXPECT_EQ(texts(cfg::check_file({}, {}, {"expert.cache=8GiB"})),
            std::vector<std::string>{"-o expert.cache=8GiB: unknown key 'expert' (did you mean 'experts'?)"});
  EXPECT_EQ(texts(cfg::check_file({}, {}, {"experts.cahce=8GiB"})),
            std::vector<std::string>{"-o experts.cahce=8GiB: unknown key 'experts.cahce' (did you mean "
                                     "'experts.cache'?)"});
  EXPECT_EQ(texts(cfg::check_file({}, {}, {"runtime.context.max=3"})),
            std::vector<std::string>{"-o runtime.context.max=3: 'runtime.context' is a single value, not a section: "
                                     "set it as runtime.context=VALUE"});
  EXPECT_EQ(texts(cfg::check_file({}, {}, {"runtime.slots=0"})),
            std::vector<std::string>{"-o runtime.slots=0: runtime.slots: 0 is out of range: must be 1..64"});
  EXPECT_EQ(texts(cfg::check_file({}, {}, {"runtime.context="})),
            std::vector<std::string>{"-o runtime.context=: runtime.context: has no value: expected an integer >= 16"});
  EXPECT_EQ(texts(cfg::check_file({}, {}, {"experts={cache: 1%, policy: mru}"})),
            std::vector<std::string>{"-o experts={cache: 1%, policy: mru}: experts.policy: 'mru' is not one of: "
                                     "lru, lfu (did you mean 'lru'?)"});
  // Errors in several overrides come in the order they were given.
  EXPECT_EQ(texts(cfg::check_file({}, {}, {"runtime.slots=x", "foo", "sampling.top_k=-1"})),
            (std::vector<std::string>{
                "-o runtime.slots=x: runtime.slots: expected an integer, got 'x'",
                "-o foo: expected KEY=VALUE, e.g. -o runtime.context=8192 or -o plugins.cuda.enabled=false",
                "-o sampling.top_k=-1: sampling.top_k: -1 is out of range: must be >= 0",
            }));
}

TEST(ConfigOverrides, OverridesSetSectionsListsAndClearOptionalValues) {
  TempDir dir;
  const auto file = dir.write("launch.yaml", "serve: {api_key: k}\n");
  const cfg::Launch l = cfg::load(file, {}, {"experts={cache: 8GiB, policy: lru}", "serve.api_key=~",
                                            "plugin_path=[" + dir.path().string() + "]", "serve.host=\"::1\""});
  EXPECT_EQ(l.experts.cache.bytes, 8ull << 30);
  EXPECT_EQ(l.experts.policy, cfg::CachePolicy::Lru);
  EXPECT_EQ(l.from("experts.cache").text(), "-o");
  EXPECT_FALSE(l.serve.api_key.has_value());
  EXPECT_EQ(l.from("serve.api_key").text(), "-o");
  EXPECT_EQ(l.plugin_path, std::vector<std::string>{dir.path().string()});
  EXPECT_EQ(l.serve.host, "::1");
}

TEST(ConfigOverrides, RelativeOverridePathsResolveAgainstTheWorkingDirectory) {
  const cfg::Launch l = cfg::load({}, {}, {"plugin_path=."});
  EXPECT_EQ(l.plugin_path,
            std::vector<std::string>{(std::filesystem::current_path() / ".").lexically_normal().string()});
}

TEST(ConfigOverrides, PluginOptionsAreFlattened) {
  TempDir dir;
  const auto file = dir.write("launch.yaml",
                              "plugins:\n"
                              "  cuda:\n"
                              "    device: 0\n"
                              "    tuning: {block: 128, tiles: [1, 2, 4], deep: {er: x}}\n"
                              "    empty_list: []\n"
                              "    nothing:\n"
                              "    quoted: \"a: b\"\n"
                              "  hip: {enabled: false}\n"
                              "  peerlink:\n");
  const cfg::Launch l = cfg::load(file, {}, {"plugins.cuda.device=1", "plugins.cuda.extra.key=on",
                                             "plugins.cuda.expert_cache=8GiB", "plugins.newone.x={y: [a, b]}"});
  ASSERT_EQ(l.plugins.size(), 4u);
  EXPECT_EQ(l.plugins[0].flattened(),
            (std::vector<std::string>{"device=1", "tuning.block=128", "tuning.tiles=1,2,4", "tuning.deep.er=x",
                                      "empty_list=", "nothing=", "quoted=a: b", "extra.key=on",
                                      "expert_cache=8GiB"}));
  EXPECT_EQ(l.from("plugins.cuda.device").text(), "-o");
  EXPECT_EQ(l.from("plugins.cuda.tuning.block").text(), file.string() + ":4");
  EXPECT_EQ(l.plugins[1].name, "hip");
  EXPECT_FALSE(l.plugins[1].enabled);
  EXPECT_EQ(l.plugins[2].name, "peerlink");
  EXPECT_TRUE(l.plugins[2].enabled);
  EXPECT_TRUE(l.plugins[2].options.empty());
  EXPECT_EQ(l.plugins[3].name, "newone");
  EXPECT_EQ(l.plugins[3].flattened(), std::vector<std::string>{"x.y=a,b"});

  EXPECT_EQ(texts(cfg::check_file({}, {}, {"plugins.cuda.a=b=c"})), std::vector<std::string>{});
  EXPECT_EQ(cfg::load({}, {}, {"plugins.cuda.a=b=c"}).plugin("cuda")->flattened(), std::vector<std::string>{"a=b=c"});
  EXPECT_EQ(texts(cfg::check_file({}, {}, {"plugins.cuda.enabled=perhaps"})),
            std::vector<std::string>{"-o plugins.cuda.enabled=perhaps: plugins.cuda.enabled: expected true or false, "
                                     "got 'perhaps'"});
  EXPECT_EQ(texts(cfg::check_file({}, {}, {"plugins.cuda.list=[a, 'b,c']"})),
            std::vector<std::string>{"-o plugins.cuda.list=[a, 'b,c']: plugins.cuda.list: a list in a plugin option "
                                     "may hold only plain values without commas, got 'b,c'"});
}
