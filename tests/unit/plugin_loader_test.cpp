// The loader and registry against fake plugins built in tests/fake_plugins: every failure mode is rejected with
// a message naming the file and the reason, and the host keeps going.
#include <gtest/gtest.h>

#include <filesystem>

#include "error_text.hpp"
#include "strata/error.hpp"
#include "strata/plugin_host.hpp"

namespace fs = std::filesystem;
using strata::PluginCandidate;
using strata::PluginRegistry;
using strata::PluginSearchPath;

namespace {

PluginSearchPath path_of(std::initializer_list<const char*> folders) {
  PluginSearchPath p;
  for (const char* f : folders) {
    p.folders.push_back(fs::path(STRATA_FAKE_PLUGIN_DIR) / f);
    p.origins.push_back("test");
  }
  return p;
}

const PluginCandidate& only(const PluginRegistry& r) {
  EXPECT_EQ(r.candidates().size(), 1u);
  return r.candidates().at(0);
}


}  // namespace

TEST(PluginLoader, GoodPluginIsUsableAndListsDevices) {
  PluginRegistry r(path_of({"good"}));
  const auto& c = only(r);
  EXPECT_EQ(c.verdict, PluginCandidate::Verdict::Usable);
  EXPECT_EQ(c.name, "good");
  EXPECT_EQ(c.version, "0.0.1");
  EXPECT_EQ(c.kind, STRATA_KIND_BACKEND);
  EXPECT_EQ(c.score, 10u);
  auto inst = r.instantiate("good", {"devices=3"});
  auto devs = inst->devices();
  ASSERT_EQ(devs.size(), 3u);
  EXPECT_EQ(devs[0].name, "fake device 0");
  EXPECT_EQ(devs[1].memory_total, 2u * 1024 * 1024);
  EXPECT_EQ(inst->get<strata_backend_v1>("no_such_family", 1), nullptr);
  EXPECT_EQ(inst->get<strata_backend_v1>(STRATA_BACKEND_FAMILY, 99), nullptr);
}

TEST(PluginLoader, UnknownOptionFailsInitNamingIt) {
  PluginRegistry r(path_of({"good"}));
  const std::string m = strata::test::error_of([&] { r.instantiate("good", {"colour=blue"}); });
  EXPECT_NE(m.find("libstrata-fake_good.so"), std::string::npos) << m;
  EXPECT_NE(m.find("init failed (invalid argument): unknown option 'colour=blue'"), std::string::npos) << m;
}

TEST(PluginLoader, WrongAbiMajorIsRejectedWithBothVersions) {
  PluginRegistry r(path_of({"bad_abi"}));
  const auto& c = only(r);
  EXPECT_EQ(c.verdict, PluginCandidate::Verdict::Rejected);
  EXPECT_NE(c.reason.find("built for plugin ABI 2.1, this host speaks 1.1"), std::string::npos) << c.reason;
  const std::string m = strata::test::error_of([&] { r.instantiate("bad_abi"); });
  EXPECT_NE(m.find("no plugin named 'bad_abi'"), std::string::npos) << m;  // its name is not trusted
}

TEST(PluginLoader, MissingEntrySymbolIsRejected) {
  PluginRegistry r(path_of({"not_a_plugin"}));
  const auto& c = only(r);
  EXPECT_EQ(c.verdict, PluginCandidate::Verdict::Rejected);
  EXPECT_NE(c.reason.find("no entry symbol strata_plugin_query"), std::string::npos) << c.reason;

  PluginRegistry r2(path_of({"no_init"}));
  EXPECT_NE(only(r2).reason.find("no entry symbol strata_plugin_init"), std::string::npos) << only(r2).reason;
}

TEST(PluginLoader, FileThatIsNotALibraryIsRejected) {
  PluginRegistry r(path_of({"garbage"}));
  const auto& c = only(r);
  EXPECT_EQ(c.verdict, PluginCandidate::Verdict::Rejected);
  EXPECT_NE(c.reason.find("cannot open"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("libstrata-garbage.so"), std::string::npos) << c.reason;
}

TEST(PluginLoader, ScoreZeroIsUnusableNotAnError) {
  PluginRegistry r(path_of({"score0"}));
  const auto& c = only(r);
  EXPECT_EQ(c.verdict, PluginCandidate::Verdict::Unusable);
  EXPECT_EQ(c.reason, "no fake accelerator on this machine");
  const std::string m = strata::test::error_of([&] { r.instantiate("score0"); });
  EXPECT_NE(m.find("cannot run on this machine (score 0: no fake accelerator on this machine)"), std::string::npos) << m;
}

TEST(PluginLoader, FailingInitIsReportedWithFileAndReason) {
  PluginRegistry r(path_of({"init_fails"}));
  EXPECT_EQ(only(r).verdict, PluginCandidate::Verdict::Usable);  // only init can tell
  const std::string m = strata::test::error_of([&] { r.instantiate("init_fails"); });
  EXPECT_NE(m.find("libstrata-fake_init_fails.so"), std::string::npos) << m;
  EXPECT_NE(m.find("init failed (device error): fake device refused to start"), std::string::npos) << m;
}

TEST(PluginLoader, ThrowInsideTrampolineBecomesAStatus) {
  PluginRegistry r(path_of({"init_throws"}));
  const std::string m = strata::test::error_of([&] { r.instantiate("init_throws"); });
  EXPECT_NE(m.find("init failed (internal error): fake init exploded"), std::string::npos) << m;
}

TEST(PluginLoader, ThrowAcrossTheBoundaryIsCaughtByTheHost) {
  PluginRegistry r(path_of({"query_throws"}));
  const auto& c = only(r);
  EXPECT_EQ(c.verdict, PluginCandidate::Verdict::Rejected);
  EXPECT_NE(c.reason.find("strata_plugin_query threw across the C boundary: fake query exploded"), std::string::npos)
      << c.reason;

  PluginRegistry r2(path_of({"interface_throws"}));
  auto inst = r2.instantiate("interface_throws");
  const std::string m = strata::test::error_of([&] { inst->devices(); });
  EXPECT_NE(m.find("get_interface(backend) threw across the C boundary: fake get_interface exploded"), std::string::npos) << m;
}

TEST(PluginLoader, NewerMinorIsAcceptedAndItsNewMembersIgnored) {
  PluginRegistry r(path_of({"newer_minor"}));
  const auto& c = only(r);
  EXPECT_EQ(c.verdict, PluginCandidate::Verdict::Usable);
  EXPECT_EQ(c.abi_minor, 7u);
  EXPECT_EQ(c.version, "1.7.0");
  auto inst = r.instantiate("newer_minor");
  EXPECT_EQ(inst->devices().size(), 2u);
}

TEST(PluginLoader, RequiredOptionsComeFromTheDescriptor) {
  PluginRegistry r(path_of({"needs_option", "good"}));
  ASSERT_EQ(r.candidates().size(), 2u);
  const PluginCandidate& c = r.candidates()[0];
  EXPECT_EQ(c.verdict, PluginCandidate::Verdict::Usable);  // it is usable: a launch just has to give it a token
  EXPECT_EQ(c.required_options, std::vector<std::string>{"token=TEXT"});
  EXPECT_TRUE(r.candidates()[1].required_options.empty());
  EXPECT_EQ(r.instantiate("needs_option", {"token=abc", "devices=1"})->devices().size(), 1u);
  const std::string m = strata::test::error_of([&] { r.instantiate("needs_option"); });
  EXPECT_NE(m.find("init failed (invalid argument): option token is required"), std::string::npos) << m;
}

TEST(PluginLoader, AnAbi10DescriptorIsNotReadPastItsEnd) {
  // Its memory holds "token=TEXT" where 1.1's required_options sits, but its minor and size end before it.
  PluginRegistry r(path_of({"old_minor"}));
  const auto& c = only(r);
  EXPECT_EQ(c.verdict, PluginCandidate::Verdict::Usable);
  EXPECT_EQ(c.abi_minor, 0u);
  EXPECT_TRUE(c.required_options.empty());
}

TEST(PluginRegistry, FirstFolderWinsForAName) {
  PluginRegistry r(path_of({"good", "shadow"}));
  ASSERT_EQ(r.candidates().size(), 2u);
  EXPECT_EQ(r.candidates()[0].verdict, PluginCandidate::Verdict::Usable);
  EXPECT_EQ(r.candidates()[1].verdict, PluginCandidate::Verdict::Shadowed);
  EXPECT_NE(r.candidates()[1].reason.find("was found first in"), std::string::npos);
  EXPECT_EQ(r.find("good")->score, 10u);  // not the shadow's 99
  EXPECT_EQ(r.best_backend(), "good");
}

TEST(PluginRegistry, BestScoreWinsForAuto) {
  PluginRegistry r(path_of({"good", "better", "score0", "bad_abi", "init_fails"}));
  EXPECT_EQ(r.best_backend(), "better");
  EXPECT_EQ(r.best_backend({"good", "score0"}), "good");
  const std::string m = strata::test::error_of([&] { r.best_backend({"score0"}); });
  EXPECT_NE(m.find("no usable backend plugin"), std::string::npos) << m;
  EXPECT_NE(m.find("score0: unusable here"), std::string::npos) << m;
}

TEST(PluginRegistry, UnknownNameSuggestsTheNearest) {
  PluginRegistry r(path_of({"good", "better"}));
  const std::string m = strata::test::error_of([&] { r.instantiate("beter"); });
  EXPECT_NE(m.find("no plugin named 'beter' was found (did you mean 'better'?)"), std::string::npos) << m;
}

TEST(PluginRegistry, EveryFailureModeSideBySideKeepsTheHostRunning) {
  PluginRegistry r(path_of({"garbage", "not_a_plugin", "bad_abi", "query_throws", "no_init", "score0", "good"}));
  EXPECT_EQ(r.candidates().size(), 7u);
  auto inst = r.instantiate("good");
  EXPECT_EQ(inst->devices().size(), 2u);
}

TEST(PluginRegistry, MissingFoldersAreSkipped) {
  PluginRegistry r(path_of({"does_not_exist", "good"}));
  EXPECT_EQ(r.candidates().size(), 1u);
}

TEST(PluginSearchPath, OrderIsConfigBuildExecutableEnv) {
  auto p = strata::default_search_path({"/cfg/a", "/cfg/b"}, "/env/x:/env/y::/cfg/a");
  ASSERT_GE(p.folders.size(), 5u);
  EXPECT_EQ(p.folders[0], "/cfg/a");
  EXPECT_EQ(p.folders[1], "/cfg/b");
  EXPECT_EQ(p.origins[2], "build plugin folder");
  EXPECT_EQ(p.folders[2], fs::path(STRATA_BUILD_PLUGIN_DIR).lexically_normal());
  EXPECT_EQ(p.origins[3], "executable folder");
  EXPECT_EQ(p.folders[p.folders.size() - 2], "/env/x");
  EXPECT_EQ(p.folders.back(), "/env/y");  // "/cfg/a" again is not examined twice
}

TEST(PluginStatus, StatusesRoundTrip) {
  const strata_host_api* api = strata::host_api();
  EXPECT_EQ(api->abi_major, STRATA_ABI_MAJOR);
  auto [code, msg] = strata::take_status(api->status_new(STRATA_ERR_UNSUPPORTED, "nope"));
  EXPECT_EQ(code, STRATA_ERR_UNSUPPORTED);
  EXPECT_EQ(msg, "nope");
  EXPECT_EQ(strata::take_status(nullptr).first, STRATA_OK);
  EXPECT_THROW(strata::throw_if_error(api->status_new(STRATA_ERR_DEVICE, "x"), "p", "call"), strata::Error);
}
