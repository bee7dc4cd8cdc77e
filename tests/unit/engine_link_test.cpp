// The peer link between two real engine processes (plugins/peerlink): this test process runs role 0 and spawns
// this same binary as role 1 (EngineLinkServer.Role1, which runs only when spawned so). Each engine has a stand-in
// GPU (host memory, cpu_avx2's arithmetic) whose expert cache holds its role's share of the dealt experts; role 1
// serves its card's experts, and role 0 asks it for the experts its own card misses. Role 0's logits must be the
// plain cpu_avx2 engine's bytes at every position, with the link used; and when role 1 is killed or stopped in the
// middle of the generation, role 0 finishes alone with the same bytes and says so.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine_backends.hpp"
#include "stand_in_gpu.hpp"
#include "strata/config.hpp"
#include "strata/engine.hpp"
#include "test_temp_dir.hpp"
#include "tiny_moe_model.hpp"

extern char** environ;

namespace {

using strata::TokenId;
using Clock = std::chrono::steady_clock;

constexpr const char* kServeEnv = "STRATA_TEST_LINK_SERVE";  // the link file, for the spawned role 1
constexpr const char* kSwapsEnv = "STRATA_TEST_LINK_SWAPS";
constexpr const char* kArenaEnv = "STRATA_TEST_LINK_ARENA";  // the shared arena's file, for the spawned role 1

// The pair's host arena: one tmpfs file both processes map (the first fills it, the second finds it complete).
std::string arena_file(const std::string& link_file) {
  return "/dev/shm/strata_test_" + std::to_string(::getpid()) + "_" + std::filesystem::path(link_file).stem().string() +
         ".arena";
}

bool usable() {
  bool cpu = false, link = false;
  for (const strata::PluginCandidate& c : strata::test::built_plugins().candidates()) {
    if (c.verdict != strata::PluginCandidate::Verdict::Usable) continue;
    cpu = cpu || c.name == "cpu_avx2";
    link = link || c.name == "peerlink";
  }
  return cpu && link;
}

// An engine of the pair: experts.cache 50% on each card, so that the two roles' shares cover every expert.
std::unique_ptr<strata::Engine> linked_engine(const std::string& file, uint32_t role, int swaps, bool fast,
                                              const std::string& deadline_ms = "200", const std::string& arena = {},
                                              bool peer = false) {
  strata::EngineSettings s = strata::test::test_settings();
  s.experts.cache.kind = strata::config::CacheSize::Kind::Percent;
  s.experts.cache.percent = 50;
  s.experts.pcie_frac = 0.0;
  s.experts.adapt_swaps = swaps;
  if (!arena.empty()) s.experts.arena = arena;
  s.threads = 2;
  s.graphs = fast;
  strata::EngineLink link;
  link.plugin = strata::test::built_plugins().instantiate(
      "peerlink", {"file=" + file, "role=" + std::to_string(role), "deadline_ms=" + deadline_ms, "stale_ms=300"});
  link.role = role;
  link.service = std::make_unique<strata::test::StandInGpu>(strata::test::open_backend("cpu_avx2"));
  return std::make_unique<strata::Engine>(
      strata::Model::load(strata::test::tiny_moe_model()),
      std::make_unique<strata::test::StandInGpu>(strata::test::open_backend("cpu_avx2")), s,
      strata::test::built_plugins().instantiate("cpu_avx2"), nullptr,
      peer ? std::make_unique<strata::test::StandInGpu>(strata::test::open_backend("cpu_avx2")) : nullptr, std::move(link));
}

// A prompt of 20 tokens, then `steps` greedy tokens one by one; `between(i)` runs before step i. Every logit.
template <class Between>
std::vector<float> run(strata::Engine& e, int steps, const Between& between) {
  std::vector<TokenId> prompt;
  for (int i = 0; i < 20; ++i) prompt.push_back(static_cast<TokenId>((i * 197 + 3) % 4096));
  std::vector<float> all;
  std::span<const float> logits = e.feed(0, prompt);
  for (int i = 0; i < steps; ++i) {
    all.insert(all.end(), logits.begin(), logits.end());
    between(i);
    const auto next = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    logits = e.feed(0, std::span<const TokenId>(&next, 1));
  }
  all.insert(all.end(), logits.begin(), logits.end());
  return all;
}

std::vector<float> plain_cpu(int steps) {
  auto e = strata::test::open_engine(strata::test::tiny_moe_model(), "cpu_avx2");
  return run(*e, steps, [](int) {});
}

size_t first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return i;
  }
  return a.size();
}

// The number before `label` in the summary's "peer link: asked ..." line (0 when absent).
uint64_t count_after(const std::string& summary, const std::string& label) {
  const size_t line = summary.find("peer link: asked");
  if (line == std::string::npos) return 0;
  const size_t at = summary.find(label, line);
  if (at == std::string::npos || at > summary.find('\n', line)) return 0;
  size_t end = at;
  while (end > 0 && summary[end - 1] == ' ') --end;
  size_t start = end;
  while (start > 0 && std::isdigit(static_cast<unsigned char>(summary[start - 1]))) --start;
  return start < end ? std::stoull(summary.substr(start, end - start)) : 0;
}

// Role 1 in a process of its own: this binary again, with the link file in the environment.
class ServerProcess {
 public:
  ServerProcess(const std::string& file, int swaps) : file_(file), arena_(arena_file(file)) {
    std::filesystem::remove(arena_);
    std::filesystem::remove(file + ".ready");
    std::filesystem::remove(file + ".stop");
    const std::string filter = "--gtest_filter=EngineLinkServer.Role1";
    const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
    std::vector<std::string> env_strings;
    // Not gtest's own settings: a shard index (CI runs the binary in shards) could leave role 1's one test to
    // another shard, and an output file would be written twice.
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::string_view(*e).rfind("GTEST_", 0) != 0) env_strings.emplace_back(*e);
    }
    env_strings.push_back(std::string(kServeEnv) + "=" + file);
    env_strings.push_back(std::string(kSwapsEnv) + "=" + std::to_string(swaps));
    env_strings.push_back(std::string(kArenaEnv) + "=" + arena_);
    std::vector<char*> env;
    for (std::string& s : env_strings) env.push_back(s.data());
    env.push_back(nullptr);
    std::string exe_arg = exe, filter_arg = filter;
    char* argv[] = {exe_arg.data(), filter_arg.data(), nullptr};
    if (posix_spawn(&pid_, exe.c_str(), nullptr, nullptr, argv, env.data()) != 0) pid_ = -1;
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      std::ofstream(file_ + ".stop") << "stop\n";
      ::kill(pid_, SIGCONT);
      reap(std::chrono::seconds(30));
      if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        reap(std::chrono::seconds(5));
      }
    }
    std::error_code ec;
    std::filesystem::remove(arena_, ec);
  }
  const std::string& arena() const { return arena_; }
  // Waits until role 1 serves (its ready file), or it ended.
  bool wait_ready() {
    const auto until = Clock::now() + std::chrono::seconds(120);
    while (Clock::now() < until) {
      if (std::filesystem::exists(file_ + ".ready")) return true;
      int status = 0;
      if (pid_ <= 0 || ::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
  void kill_now() {
    ::kill(pid_, SIGKILL);
    reap(std::chrono::seconds(10));  // a zombie still looks alive to kill(pid, 0)
  }
  void stop_now() { ::kill(pid_, SIGSTOP); }
  pid_t pid() const { return pid_; }

 private:
  void reap(std::chrono::seconds limit) {
    const auto until = Clock::now() + limit;
    while (pid_ > 0 && Clock::now() < until) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) pid_ = -1;
      else std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  std::string file_, arena_;
  pid_t pid_ = -1;
};

constexpr int kSteps = 12;

struct LinkCase {
  const char* name;
  bool fast;
  int swaps;
  bool lead = false;  // role 0 is the desk's lead: a peer card (the other role's share), detached while linked
};

class EngineLink : public ::testing::TestWithParam<LinkCase> {};

TEST_P(EngineLink, TheOtherEnginesRowsGiveThePlainEnginesBytes) {
  if (!usable()) GTEST_SKIP() << "cpu_avx2 or peerlink is not usable here";
  const LinkCase& c = GetParam();
  const std::string file = strata::testing_support::test_temp_path("engine_link", std::string(c.name) + ".link");
  ServerProcess server(file, c.swaps);
  ASSERT_TRUE(server.wait_ready()) << "role 1 did not come up";
  auto e = linked_engine(file, 0, c.swaps, c.fast, "200", server.arena(), c.lead);
  if (c.lead) (void)e->detach_peer();  // its experts are role 1's now: asked over the link, not read over PCIe
  const std::vector<float> got = run(*e, kSteps, [](int) {});
  const std::vector<float> want = plain_cpu(kSteps);
  EXPECT_EQ(first_difference(got, want), want.size());
  const std::string summary = e->expert_summary();
  EXPECT_GT(count_after(summary, "experts ("), 0u) << summary;  // "... N experts (R rows) computed there"
  EXPECT_NE(summary.find("peer link: asked the other engine"), std::string::npos) << summary;
  EXPECT_EQ(count_after(summary, "requests not answered in time"), 0u) << summary;
  // One host copy of the experts for both processes: role 1 filled the tmpfs file, role 0 mapped it as it was.
  EXPECT_NE(summary.find("in " + server.arena() + ", found complete and mapped"), std::string::npos) << summary;
}

INSTANTIATE_TEST_SUITE_P(Modes, EngineLink,
                         ::testing::Values(LinkCase{"fast", true, 0}, LinkCase{"simple", false, 0},
                                           LinkCase{"swaps", true, 2}, LinkCase{"lead", true, 0, true}),
                         [](const auto& p) { return std::string(p.param.name); });

// Role 1 dies (SIGKILL) or stalls (SIGSTOP) after a few tokens: role 0 finishes with the same bytes, having used
// the link before, and says it went on alone.
class EngineLinkFailure : public ::testing::TestWithParam<bool> {};

TEST_P(EngineLinkFailure, TheSurvivorFinishesWithTheSameBytes) {
  if (!usable()) GTEST_SKIP() << "cpu_avx2 or peerlink is not usable here";
  const bool kill = GetParam();
  const std::string file = strata::testing_support::test_temp_path("engine_link", kill ? "kill.link" : "stall.link");
  ServerProcess server(file, 0);
  ASSERT_TRUE(server.wait_ready()) << "role 1 did not come up";
  auto e = linked_engine(file, 0, 0, true, "100");
  uint64_t before = 0;
  std::thread killer;
  const std::vector<float> got = run(*e, kSteps, [&](int i) {
    if (i != 4) return;
    before = count_after(e->expert_summary(), "experts (");
    // In the middle of the next window, from another thread: wherever it lands, the ids must not change.
    killer = std::thread([&server, kill] {
      std::this_thread::sleep_for(std::chrono::microseconds(300));
      if (kill) server.kill_now();
      else server.stop_now();
    });
  });
  killer.join();
  const std::vector<float> want = plain_cpu(kSteps);
  EXPECT_EQ(first_difference(got, want), want.size());
  EXPECT_GT(before, 0u) << "the link was not used before the failure";
  // After the failure no request is answered: every later window plans without the link (or its requests time out).
  const std::string summary = e->expert_summary();
  std::vector<float> more = run(*e, 2, [](int) {});
  EXPECT_EQ(count_after(e->expert_summary(), "experts ("), count_after(summary, "experts (")) << e->expert_summary();
}

INSTANTIATE_TEST_SUITE_P(Peer, EngineLinkFailure, ::testing::Values(true, false),
                         [](const auto& p) { return std::string(p.param ? "Killed" : "Stalled"); });

// A second engine may not take a role a live engine holds.
TEST(EngineLinkRoles, ARoleHeldByALiveEngineIsRefused) {
  if (!usable()) GTEST_SKIP() << "cpu_avx2 or peerlink is not usable here";
  const std::string file = strata::testing_support::test_temp_path("engine_link", "roles.link");
  ServerProcess server(file, 0);
  ASSERT_TRUE(server.wait_ready()) << "role 1 did not come up";
  try {
    (void)linked_engine(file, 1, 0, true);
    FAIL() << "a second role 1 was accepted";
  } catch (const strata::Error& err) {
    EXPECT_NE(std::string(err.what()).find("role 1"), std::string::npos) << err.what();
  }
}

// The spawned side: role 1 serves until its parent writes the stop file (or leaves).
TEST(EngineLinkServer, Role1) {
  const char* file = std::getenv(kServeEnv);
  if (file == nullptr) GTEST_SKIP() << "role 1 of the EngineLink tests: runs only when they spawn it";
  const char* swaps = std::getenv(kSwapsEnv);
  const pid_t parent = ::getppid();
  const char* arena = std::getenv(kArenaEnv);
  auto e = linked_engine(file, 1, swaps != nullptr ? std::atoi(swaps) : 0, true, "200", arena != nullptr ? arena : "");
  (void)e->serve_link(true);
  std::ofstream(std::string(file) + ".ready") << "ready\n";
  const auto until = Clock::now() + std::chrono::seconds(300);
  while (Clock::now() < until && ::getppid() == parent && !std::filesystem::exists(std::string(file) + ".stop")) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  (void)e->serve_link(false);
}

}  // namespace
