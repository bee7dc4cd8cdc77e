// plugins/peerlink: two engines joined by a link file, played by this process and forked children (each child opens
// its own link, does its part, and _exits with a status the parent checks). Roles held by live processes are
// refused, dead ones taken over, mismatched and corrupt files refused or laid out afresh; residency crosses whole
// under its seqlock; requests go round, time out, and fail at once when the server is killed. The suites carry
// `peerlink` in their names (ctest -R peerlink).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "link_file.hpp"
#include "strata/plugin_api.h"
#include "strata/plugin_host.hpp"
#include "test_temp_dir.hpp"

namespace {

using strata::peerlink::LinkError;
using strata::peerlink::LinkFile;
using strata::peerlink::LinkGeometry;
using strata::peerlink::LinkSettings;
using strata::peerlink::RequestView;
using Ms = std::chrono::milliseconds;

// A file of the running test's own.
std::string link_path() {
  return strata::testing_support::test_temp_path(
      "peerlink", std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + ".link");
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// ---- processes ----------------------------------------------------------------------------------------------

// A forked process running `body`, whose return value is its exit status (an escaping exception: 91). The two
// sides signal each other with one byte through a pipe; a side whose partner is gone reads end-of-file.
class Child {
 public:
  explicit Child(const std::function<int(Child&)>& body) {
    ::signal(SIGPIPE, SIG_IGN);  // a byte to a child that died must not end the test
    if (::pipe(down_) != 0 || ::pipe(up_) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) {
      in_child_ = true;
      ::close(down_[1]);
      ::close(up_[0]);
      int status = 90;
      try {
        status = body(*this);
      } catch (...) {
        status = 91;
      }
      ::_exit(status);
    }
    ::close(down_[0]);
    ::close(up_[1]);
  }
  ~Child() {
    if (!reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(down_[1]);
    ::close(up_[0]);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  void tell() {
    const char c = 1;
    (void)!::write(in_child_ ? up_[1] : down_[1], &c, 1);
  }
  // true when the other side's byte came within timeout_ms.
  bool heard(int timeout_ms = 5000) { return wait(timeout_ms) == 1; }
  // The child's question between two steps of a loop: has the parent said stop (or gone)?
  bool stop_said() { return wait(0) != 0; }
  // The exit status, or 128 + the signal that ended it.
  int join() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  void kill_now() { ::kill(pid_, SIGKILL); }

 private:
  // 1: a byte; 0: nothing within timeout_ms; -1: the other side is gone.
  int wait(int timeout_ms) {
    pollfd p{in_child_ ? down_[0] : up_[0], POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return 0;
    char c = 0;
    return ::read(p.fd, &c, 1) == 1 ? 1 : -1;
  }
  int down_[2] = {-1, -1}, up_[2] = {-1, -1};  // parent to child, child to parent
  pid_t pid_ = -1;
  bool in_child_ = false, reaped_ = false;
};

// ---- the plugin ---------------------------------------------------------------------------------------------

// A registry that sees only peerlink (built in the parent before any fork: no other plugin's runtime in the children).
const strata::PluginRegistry& registry() {
  static const std::unique_ptr<strata::PluginRegistry> r = [] {
    const std::filesystem::path dir = strata::testing_support::test_temp_path("peerlink", "plugins");
    std::filesystem::create_directories(dir);
    std::error_code ec;
    std::filesystem::create_symlink(std::filesystem::path(STRATA_BUILD_PLUGIN_DIR) / "libstrata-peerlink.so",
                                    dir / "libstrata-peerlink.so", ec);
    strata::PluginSearchPath path;
    path.folders.push_back(dir);
    path.origins.push_back("peerlink test");
    return std::make_unique<strata::PluginRegistry>(path);
  }();
  return *r;
}

struct Link {
  std::unique_ptr<strata::PluginInstance> instance;
  const strata_link_v1* api = nullptr;

  void* ctx() const { return instance->ctx(); }
  std::pair<strata_status_code, std::string> open(const strata_link_geometry& g) const {
    return strata::take_status(api->open(ctx(), &g));
  }
  bool ready() const { return api->peer_ready(ctx()) != 0; }
  std::string describe() const { return api->describe(ctx()); }
  // Polls peer_ready for up to timeout_ms.
  bool ready_within(int timeout_ms) const {
    const auto t0 = std::chrono::steady_clock::now();
    while (!ready()) {
      if (ms_since(t0) > timeout_ms) return false;
      std::this_thread::sleep_for(Ms(1));
    }
    return true;
  }
};

Link make_link(const std::string& file, uint32_t role, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> options = {"file=" + file, "role=" + std::to_string(role)};
  options.insert(options.end(), extra.begin(), extra.end());
  Link l;
  l.instance = registry().instantiate("peerlink", options);
  l.api = l.instance->get<strata_link_v1>(STRATA_LINK_FAMILY, STRATA_LINK_VERSION);
  if (l.api == nullptr) throw std::runtime_error("peerlink has no link table");
  return l;
}

strata_link_geometry geometry(const char* fingerprint, uint32_t n_embd = 8, uint32_t n_layer = 4,
                              uint32_t n_expert = 16) {
  strata_link_geometry g{};
  g.n_layer = n_layer;
  g.n_expert = n_expert;
  g.n_embd = n_embd;
  g.k_max = 4;
  g.max_tokens = 4;
  std::strncpy(g.fingerprint, fingerprint, sizeof g.fingerprint - 1);
  return g;
}

// The children's service: the experts it holds are the even ones; a pair's row is weight * x + id, per element.
void serve(const strata_link_request& r, uint32_t n_embd) {
  for (uint32_t i = 0; i < r.n_experts; ++i) r.served[i] = r.experts[i] % 2 == 0 ? 1 : 0;
  for (uint32_t p = 0; p < r.n_tok * r.k; ++p) {
    const int32_t id = r.ids[p];
    if (id % 2 != 0 || std::find(r.experts, r.experts + r.n_experts, static_cast<uint32_t>(id)) == r.experts + r.n_experts) {
      continue;
    }
    const uint32_t t = p / r.k;
    for (uint32_t e = 0; e < n_embd; ++e) r.rows[p * n_embd + e] = r.weights[p] * r.x[t * n_embd + e] + static_cast<float>(id);
  }
}

// Fills the outbox with a request for experts {1, 2, 5, 6} (the server holds 2 and 6), sends it, awaits it and
// checks the rows of the served pairs and that the others were left alone. `salt` varies the data per request.
void round_trip(const Link& link, uint32_t n_embd, int salt) {
  strata_link_request r{};
  ASSERT_EQ(link.api->outbox(link.ctx(), &r), nullptr);
  const uint32_t n_tok = 3, k = 2, experts[] = {1, 2, 5, 6};
  const int32_t ids[] = {2, 5, 6, 1, 2, 9};
  std::copy(std::begin(experts), std::end(experts), r.experts);
  std::copy(std::begin(ids), std::end(ids), r.ids);
  for (uint32_t i = 0; i < n_tok * n_embd; ++i) r.x[i] = 0.25f * static_cast<float>(i) + static_cast<float>(salt);
  for (uint32_t p = 0; p < n_tok * k; ++p) r.weights[p] = 0.5f + 0.125f * static_cast<float>(p + salt);
  for (uint32_t i = 0; i < n_tok * k * n_embd; ++i) r.rows[i] = -1000.0f;
  std::fill(r.served, r.served + 4, uint8_t{7});
  ASSERT_EQ(link.api->send(link.ctx(), 2, n_tok, k, 4), nullptr);
  ASSERT_EQ(link.api->await_answer(link.ctx()), 1u) << link.describe();
  EXPECT_EQ(std::vector<uint8_t>(r.served, r.served + 4), (std::vector<uint8_t>{0, 1, 0, 1}));
  for (uint32_t p = 0; p < n_tok * k; ++p) {
    const bool computed = ids[p] == 2 || ids[p] == 6;
    for (uint32_t e = 0; e < n_embd; ++e) {
      const float want = computed ? r.weights[p] * r.x[(p / k) * n_embd + e] + static_cast<float>(ids[p]) : -1000.0f;
      ASSERT_EQ(r.rows[p * n_embd + e], want) << "pair " << p << " element " << e << " salt " << salt;
    }
  }
}

// ---- options ------------------------------------------------------------------------------------------------

TEST(peerlink_plugin, ItsDescriptorNamesWhatALaunchMustGive) {
  // So that `strata plugins` lists it usable with these instead of failing an init given nothing.
  const strata::PluginCandidate* c = registry().find("peerlink");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->verdict, strata::PluginCandidate::Verdict::Usable) << c->reason;
  EXPECT_EQ(c->required_options, (std::vector<std::string>{"file=PATH", "role=0|1"}));
}

TEST(peerlink_plugin, RefusesBadOptionsByName) {
  const std::string file = link_path();
  for (const auto& [options, named] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"role=0"}, "option file is required"},
           {{"file=" + file}, "option role is required"},
           {{"file=", "role=0"}, "option file is empty"},
           {{"file=" + file, "role=2"}, "role=2: expected 0 or 1"},
           {{"file=" + file, "role=0", "deadline_ms=soon"}, "deadline_ms=soon: expected a whole number of milliseconds"},
           {{"file=" + file, "role=0", "heartbeat_ms=0"}, "heartbeat_ms=0"},
           {{"file=" + file, "role=0", "stale_ms=15"}, "stale_ms=15 is below twice heartbeat_ms=10"},
           {{"file=" + file, "role=0", "timeout=3"}, "unknown option 'timeout' (known: file, role, deadline_ms"}}) {
    try {
      (void)registry().instantiate("peerlink", options);
      ADD_FAILURE() << named << ": accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  }
  // Before open, every entry answers without a crash.
  Link l = make_link(file, 0);
  EXPECT_FALSE(l.ready());
  EXPECT_NE(l.describe().find("not open"), std::string::npos) << l.describe();
  const auto [code, message] = strata::take_status(l.api->send(l.ctx(), 0, 1, 1, 1));
  EXPECT_EQ(code, STRATA_ERR_UNAVAILABLE) << message;
  EXPECT_EQ(l.api->await_answer(l.ctx()), 0u);
}

// ---- roles and layouts --------------------------------------------------------------------------------------

TEST(peerlink_plugin, ARoleHeldByALiveProcessIsRefused) {
  const std::string file = link_path();
  (void)registry();
  Child child([&](Child& self) {
    Link l = make_link(file, 0);
    if (l.open(geometry("m")).first != STRATA_OK) return 10;
    self.tell();
    (void)self.heard();
    return 0;
  });
  ASSERT_TRUE(child.heard());
  Link same = make_link(file, 0);
  const auto [code, message] = same.open(geometry("m"));
  EXPECT_EQ(code, STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message.find("role 0 of " + file + " is held by pid " + std::to_string(child.pid()) +
                         ": give the other role or another file"),
            std::string::npos)
      << message;
  Link other = make_link(file, 1);
  ASSERT_EQ(other.open(geometry("m")).first, STRATA_OK);
  EXPECT_NE(other.describe().find("the other engine: pid " + std::to_string(child.pid())), std::string::npos)
      << other.describe();
  child.tell();
  EXPECT_EQ(child.join(), 0);
  EXPECT_NE(other.describe().find("the other engine: not attached"), std::string::npos) << other.describe();
}

TEST(peerlink_plugin, AStaleRoleOfADeadProcessIsTakenOver) {
  const std::string file = link_path();
  (void)registry();
  Child child([&](Child& self) {
    Link l = make_link(file, 1);
    if (l.open(geometry("m")).first != STRATA_OK) return 10;
    self.tell();
    ::_exit(0);  // dies holding the role: its pid stays in the file
  });
  ASSERT_TRUE(child.heard());
  ASSERT_EQ(child.join(), 0);
  Link l = make_link(file, 1);
  ASSERT_EQ(l.open(geometry("m")).first, STRATA_OK);
  EXPECT_NE(l.describe().find("role 1, generation 2"), std::string::npos) << l.describe();
  Link other = make_link(file, 0);
  ASSERT_EQ(other.open(geometry("m")).first, STRATA_OK);
  EXPECT_NE(other.describe().find("role 0, generation 3"), std::string::npos) << other.describe();
  EXPECT_FALSE(other.ready()) << "attached and alive, but not serving";
  ASSERT_EQ(l.api->set_serving(l.ctx(), 1), nullptr);
  EXPECT_TRUE(other.ready()) << other.describe();
}

TEST(peerlink_plugin, AnotherGeometryIsRefusedWhileItsEngineLivesAndRelaidOnceItIsDead) {
  const std::string file = link_path();
  (void)registry();
  Child child([&](Child& self) {
    Link l = make_link(file, 1);
    if (l.open(geometry("model-A", 8)).first != STRATA_OK) return 10;
    self.tell();
    (void)self.heard();
    ::_exit(0);  // without leaving the role
  });
  ASSERT_TRUE(child.heard());
  const auto size_a = std::filesystem::file_size(file);
  Link l = make_link(file, 0);
  for (const auto& [g, named] : std::vector<std::pair<strata_link_geometry, std::string>>{
           {geometry("model-B", 8), "fingerprint 'model-B'"}, {geometry("model-A", 16), "n_embd 16"}}) {
    const auto [code, message] = l.open(g);
    EXPECT_EQ(code, STRATA_ERR_INVALID_ARGUMENT);
    for (const std::string& part : {"held by pid " + std::to_string(child.pid()) + " (role 1)",
                                    std::string("fingerprint 'model-A'"), std::string("n_embd 8"), named,
                                    std::string("launch both engines with the same model")}) {
      EXPECT_NE(message.find(part), std::string::npos) << part << " in: " << message;
    }
  }
  child.tell();
  ASSERT_EQ(child.join(), 0);
  ASSERT_EQ(l.open(geometry("model-B", 16)).first, STRATA_OK) << "relaid: its holder is dead";
  EXPECT_GT(std::filesystem::file_size(file), size_a);
  EXPECT_NE(l.describe().find("the other engine: not attached"), std::string::npos) << l.describe();
}

// A file cut short under a live engine is refused; once the engine is gone it is laid out afresh.
TEST(peerlink_plugin, ATruncatedFileIsRefusedWhileItsEngineLivesAndRelaidAfter) {
  const std::string file = link_path();
  (void)registry();
  Child child([&](Child& self) {
    Link l = make_link(file, 1);
    if (l.open(geometry("m")).first != STRATA_OK) return 10;
    self.tell();
    (void)self.heard();
    ::_exit(0);  // touches nothing past the header: the file is short now
  });
  ASSERT_TRUE(child.heard());
  const uintmax_t size = std::filesystem::file_size(file), cut = size / 2;
  ASSERT_GT(cut, 256u) << "the header stays whole";
  std::filesystem::resize_file(file, cut);
  Link l = make_link(file, 0);
  const auto [code, message] = l.open(geometry("m"));
  EXPECT_EQ(code, STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message.find("held by pid " + std::to_string(child.pid()) + " (role 1) with a size of " +
                         std::to_string(cut) + " bytes where its header says " + std::to_string(size)),
            std::string::npos)
      << message;
  child.tell();
  ASSERT_EQ(child.join(), 0);
  ASSERT_EQ(l.open(geometry("m")).first, STRATA_OK);
  EXPECT_EQ(std::filesystem::file_size(file), size);
}

TEST(peerlink_file, CorruptFilesAreLaidOutAfreshWithoutACrash) {
  const std::string file = link_path();
  const LinkGeometry g{4, 16, 8, 4, 4, "m"};
  const LinkSettings s{file, 0, 50, 1000, 10};
  std::vector<std::string> notices;
  const auto notice = [&](const std::string& line) { notices.push_back(line); };
  uint64_t size = 0;
  {
    LinkFile l(s, g, notice);
    size = l.file_size();
  }
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("created " + file), std::string::npos) << notices[0];

  std::mt19937 rng(5);
  const auto write_file = [&](const std::string& bytes) { std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes; };
  std::string garbage(5000, '\0');
  for (char& c : garbage) c = static_cast<char>(rng());
  std::string with_magic = garbage;
  std::memcpy(with_magic.data(), "STRATALK\1\0\0\0", 12);  // our magic and version, nonsense after it
  std::memset(with_magic.data() + 128, 0, 128);              // no holder
  std::string huge_total = with_magic;
  for (const auto& [name, bytes] : std::vector<std::pair<std::string, std::string>>{
           {"garbage", garbage}, {"magic then garbage", with_magic}, {"a few bytes", "STRAT"},
           {"zeros", std::string(size, '\0')}}) {
    notices.clear();
    write_file(bytes);
    LinkFile l(s, g, notice);
    EXPECT_EQ(std::filesystem::file_size(file), size) << name;
    ASSERT_EQ(notices.size(), 1u) << name;
    EXPECT_NE(notices[0].find("afresh"), std::string::npos) << name << ": " << notices[0];
  }
  // A good file cut short, above and below its header's size.
  for (const uint64_t cut : {size / 2, uint64_t{300}, uint64_t{100}}) {
    { LinkFile l(s, g, notice); }
    std::filesystem::resize_file(file, cut);
    notices.clear();
    LinkFile l(s, g, notice);
    EXPECT_EQ(std::filesystem::file_size(file), size) << cut;
    ASSERT_EQ(notices.size(), 1u) << cut;
    EXPECT_NE(notices[0].find("afresh"), std::string::npos) << notices[0];
  }
  // And a good file is used as it is.
  notices.clear();
  { LinkFile l(s, g, notice); }
  EXPECT_TRUE(notices.empty());
  // A path that cannot be a link file.
  try {
    LinkFile l({std::filesystem::path(file).parent_path().string(), 0, 50, 1000, 10}, g, notice);
    ADD_FAILURE() << "a folder was taken for a link file";
  } catch (const LinkError& e) {
    EXPECT_EQ(e.kind(), LinkError::Kind::InvalidArgument) << e.what();
  }
}

// ---- residency ----------------------------------------------------------------------------------------------

TEST(peerlink_plugin, TheOthersResidencyIsReadWholeUnderItsSeqlock) {
  const std::string file = link_path();
  (void)registry();
  const strata_link_geometry g = geometry("m", 8, 48, 128);
  const size_t bytes = 48 * 128 / 8;
  std::vector<uint8_t> a(bytes, 0x55), b(bytes);
  for (size_t i = 0; i < bytes; ++i) b[i] = static_cast<uint8_t>(i * 37 + 11);
  Child child([&](Child& self) {
    Link l = make_link(file, 1);
    if (l.open(g).first != STRATA_OK) return 10;
    self.tell();  // attached, nothing published yet
    if (!self.heard()) return 11;
    for (uint64_t n = 0;; ++n) {
      if (l.api->publish(l.ctx(), n % 2 == 0 ? a.data() : b.data()) != nullptr) return 12;
      if (n == 0) self.tell();
      if (n % 128 == 0 && self.stop_said()) return 0;
      // Rewrites almost back to back, with a gap of a microsecond for whole reads to land in.
      const auto t = std::chrono::steady_clock::now();
      while (std::chrono::steady_clock::now() - t < std::chrono::microseconds(1)) {
      }
    }
  });
  Link l = make_link(file, 0);
  ASSERT_EQ(l.open(g).first, STRATA_OK);
  ASSERT_TRUE(child.heard());
  std::vector<uint8_t> read(bytes, 0xee);
  EXPECT_EQ(l.api->peer_residency(l.ctx(), read.data()), 0u) << "nothing published";
  EXPECT_EQ(read, std::vector<uint8_t>(bytes, 0xee)) << "bits left alone";
  child.tell();
  ASSERT_TRUE(child.heard());
  uint64_t seen_a = 0, seen_b = 0, torn = 0, busy = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (ms_since(t0) < 300) {
    if (l.api->peer_residency(l.ctx(), read.data()) == 0) {
      ++busy;
      continue;
    }
    if (read == a) {
      ++seen_a;
    } else if (read == b) {
      ++seen_b;
    } else {
      ++torn;
    }
  }
  child.tell();
  EXPECT_EQ(child.join(), 0);
  EXPECT_EQ(torn, 0u) << seen_a << " a, " << seen_b << " b, " << busy << " given up";
  EXPECT_GT(seen_a, 0u);
  EXPECT_GT(seen_b, 0u);
  EXPECT_GT(seen_a + seen_b, 10u) << busy << " given up";
}

// ---- requests -----------------------------------------------------------------------------------------------

TEST(peerlink_plugin, RequestsGoRoundWithAServingChild) {
  const std::string file = link_path();
  (void)registry();
  constexpr int kRequests = 50;
  Child child([&](Child& self) {
    Link l = make_link(file, 1);
    if (l.open(geometry("m")).first != STRATA_OK) return 10;
    std::vector<uint8_t> evens(4 * 16 / 8, 0x55);  // experts 0, 2, 4, ... of every layer
    if (l.api->publish(l.ctx(), evens.data()) != nullptr) return 11;
    if (l.api->set_serving(l.ctx(), 1) != nullptr) return 12;
    self.tell();
    for (int served = 0; served < kRequests;) {
      strata_link_request r{};
      if (l.api->next_request(l.ctx(), 100000, &r) == 0) {
        if (self.stop_said()) return 13;
        continue;
      }
      if (r.layer != 2 || r.n_tok != 3 || r.k != 2 || r.n_experts != 4) return 14;
      serve(r, 8);
      l.api->answer(l.ctx());
      ++served;
    }
    return self.heard() ? 0 : 15;
  });
  ASSERT_TRUE(child.heard());
  Link l = make_link(file, 0);
  ASSERT_EQ(l.open(geometry("m")).first, STRATA_OK);
  ASSERT_TRUE(l.ready_within(1000)) << l.describe();
  std::vector<uint8_t> bits(8);
  ASSERT_EQ(l.api->peer_residency(l.ctx(), bits.data()), 1u);
  EXPECT_EQ(bits, std::vector<uint8_t>(8, 0x55));
  for (int i = 0; i < kRequests; ++i) {
    round_trip(l, 8, i);
    if (HasFatalFailure()) break;
    EXPECT_TRUE(l.ready());
  }
  // Sizes beyond the geometry are refused before anything is sent.
  for (const auto& [layer, n_tok, k, n_experts] : std::vector<std::array<uint32_t, 4>>{
           {4, 1, 1, 1}, {0, 5, 1, 1}, {0, 1, 5, 1}, {0, 1, 1, 17}}) {
    const auto [code, message] = strata::take_status(l.api->send(l.ctx(), layer, n_tok, k, n_experts));
    EXPECT_EQ(code, STRATA_ERR_INVALID_ARGUMENT) << message;
  }
  const std::string line = l.describe();
  for (const std::string& part :
       {"peerlink: " + file + " role 0, generation 2, deadline 50 ms; the other engine: pid " + std::to_string(child.pid()),
        std::string("serving, residency published (32 experts)"), std::to_string(kRequests) + " answered, 0 timed out"}) {
    EXPECT_NE(line.find(part), std::string::npos) << part << " in: " << line;
  }
  child.tell();
  EXPECT_EQ(child.join(), 0);
  EXPECT_FALSE(l.ready()) << "the child left";
}

TEST(peerlink_plugin, AwaitGivesUpAtTheDeadlineWhenNobodyAnswers) {
  const std::string file = link_path();
  (void)registry();
  Child child([&](Child& self) {
    Link l = make_link(file, 1);
    if (l.open(geometry("m")).first != STRATA_OK) return 10;
    self.tell();  // attached, not serving
    if (!self.heard()) return 11;
    if (l.api->set_serving(l.ctx(), 1) != nullptr) return 12;
    self.tell();  // serving, but never answering
    return self.heard() ? 0 : 13;
  });
  Link l = make_link(file, 0, {"deadline_ms=100"});
  ASSERT_EQ(l.open(geometry("m")).first, STRATA_OK);
  ASSERT_TRUE(child.heard());
  EXPECT_FALSE(l.ready()) << "alive but not serving";
  EXPECT_NE(l.describe().find("not serving"), std::string::npos) << l.describe();
  child.tell();
  ASSERT_TRUE(child.heard());
  ASSERT_TRUE(l.ready_within(1000)) << l.describe();
  strata_link_request r{};
  ASSERT_EQ(l.api->outbox(l.ctx(), &r), nullptr);
  r.experts[0] = 2;
  r.ids[0] = 2;
  ASSERT_EQ(l.api->send(l.ctx(), 0, 1, 1, 1), nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(l.api->await_answer(l.ctx()), 0u);
  const double waited = ms_since(t0);
  EXPECT_GE(waited, 90.0);
  EXPECT_LT(waited, 600.0);
  EXPECT_FALSE(l.ready()) << "the request is still unanswered";
  std::this_thread::sleep_for(Ms(30));
  EXPECT_FALSE(l.ready());
  const auto [code, message] = strata::take_status(l.api->send(l.ctx(), 0, 1, 1, 1));
  EXPECT_EQ(code, STRATA_ERR_UNAVAILABLE) << message;
  EXPECT_NE(l.describe().find("0 answered, 1 timed out"), std::string::npos) << l.describe();
  child.tell();
  EXPECT_EQ(child.join(), 0);
}

TEST(peerlink_plugin, AKilledServerFailsTheAwaitAtOnceAndANewOneTakesOver) {
  const std::string file = link_path();
  (void)registry();
  auto doomed = std::make_unique<Child>([&](Child& self) {
    Link l = make_link(file, 1);
    if (l.open(geometry("m")).first != STRATA_OK) return 10;
    if (l.api->set_serving(l.ctx(), 1) != nullptr) return 11;
    self.tell();
    strata_link_request r{};
    while (l.api->next_request(l.ctx(), 100000, &r) == 0) {
      if (self.stop_said()) return 12;
    }
    self.tell();  // took it; now hangs until killed
    for (;;) ::pause();
  });
  Link l = make_link(file, 0, {"deadline_ms=5000"});
  ASSERT_EQ(l.open(geometry("m")).first, STRATA_OK);
  ASSERT_TRUE(doomed->heard());
  ASSERT_TRUE(l.ready_within(1000)) << l.describe();
  strata_link_request r{};
  ASSERT_EQ(l.api->outbox(l.ctx(), &r), nullptr);
  r.experts[0] = 2;
  r.ids[0] = 2;
  ASSERT_EQ(l.api->send(l.ctx(), 0, 1, 1, 1), nullptr);
  std::thread killer([&] {
    if (!doomed->heard()) return;
    std::this_thread::sleep_for(Ms(20));
    doomed->kill_now();  // not reaped until join: a zombie must count as dead too
  });
  const auto t0 = std::chrono::steady_clock::now();
  const uint32_t answered = l.api->await_answer(l.ctx());
  const double waited = ms_since(t0);
  killer.join();
  EXPECT_EQ(answered, 0u);
  EXPECT_GE(waited, 15.0) << "it was killed mid-request";
  EXPECT_LT(waited, 1000.0) << "its death is seen by its pid, long before the 5000 ms deadline";
  EXPECT_EQ(doomed->join(), 128 + SIGKILL);
  EXPECT_FALSE(l.ready());
  EXPECT_NE(l.describe().find("1 lost to the other leaving"), std::string::npos) << l.describe();
  doomed.reset();

  // A new engine takes role 1: the pending request is dropped and the link is ready again.
  Child heir([&](Child& self) {
    Link h = make_link(file, 1);
    if (h.open(geometry("m")).first != STRATA_OK) return 20;
    if (h.api->set_serving(h.ctx(), 1) != nullptr) return 21;
    self.tell();
    strata_link_request q{};
    while (h.api->next_request(h.ctx(), 100000, &q) == 0) {
      if (self.stop_said()) return 22;
    }
    if (q.layer != 2) return 23;  // the dead engine's request (layer 0) was dropped, never served
    serve(q, 8);
    h.api->answer(h.ctx());
    return self.heard() ? 0 : 24;
  });
  ASSERT_TRUE(heir.heard());
  ASSERT_TRUE(l.ready_within(1000)) << l.describe();
  round_trip(l, 8, 3);
  heir.tell();
  EXPECT_EQ(heir.join(), 0);
}

// The numbering across a role's holders, within one process (both roles, one engine each; the same pid may hold
// both). A late answer to a previous holder's request never passes for an answer to the new holder's.
TEST(peerlink_file, ANewHolderNeverTakesAnOldAnswerForItsOwn) {
  const std::string file = link_path();
  const LinkGeometry g{4, 16, 8, 4, 4, "m"};
  const auto quiet = [](const std::string&) {};
  LinkFile server({file, 1, 50, 1000, 10}, g, quiet);
  server.set_serving(true);
  RequestView taken;
  {
    LinkFile requester({file, 0, 50, 1000, 10}, g, quiet);
    ASSERT_TRUE(requester.peer_ready());
    requester.send(1, 1, 1, 0);
    ASSERT_TRUE(server.next_request(1000, &taken));
    EXPECT_EQ(taken.layer, 1u);
  }  // the requester leaves with its request taken but unanswered
  LinkFile heir({file, 0, 50, 1000, 10}, g, quiet);
  EXPECT_TRUE(heir.peer_ready()) << "the previous holder's request is withdrawn: " << heir.describe();
  heir.send(2, 1, 1, 0);
  server.answer();  // the late answer to the withdrawn request
  EXPECT_FALSE(heir.await_answer()) << "answered the old request, not the heir's";
  EXPECT_EQ(heir.counts().timed_out, 1u);
  ASSERT_TRUE(server.next_request(1000, &taken));
  EXPECT_EQ(taken.layer, 2u);
  server.answer();
  EXPECT_TRUE(heir.peer_ready());
  heir.send(3, 1, 1, 0);
  ASSERT_TRUE(server.next_request(1000, &taken));
  server.answer();
  EXPECT_TRUE(heir.await_answer());
}

// A request to a server that is replaced fails, and the new server does not see it.
TEST(peerlink_file, ARequestToAReplacedServerFails) {
  const std::string file = link_path();
  const LinkGeometry g{4, 16, 8, 4, 4, "m"};
  const auto quiet = [](const std::string&) {};
  LinkFile requester({file, 0, 2000, 1000, 10}, g, quiet);
  auto server = std::make_unique<LinkFile>(LinkSettings{file, 1, 50, 1000, 10}, g, quiet);
  server->set_serving(true);
  ASSERT_TRUE(requester.peer_ready());
  requester.send(1, 1, 1, 0);
  server.reset();  // leaves without answering
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(requester.await_answer());
  EXPECT_LT(ms_since(t0), 100.0);
  EXPECT_EQ(requester.counts().peer_gone, 1u);
  EXPECT_FALSE(requester.peer_ready());
  LinkFile heir({file, 1, 50, 1000, 10}, g, quiet);
  heir.set_serving(true);
  RequestView v;
  EXPECT_FALSE(heir.next_request(1000, &v)) << "the request to its predecessor was dropped";
  EXPECT_TRUE(requester.peer_ready());
  EXPECT_EQ(heir.generation(), 3u);
}

}  // namespace
