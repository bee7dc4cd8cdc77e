// Launch files: a full valid file, and every kind of error with its exact FILE:LINE:COLUMN.
#include <gtest/gtest.h>

#include "config_test_files.hpp"
#include "strata/config.hpp"
#include "strata/error.hpp"

namespace cfg = strata::config;
using strata::test::TempDir;

namespace {

std::vector<std::string> texts(const std::vector<cfg::Diagnostic>& diagnostics) {
  std::vector<std::string> out;
  for (const cfg::Diagnostic& d : diagnostics) out.push_back(d.text());
  return out;
}

// The diagnostics of a launch file holding `yaml` (written as launch.yaml in `dir`).
std::vector<std::string> check_yaml(const TempDir& dir, const std::string& yaml) {
  return texts(cfg::check_file(dir.write("launch.yaml", yaml), {}, {}));
}

}  // namespace

TEST(ConfigFile, FullValidFile) {
  TempDir dir;
  dir.write("models/m.gguf", "GGUF");
  dir.write("launch/prof.bin", "p");
  std::filesystem::create_directories(dir.path() / "launch" / "plugins");
  const std::string abs_plugins = (dir.path() / "extra").string();
  std::filesystem::create_directories(abs_plugins);
  const auto file = dir.write("launch/launch.yaml",
                              "# a full launch\n"
                              "model: ../models/m.gguf\n"
                              "plugin_path: [plugins, " + abs_plugins + "]\n"
                              "backend: cuda\n"
                              "plugins:\n"
                              "  cpu_avx2: {workers: 15, host_worker: true}\n"
                              "  cuda: {device: 0, graphs: true}\n"
                              "  pcie_balance: {enabled: false}\n"
                              "experts: {cache: 25%, pcie_frac: 0.3, adapt_swaps: 0, policy: lru, profile: prof.bin,\n"
                              "          peer_hot: 0.45}\n"
                              "runtime:\n"
                              "  context: 32768\n"
                              "  kv_type: q8_0\n"
                              "  slots: 2\n"
                              "  threads: 8\n"
                              "  batch: 256\n"
                              "  peer_device: 1\n"
                              "  layer_split: 24\n"
                              "  graphs: no\n"
                              "sampling: {temperature: 0, top_k: 0, top_p: 1, min_p: 0, repeat_penalty: 1.1,\n"
                              "           repeat_last_n: 0, seed: 0x2A, n_predict: -1}\n"
                              "serve:\n"
                              "  host: 0.0.0.0\n"
                              "  port: 9000\n"
                              "  api_key: \"s3cret\"\n"
                              "  queue: 0\n"
                              "  request_timeout_s: 60\n"
                              "  idle_timeout_s: 0\n"
                              "  max_body: 1.5MiB\n"
                              "  elastic: {lanes: 2, hold_s: 12.5}\n");
  const std::vector<cfg::Diagnostic> d = cfg::check_file(file, {}, {});
  for (const cfg::Diagnostic& x : d) ADD_FAILURE() << x.text();

  const cfg::Launch l = cfg::load(file, {}, {});
  EXPECT_EQ(l.file, file.string());
  EXPECT_EQ(*l.model, (dir.path() / "models" / "m.gguf").string());
  ASSERT_EQ(l.plugin_path.size(), 2u);
  EXPECT_EQ(l.plugin_path[0], (dir.path() / "launch" / "plugins").string());
  EXPECT_EQ(l.plugin_path[1], abs_plugins);
  EXPECT_EQ(l.backend, "cuda");
  ASSERT_EQ(l.plugins.size(), 3u);
  EXPECT_EQ(l.plugins[0].name, "cpu_avx2");
  EXPECT_TRUE(l.plugins[0].enabled);
  EXPECT_EQ(l.plugins[0].flattened(), (std::vector<std::string>{"workers=15", "host_worker=true"}));
  EXPECT_EQ(l.plugins[1].name, "cuda");
  EXPECT_EQ(l.plugins[1].flattened(), (std::vector<std::string>{"device=0", "graphs=true"}));
  EXPECT_EQ(l.plugins[2].name, "pcie_balance");
  EXPECT_FALSE(l.plugins[2].enabled);
  EXPECT_TRUE(l.plugins[2].options.empty());
  EXPECT_EQ(l.plugin("cuda"), &l.plugins[1]);
  EXPECT_EQ(l.plugin("hip"), nullptr);

  EXPECT_EQ(l.experts.cache.kind, cfg::CacheSize::Kind::Percent);
  EXPECT_EQ(l.experts.cache.percent, 25.0);
  EXPECT_EQ(l.experts.pcie_frac, 0.3);
  EXPECT_EQ(l.experts.adapt_swaps, 0);
  EXPECT_EQ(l.experts.policy, cfg::CachePolicy::Lru);
  EXPECT_EQ(*l.experts.profile, (dir.path() / "launch" / "prof.bin").string());
  EXPECT_EQ(l.experts.peer_hot, 0.45);

  EXPECT_EQ(l.runtime, (cfg::RuntimeConfig{32768, cfg::KvType::Q8_0, 2, 8, 256, 1, 24, false}));
  EXPECT_EQ(l.sampling, (cfg::SamplingConfig{0.0, 0, 1.0, 0.0, 1.1, 0, 42, -1}));
  EXPECT_EQ(l.serve.host, "0.0.0.0");
  EXPECT_EQ(l.serve.port, 9000);
  EXPECT_EQ(l.serve.api_key, "s3cret");
  EXPECT_EQ(l.serve.queue, 0);
  EXPECT_EQ(l.serve.request_timeout_s, 60.0);
  EXPECT_EQ(l.serve.idle_timeout_s, 0.0);
  EXPECT_EQ(l.serve.max_body, 1572864u);
  EXPECT_EQ(l.serve.elastic, (cfg::ElasticConfig{2, 12.5}));

  const std::string f = file.string();
  EXPECT_EQ(l.from("model").text(), f + ":2");
  EXPECT_EQ(l.from("experts.peer_hot").text(), f + ":10");
  EXPECT_EQ(l.from("runtime.graphs").text(), f + ":19");
  EXPECT_EQ(l.from("serve.elastic.hold_s").text(), f + ":30");
  EXPECT_EQ(l.from("plugins.cuda.device").text(), f + ":7");
  EXPECT_EQ(l.from("plugins.cuda.enabled").text(), "default");
  EXPECT_EQ(l.from("plugins.pcie_balance.enabled").text(), f + ":8");
  EXPECT_EQ(l.from("plugins.pcie_balance.enabled").column, 27);
}

TEST(ConfigFile, RelativePathsResolveAgainstTheFilesFolder) {
  TempDir dir;
  dir.write("a/b/m.gguf", "GGUF");
  dir.write("a/conf/launch.yaml", "model: ../b/./m.gguf\nexperts: {profile: sub/../p.bin}\n");
  dir.write("a/conf/p.bin", "p");
  const cfg::Launch l = cfg::load(dir.path() / "a" / "conf" / "launch.yaml", {}, {});
  EXPECT_EQ(*l.model, (dir.path() / "a" / "b" / "m.gguf").string());
  EXPECT_EQ(*l.experts.profile, (dir.path() / "a" / "conf" / "p.bin").string());
}

TEST(ConfigFile, SyntaxErrorWithItsPosition) {
  TempDir dir;
  const std::string f = (dir.path() / "launch.yaml").string();
  EXPECT_EQ(check_yaml(dir, "runtime: [1\nmodel: x\n"),
            std::vector<std::string>{f + ":2:6: YAML syntax error: end of sequence flow not found"});
  EXPECT_EQ(check_yaml(dir, "runtime: context: 5\n"),
            std::vector<std::string>{f + ":1:17: YAML syntax error: illegal map value"});
  EXPECT_EQ(check_yaml(dir, "a: *nothing\n"),
            std::vector<std::string>{f + ":1:4: YAML syntax error: the referenced anchor is not defined"});
}

// yaml-cpp gives up on deep nesting with "bad file"; the message says what is wrong instead.
TEST(ConfigFile, NestingTooDeepIsNamed) {
  TempDir dir;
  const std::vector<std::string> d = check_yaml(dir, "plugins:\n  cuda:\n    x: " + std::string(5000, '[') + "\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].find("YAML nested too deeply"), std::string::npos) << d[0];
  EXPECT_EQ(d[0].find("bad file"), std::string::npos) << d[0];
}

TEST(ConfigFile, EmptyFileOrTopLevelNotAMap) {
  TempDir dir;
  const std::string f = (dir.path() / "launch.yaml").string();
  const std::string empty = f + ":1:1: the file is empty: a launch is a YAML map of keys such as model, backend, "
                                "plugins, experts, runtime (see configs/default.yaml)";
  EXPECT_EQ(check_yaml(dir, ""), std::vector<std::string>{empty});
  EXPECT_EQ(check_yaml(dir, "# only a comment\n\n"), std::vector<std::string>{empty});
  EXPECT_EQ(check_yaml(dir, "\n- model\n- backend\n"),
            std::vector<std::string>{f + ":2:1: the top level must be a map: a launch is a YAML map of keys such as "
                                         "model, backend, plugins, experts, runtime, not a list"});
  EXPECT_EQ(check_yaml(dir, "just words\n"),
            std::vector<std::string>{f + ":1:1: the top level must be a map: a launch is a YAML map of keys such as "
                                         "model, backend, plugins, experts, runtime, not 'just words'"});
  EXPECT_EQ(check_yaml(dir, "backend: auto\n---\nbackend: cuda\n"),
            std::vector<std::string>{f + ":3:1: a launch is one YAML document, this file has 2: remove all but the first"});
}

TEST(ConfigFile, LaunchFileItselfMissing) {
  TempDir dir;
  const auto missing = dir.path() / "nope.yaml";
  EXPECT_EQ(texts(cfg::check_file(missing, {}, {})),
            std::vector<std::string>{missing.string() + ": launch file not found"});
  EXPECT_EQ(texts(cfg::check_file(dir.path(), {}, {})),
            std::vector<std::string>{dir.path().string() + ": is a folder, expected a YAML launch file"});
}

TEST(ConfigFile, EachSchemaErrorKindAtItsPosition) {
  TempDir dir;
  const std::string f = (dir.path() / "launch.yaml").string() + ":";
  // unknown key with a suggestion, with a key from another section, without anything near
  EXPECT_EQ(check_yaml(dir, "backend: auto\nexpetrs: {cache: 8GiB}\n"),
            std::vector<std::string>{f + "2:1: unknown key 'expetrs' (did you mean 'experts'?)"});
  EXPECT_EQ(check_yaml(dir, "runtime:\n  contxet: 5\n"),
            std::vector<std::string>{f + "2:3: unknown key 'runtime.contxet' (did you mean 'runtime.context'?)"});
  EXPECT_EQ(check_yaml(dir, "context: 8192\n"),
            std::vector<std::string>{f + "1:1: unknown key 'context' (did you mean 'runtime.context'?)"});
  EXPECT_EQ(check_yaml(dir, "serve:\n  elastic:\n    wibble: 1\n"),
            std::vector<std::string>{f + "3:5: unknown key 'serve.elastic.wibble'; the keys of serve.elastic are "
                                         "lanes, hold_s"});
  EXPECT_EQ(check_yaml(dir, "zzz: 1\n"),
            std::vector<std::string>{f + "1:1: unknown key 'zzz'; the top-level keys are model, mmproj, plugin_path, backend, "
                                         "plugins, experts, runtime, sampling, speculative, serve"});
  // wrong type
  EXPECT_EQ(check_yaml(dir, "runtime:\n  context: big\n"),
            std::vector<std::string>{f + "2:12: runtime.context: expected an integer, got 'big'"});
  EXPECT_EQ(check_yaml(dir, "runtime: {graphs: maybe}\n"),
            std::vector<std::string>{f + "1:19: runtime.graphs: expected true or false, got 'maybe'"});
  EXPECT_EQ(check_yaml(dir, "sampling:\n  temperature: [1]\n"),
            std::vector<std::string>{f + "2:16: sampling.temperature: expected a number >= 0, got a list"});
  EXPECT_EQ(check_yaml(dir, "experts: 3\n"),
            std::vector<std::string>{f + "1:10: experts: expected a map of keys, got '3'"});
  EXPECT_EQ(check_yaml(dir, "model: {a: 1}\n"),
            std::vector<std::string>{f + "1:8: model: expected a path, got a map"});
  EXPECT_EQ(check_yaml(dir, "runtime:\n  context:\n"),
            std::vector<std::string>{f + "2:3: runtime.context: has no value: expected an integer >= 16"});
  EXPECT_EQ(check_yaml(dir, "runtime: {threads: 1.5}\n"),
            std::vector<std::string>{f + "1:20: runtime.threads: expected an integer, got '1.5'"});
  EXPECT_EQ(check_yaml(dir, "sampling: {seed: 99999999999999999999}\n"),
            std::vector<std::string>{f + "1:18: sampling.seed: '99999999999999999999' is too large for a 64-bit integer"});
  EXPECT_EQ(check_yaml(dir, "backend: \"\"\n"),
            std::vector<std::string>{f + "1:10: backend: is empty (leave the key out to use the default)"});
  EXPECT_EQ(check_yaml(dir, "[a]: 1\n"),
            std::vector<std::string>{f + "1:1: a key must be a plain word, not a list"});
  // out of range
  EXPECT_EQ(check_yaml(dir, "runtime:\n  slots: 100\n"),
            std::vector<std::string>{f + "2:10: runtime.slots: 100 is out of range: must be 1..64"});
  EXPECT_EQ(check_yaml(dir, "runtime: {context: 15}\n"),
            std::vector<std::string>{f + "1:20: runtime.context: 15 is out of range: must be >= 16"});
  EXPECT_EQ(check_yaml(dir, "sampling: {repeat_penalty: 0}\n"),
            std::vector<std::string>{f + "1:28: sampling.repeat_penalty: '0' is out of range: must be > 0"});
  EXPECT_EQ(check_yaml(dir, "experts: {pcie_frac: 1.5}\n"),
            std::vector<std::string>{f + "1:22: experts.pcie_frac: '1.5' is out of range: must be 0..1"});
  EXPECT_EQ(check_yaml(dir, "sampling: {top_p: .nan}\n"),
            std::vector<std::string>{f + "1:19: sampling.top_p: expected a number, got '.nan'"});
  EXPECT_EQ(check_yaml(dir, "serve: {max_body: 12XB}\n"),
            std::vector<std::string>{f + "1:19: serve.max_body: '12XB' has an unknown unit 'XB': use B, KiB, MiB, "
                                         "GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000)"});
  // bad enum
  EXPECT_EQ(check_yaml(dir, "experts:\n  policy: lr\n"),
            std::vector<std::string>{f + "2:11: experts.policy: 'lr' is not one of: lru, lfu (did you mean 'lru'?)"});
  EXPECT_EQ(check_yaml(dir, "runtime: {kv_type: int4}\n"),
            std::vector<std::string>{f + "1:20: runtime.kv_type: 'int4' is not one of: f16, q8_0"});
  // duplicate keys, which yaml-cpp itself accepts
  EXPECT_EQ(check_yaml(dir, "runtime:\n  context: 1024\n  slots: 1\n  context: 2048\n"),
            std::vector<std::string>{f + "4:3: duplicate key 'runtime.context' (first given at line 2); keep one"});
  EXPECT_EQ(check_yaml(dir, "backend: a\nbackend: b\n"),
            std::vector<std::string>{f + "2:1: duplicate key 'backend' (first given at line 1); keep one"});
  // plugins
  EXPECT_EQ(check_yaml(dir, "plugins:\n  cuda: 3\n"),
            std::vector<std::string>{f + "2:9: plugins.cuda: expected a map of keys (e.g. {enabled: false}), got '3'"});
  EXPECT_EQ(check_yaml(dir, "plugins:\n  cuda: {enabled: sometimes}\n"),
            std::vector<std::string>{f + "2:19: plugins.cuda.enabled: expected true or false, got 'sometimes'"});
  EXPECT_EQ(check_yaml(dir, "plugins:\n  \"two words\": {}\n"),
            std::vector<std::string>{f + "2:3: plugins: 'two words' is not a plugin name (letters, digits, '_' and '-')"});
  EXPECT_EQ(check_yaml(dir, "plugins:\n  cuda: {tiles: [1, [2]]}\n"),
            std::vector<std::string>{f + "2:21: plugins.cuda.tiles: a list in a plugin option may hold only plain "
                                         "values without commas, got a list"});
  EXPECT_EQ(check_yaml(dir, "plugins:\n  cuda: {a: {b: 1, b: 2}}\n"),
            std::vector<std::string>{f + "2:20: duplicate key 'plugins.cuda.a.b' (first given at line 2); keep one"});
}

TEST(ConfigFile, AllErrorsReportedSchemaBeforeMissingFiles) {
  TempDir dir;
  const auto file = dir.write("launch.yaml",
                              "model: m.gguf\n"              // 1: missing file
                              "expetrs:\n"                   // 2: unknown key
                              "  cache: 8GiB\n"
                              "runtime:\n"
                              "  context: big\n"             // 5: wrong type
                              "  slots: 100\n"               // 6: out of range
                              "  context: 8192\n"            // 7: duplicate
                              "plugin_path: [nope, sub]\n"   // 8: missing folders (sub is a file)
                              "backend: cuda\n"              // 9: conflict with line 12
                              "experts:\n"
                              "  profile: nothere.bin\n"     // 11: missing file
                              "plugins: {cuda: {enabled: false}}\n"
                              "sampling: {top_p: 2}\n");     // 13: out of range
  dir.write("sub", "a file, not a folder");
  const std::string f = file.string() + ":";
  const std::string d = dir.path().string() + "/";
  EXPECT_EQ(texts(cfg::check_file(file, {}, {})),
            (std::vector<std::string>{
                f + "2:1: unknown key 'expetrs' (did you mean 'experts'?)",
                f + "5:12: runtime.context: expected an integer, got 'big'",
                f + "6:10: runtime.slots: 100 is out of range: must be 1..64",
                f + "7:3: duplicate key 'runtime.context' (first given at line 5); keep one",
                f + "13:19: sampling.top_p: '2' is out of range: must be 0..1",
                f + "9:10: backend: 'cuda' is disabled by plugins.cuda.enabled (" + f + "12:27): enable it or choose "
                    "another backend",
                f + "1:8: model: file not found: " + d + "m.gguf",
                f + "8:15: plugin_path: folder not found: " + d + "nope",
                f + "8:21: plugin_path: " + d + "sub is a file, expected a folder",
                f + "11:12: experts.profile: file not found: " + d + "nothere.bin",
            }));
  try {
    cfg::load(file, {}, {});
    ADD_FAILURE() << "load accepted a broken launch";
  } catch (const strata::Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(f + "2:1: unknown key 'expetrs'", 0), 0u) << what;
    EXPECT_EQ(std::count(what.begin(), what.end(), '\n'), 9);
    EXPECT_EQ(what.substr(what.rfind('\n') + 1), f + "11:12: experts.profile: file not found: " + d + "nothere.bin");
  }
}

TEST(ConfigFile, ModelThatIsAFolder) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "models");
  EXPECT_EQ(check_yaml(dir, "model: models\n"),
            std::vector<std::string>{(dir.path() / "launch.yaml").string() + ":1:8: model: " +
                                     (dir.path() / "models").string() + " is a folder, expected a file"});
}

namespace {

TEST(ConfigFile, ArenaFolderMustExist) {
  TempDir dir;
  const std::string d = dir.path().string() + "/";
  const std::vector<std::string> got = check_yaml(dir, "experts:\n  arena: nofolder/arena.bin\n");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NE(got[0].find("experts.arena: folder not found: " + d + "nofolder (the arena file is made in that folder"),
            std::string::npos)
      << got[0];
  EXPECT_TRUE(check_yaml(dir, "experts:\n  arena: arena.bin\n").empty());
}

}  // namespace
