// The elastic desk (serve.elastic.lanes 2) against fake engines (tests/fake_engine, run through the desk's lane
// commands): one request stays on the lead; a second wakes the helper after the lead detached; routing by the
// longest cached prefix; the helper sleeps after hold_s and the lead re-attaches; a third request waits; a lane that
// dies mid-reply fails its job, one that dies before its first token has its job run again; a lead that does not
// start fails the desk; refused control lines are not fatal; a cancelled job is answered at once.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "strata/config.hpp"
#include "strata/error.hpp"
#include "strata/model.hpp"
#include "strata/serve/desk_lanes.hpp"
#include "strata/serve/elastic_desk.hpp"

namespace {

using namespace strata;
using namespace strata::serve;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::string stories() { return std::string(STRATA_SOURCE_DIR) + "/models/stories260K.gguf"; }

// One line of the fake engines' shared log.
struct Event {
  int pid = 0;
  std::string role, kind, text;
};

struct Reply {
  std::vector<GeneratedToken> tokens;
  std::optional<JobOutcome> outcome;
};

std::shared_ptr<Job> make_job(std::vector<TokenId> prompt, int max_tokens) {
  auto job = std::make_shared<Job>();
  job->prompt = std::move(prompt);
  job->options.max_tokens = max_tokens;
  job->arrival = Clock::now();
  job->deadline = job->arrival + 30s;
  return job;
}

// Takes what the job's channel has until its outcome (or `timeout`).
Reply collect(Job& job, std::chrono::milliseconds timeout = 10s) {
  Reply r;
  const auto give_up = Clock::now() + timeout;
  while (!r.outcome && Clock::now() < give_up) {
    ReplyChannel::Batch b = job.channel.take(20ms);
    r.tokens.insert(r.tokens.end(), b.tokens.begin(), b.tokens.end());
    r.outcome = std::move(b.outcome);
  }
  if (!r.outcome) ADD_FAILURE() << "the job got no outcome within " << timeout.count() << " ms";
  return r;
}

// Waits for the job's first token (which stays in the reply).
void first_token(Job& job, Reply& r) {
  const auto give_up = Clock::now() + 10s;
  while (r.tokens.empty() && !r.outcome && Clock::now() < give_up) {
    ReplyChannel::Batch b = job.channel.take(10ms);
    r.tokens.insert(r.tokens.end(), b.tokens.begin(), b.tokens.end());
    r.outcome = std::move(b.outcome);
  }
  ASSERT_FALSE(r.tokens.empty()) << "no first token";
}

void finish_collect(Job& job, Reply& r) {
  if (r.outcome) return;
  Reply rest = collect(job);
  r.tokens.insert(r.tokens.end(), rest.tokens.begin(), rest.tokens.end());
  r.outcome = std::move(rest.outcome);
}

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout = 5s) {
  const auto give_up = Clock::now() + timeout;
  while (Clock::now() < give_up) {
    if (done()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return done();
}

// Tokens of a lead's job that must still run while the helper wakes for a second one (10 ms each): waking a
// fake engine takes milliseconds, so this leaves a wide margin on a loaded machine.
constexpr int kLong = 40;

// The ids the fake engine sends after `prompt`.
std::vector<TokenId> fake_ids(const std::vector<TokenId>& prompt, int n) {
  std::vector<TokenId> ids;
  for (int i = 0; i < n; ++i) ids.push_back(3 + (prompt.back() + i) % 509);
  return ids;
}

class ServeDesk : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = Model::load(stories()).release(); }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }

  void SetUp() override {
    static int n = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("strata-desk-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    log_ = (dir_ / "engines.log").string();
    for (const char* v : kKnobs) ::unsetenv(v);
    ::setenv("FAKE_ENGINE_LOG", log_.c_str(), 1);
    ::setenv("FAKE_ENGINE_TOKEN_MS", "10", 1);
  }
  void TearDown() override {
    desk_.reset();
    for (const char* v : kKnobs) ::unsetenv(v);
    std::filesystem::remove_all(dir_);
  }

  // The lanes' commands as `strata serve` builds them, with the fake engine as the executable. `linked`: the
  // launch has a second card (runtime.peer_device 0), so the pair has a link and the lanes have roles.
  DeskOptions options(bool linked, double hold_s = 0.3) const {
    config::Launch launch = config::defaults();
    launch.runtime.peer_device = linked ? 0 : -1;
    const DeskLanes lanes = desk_lanes(launch, STRATA_FAKE_ENGINE, {"--model", stories()}, (dir_ / "pair.link").string());
    DeskOptions o;
    o.lead = lanes.lead;
    o.helper = lanes.helper;
    o.linked = !lanes.link_file.empty();
    o.link_file = lanes.link_file;
    o.hold_s = hold_s;
    o.queue = 4;
    o.pool_hold = 3;
    return o;
  }
  ElasticDesk& start(DeskOptions o) {
    desk_ = std::make_unique<ElasticDesk>(model_->tokenizer(), std::move(o), metrics_);
    return *desk_;
  }

  std::vector<Event> events() const {
    std::vector<Event> out;
    std::ifstream in(log_);
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      Event e;
      words >> e.pid >> e.role >> e.kind;
      std::getline(words >> std::ws, e.text);
      out.push_back(e);
    }
    return out;
  }
  // The index of the first event matching, or -1.
  static int find(const std::vector<Event>& events, const std::function<bool(const Event&)>& match) {
    for (size_t i = 0; i < events.size(); ++i) {
      if (match(events[i])) return static_cast<int>(i);
    }
    return -1;
  }
  static int count(const std::vector<Event>& events, const std::function<bool(const Event&)>& match) {
    return static_cast<int>(std::count_if(events.begin(), events.end(), match));
  }
  // The process the request line with this prompt was sent to (the last one, when it was sent again), or 0.
  static int receiver(const std::vector<Event>& events, const std::vector<TokenId>& prompt) {
    int pid = 0;
    for (const Event& e : events) {
      if (e.kind != "recv" || !e.text.starts_with("{")) continue;
      const json r = json::parse(e.text);
      if (r["prompt_ids"] == json(prompt)) pid = e.pid;
    }
    return pid;
  }
  static int started(const std::vector<Event>& events, size_t nth) {  // the pid of the nth process started
    size_t seen = 0;
    for (const Event& e : events) {
      if (e.kind == "start" && seen++ == nth) return e.pid;
    }
    return 0;
  }

  static constexpr const char* kKnobs[] = {"FAKE_ENGINE_LOG",       "FAKE_ENGINE_TOKEN_MS", "FAKE_ENGINE_ROLE",
                                           "FAKE_ENGINE_DIE_AFTER", "FAKE_ENGINE_DIE_ONCE", "FAKE_ENGINE_FAIL_START",
                                           "FAKE_ENGINE_REFUSE"};
  static Model* model_;
  std::filesystem::path dir_;
  std::string log_;
  ServerMetrics metrics_;
  std::unique_ptr<ElasticDesk> desk_;
};
Model* ServeDesk::model_ = nullptr;

TEST_F(ServeDesk, OneRequestGoesToTheLeadAndTheHelperSleeps) {
  ElasticDesk& desk = start(options(false));
  const std::vector<TokenId> prompt = {1, 50, 60};
  auto job = make_job(prompt, 5);
  ASSERT_TRUE(desk.submit(job));
  const Reply r = collect(*job);
  ASSERT_TRUE(r.outcome);
  ASSERT_FALSE(r.outcome->error) << r.outcome->error->message;
  EXPECT_EQ(r.outcome->result.generated_ids, fake_ids(prompt, 5));
  EXPECT_EQ(r.outcome->result.stop, StopCause::MaxTokens);
  EXPECT_EQ(r.outcome->prompt_tokens, 3u);
  // The text is the tokenizer's for those ids, streamed token by token as the engine worker streams it.
  std::string streamed;
  for (const GeneratedToken& t : r.tokens) streamed += t.text;
  EXPECT_EQ(streamed, r.outcome->result.text);
  EXPECT_EQ(r.outcome->result.text, model_->tokenizer().decode(fake_ids(prompt, 5)));

  const std::vector<Event> ev = events();
  EXPECT_EQ(count(ev, [](const Event& e) { return e.kind == "start"; }), 1) << "the helper stays asleep";
  EXPECT_EQ(receiver(ev, prompt), started(ev, 0));
  EXPECT_EQ(find(ev, [](const Event& e) { return e.text == "PEER_DETACH"; }), -1);
  EXPECT_EQ(desk.lane_state(1).pid, -1);
  EXPECT_TRUE(desk.lane_state(0).awake);
}

TEST_F(ServeDesk, SecondRequestWakesTheHelperAfterTheLeadDetached) {
  ElasticDesk& desk = start(options(true, 5));
  const std::vector<TokenId> pa = {1, 10, 11}, pb = {1, 20, 21};
  auto a = make_job(pa, kLong), b = make_job(pb, 5);
  ASSERT_TRUE(desk.submit(a));
  Reply ra;
  first_token(*a, ra);
  ASSERT_TRUE(desk.submit(b));
  const Reply rb = collect(*b);
  finish_collect(*a, ra);
  ASSERT_TRUE(ra.outcome && rb.outcome);
  ASSERT_FALSE(ra.outcome->error);
  ASSERT_FALSE(rb.outcome->error) << rb.outcome->error->message;
  EXPECT_EQ(ra.outcome->result.generated_ids, fake_ids(pa, kLong));
  EXPECT_EQ(rb.outcome->result.generated_ids, fake_ids(pb, 5));

  const std::vector<Event> ev = events();
  const int lead = started(ev, 0), helper = started(ev, 1);
  ASSERT_NE(helper, 0) << "the helper started";
  const auto of = [&](int pid, const std::string& kind, const std::string& text) {
    return find(ev, [&](const Event& e) { return e.pid == pid && e.kind == kind && e.text.starts_with(text); });
  };
  const int detach = of(lead, "recv", "PEER_DETACH"), hold = of(lead, "recv", "POOL_HOLD 3");
  const int helper_start = of(helper, "start", "");
  ASSERT_GE(detach, 0);
  ASSERT_GE(hold, 0);
  EXPECT_LT(detach, helper_start);
  EXPECT_LT(hold, helper_start);
  EXPECT_GT(of(lead, "recv", "LINK_SERVE 1"), helper_start);
  EXPECT_GT(of(helper, "recv", "LINK_SERVE 1"), helper_start);
  EXPECT_EQ(receiver(ev, pa), lead);
  EXPECT_EQ(receiver(ev, pb), helper);
  // The lanes' roles on the link, and the helper on the second card.
  const std::string lead_args = ev[static_cast<size_t>(of(lead, "start", ""))].text;
  const std::string helper_args = ev[static_cast<size_t>(helper_start)].text;
  EXPECT_NE(lead_args.find("--peer-link-role 0"), std::string::npos) << lead_args;
  EXPECT_NE(helper_args.find("--peer-link-role 1 -o runtime.peer_device=-1 -o plugins.cuda.device=0"), std::string::npos)
      << helper_args;
  EXPECT_NE(lead_args.find("--peer-link " + (dir_ / "pair.link").string()), std::string::npos) << lead_args;
  EXPECT_TRUE(lead_args.starts_with("engine --model ")) << lead_args;
  EXPECT_NE(metrics_.prometheus({}).find("strata_desk_wakes_total 1"), std::string::npos);
}

TEST_F(ServeDesk, RoutesToTheLaneWithTheLongestCachedPrefix) {
  ElasticDesk& desk = start(options(false, 30));
  const std::vector<TokenId> pa = {1, 30, 31, 32}, pb = {1, 40, 41, 42};
  auto a = make_job(pa, kLong), b = make_job(pb, 4);
  ASSERT_TRUE(desk.submit(a));
  Reply ra;
  first_token(*a, ra);
  ASSERT_TRUE(desk.submit(b));
  collect(*b);
  finish_collect(*a, ra);
  ASSERT_TRUE(eventually([&] { return !desk.lane_state(0).busy && !desk.lane_state(1).busy && desk.lane_state(1).awake; }));
  const int lead = desk.lane_state(0).pid, helper = desk.lane_state(1).pid;

  // The next turn of each conversation goes where that conversation is; a new one to the lead.
  std::vector<TokenId> next_b = pb;
  for (TokenId t : fake_ids(pb, 4)) next_b.push_back(t);
  next_b.push_back(7);
  std::vector<TokenId> next_a = pa;
  for (TokenId t : fake_ids(pa, kLong)) next_a.push_back(t);
  next_a.push_back(8);
  const std::vector<TokenId> fresh = {1, 99, 98};
  for (const auto& prompt : {next_b, next_a, fresh}) {
    auto job = make_job(prompt, 2);
    ASSERT_TRUE(desk.submit(job));
    const Reply r = collect(*job);
    ASSERT_TRUE(r.outcome && !r.outcome->error);
  }
  const std::vector<Event> ev = events();
  EXPECT_EQ(receiver(ev, next_b), helper);
  EXPECT_EQ(receiver(ev, next_a), lead);
  EXPECT_EQ(receiver(ev, fresh), lead) << "a tie goes to the lead";
}

TEST_F(ServeDesk, HelperSleepsAfterHoldAndTheLeadReattaches) {
  ElasticDesk& desk = start(options(true, 0.3));
  for (int round = 0; round < 2; ++round) {
    auto a = make_job({1, 5, 6}, kLong), b = make_job({1, 7, 8}, 3);
    ASSERT_TRUE(desk.submit(a));
    Reply ra;
    first_token(*a, ra);
    ASSERT_TRUE(desk.submit(b));
    const Reply rb = collect(*b);
    finish_collect(*a, ra);
    ASSERT_TRUE(ra.outcome && !ra.outcome->error && rb.outcome && !rb.outcome->error);
    const int helper = started(events(), static_cast<size_t>(round + 1));
    ASSERT_NE(helper, 0);
    // hold_s after its request the helper exits; then the lead unlinks, takes its pool and the peer card back.
    ASSERT_TRUE(eventually([&] {
      const std::vector<Event> ev = events();
      return find(ev, [](const Event& e) { return e.text == "PEER_ATTACH"; }) >= 0 &&
             count(ev, [](const Event& e) { return e.text == "PEER_ATTACH"; }) == round + 1;
    })) << "no PEER_ATTACH";
    const std::vector<Event> ev = events();
    const int lead = started(ev, 0);
    const int exit = find(ev, [&](const Event& e) { return e.pid == helper && e.kind == "exit"; });
    ASSERT_GE(exit, 0) << "the helper exited";
    EXPECT_EQ(ev[static_cast<size_t>(exit)].text, "0") << "it ended at the end of its input";
    const auto after_exit = [&](const std::string& line) {
      for (size_t i = static_cast<size_t>(exit); i < ev.size(); ++i) {
        if (ev[i].pid == lead && ev[i].kind == "recv" && ev[i].text == line) return static_cast<int>(i);
      }
      return -1;
    };
    const int unlink = after_exit("LINK_SERVE 0"), unhold = after_exit("POOL_HOLD 0"), attach = after_exit("PEER_ATTACH");
    EXPECT_GT(unlink, exit);
    EXPECT_GT(unhold, unlink);
    EXPECT_GT(attach, unhold);
    EXPECT_TRUE(eventually([&] { return desk.lane_state(1).pid == -1; }));
    EXPECT_NE(::kill(helper, 0), 0) << "its process is gone";
  }
  const std::string m = metrics_.prometheus({});
  EXPECT_NE(m.find("strata_desk_wakes_total 2"), std::string::npos) << m;
  EXPECT_NE(m.find("strata_desk_sleeps_total 2"), std::string::npos) << m;
}

TEST_F(ServeDesk, ThirdRequestWaitsForALane) {
  DeskOptions o = options(false);
  o.queue = 1;
  ElasticDesk& desk = start(std::move(o));
  const std::vector<TokenId> pa = {1, 11}, pb = {1, 12}, pc = {1, 13};
  auto a = make_job(pa, kLong), b = make_job(pb, kLong), c = make_job(pc, 10);
  ASSERT_TRUE(desk.submit(a));
  ASSERT_TRUE(desk.submit(b));
  ASSERT_TRUE(desk.submit(c));
  auto d = make_job({1, 14}, 10);
  EXPECT_FALSE(desk.submit(d)) << "two lanes and serve.queue 1: a fourth is refused (503)";
  EXPECT_TRUE(eventually([&] { return desk.queued() == 1 && desk.active() == 2; })) << "the third waits";
  for (auto* job : {&a, &b, &c}) {
    const Reply r = collect(**job);
    ASSERT_TRUE(r.outcome && !r.outcome->error);
    EXPECT_EQ(r.outcome->result.generated_ids.size(), job == &c ? 10u : static_cast<size_t>(kLong));
  }
  const std::vector<Event> ev = events();
  const int c_sent = find(ev, [&](const Event& e) {
    return e.kind == "recv" && e.text.starts_with("{") && json::parse(e.text)["prompt_ids"] == json(pc);
  });
  const int first_done = find(ev, [](const Event& e) { return e.kind == "done"; });
  ASSERT_GE(c_sent, 0);
  EXPECT_GT(c_sent, first_done) << "the third went out when a lane was free";
  EXPECT_EQ(count(ev, [](const Event& e) { return e.kind == "start"; }), 2);
  EXPECT_EQ(find(ev, [](const Event& e) { return e.text.starts_with("LINK_SERVE"); }), -1) << "no link, no LINK_SERVE";
  EXPECT_EQ(ev[static_cast<size_t>(find(ev, [](const Event& e) { return e.kind == "start"; }))].text.find("--peer-link"),
            std::string::npos);
}

TEST_F(ServeDesk, LaneDyingMidReplyFailsItsJobAndTheLeadStartsAgain) {
  ::setenv("FAKE_ENGINE_ROLE", "0", 1);
  ::setenv("FAKE_ENGINE_DIE_AFTER", "3", 1);
  ::setenv("FAKE_ENGINE_DIE_ONCE", (dir_ / "died").c_str(), 1);
  ElasticDesk& desk = start(options(true));
  auto a = make_job({1, 5}, 10);
  ASSERT_TRUE(desk.submit(a));
  const Reply ra = collect(*a);
  ASSERT_TRUE(ra.outcome);
  EXPECT_EQ(ra.tokens.size(), 3u);
  ASSERT_TRUE(ra.outcome->error);
  EXPECT_EQ(ra.outcome->error->status, 502);
  EXPECT_NE(ra.outcome->error->message.find("the engine lane died mid-reply"), std::string::npos) << ra.outcome->error->message;
  EXPECT_NE(ra.outcome->error->message.find("exited with status 3"), std::string::npos) << ra.outcome->error->message;
  // The lead is started again and serves the next request.
  auto b = make_job({1, 6}, 4);
  ASSERT_TRUE(desk.submit(b));
  const Reply rb = collect(*b);
  ASSERT_TRUE(rb.outcome);
  ASSERT_FALSE(rb.outcome->error) << rb.outcome->error->message;
  const std::vector<Event> ev = events();
  EXPECT_EQ(count(ev, [](const Event& e) { return e.kind == "start" && e.role == "0"; }), 2);
  EXPECT_NE(metrics_.prometheus({}).find("strata_desk_lane_deaths_total 1"), std::string::npos);
}

TEST_F(ServeDesk, JobWhoseLaneDiedBeforeItsFirstTokenRunsAgain) {
  ::setenv("FAKE_ENGINE_ROLE", "1", 1);
  ::setenv("FAKE_ENGINE_DIE_AFTER", "0", 1);
  ElasticDesk& desk = start(options(true));
  const std::vector<TokenId> pa = {1, 15}, pb = {1, 16};
  auto a = make_job(pa, kLong), b = make_job(pb, 5);
  ASSERT_TRUE(desk.submit(a));
  Reply ra;
  first_token(*a, ra);
  ASSERT_TRUE(desk.submit(b));
  const Reply rb = collect(*b);
  finish_collect(*a, ra);
  ASSERT_TRUE(ra.outcome && !ra.outcome->error);
  ASSERT_TRUE(rb.outcome);
  ASSERT_FALSE(rb.outcome->error) << rb.outcome->error->message;
  EXPECT_EQ(rb.outcome->result.generated_ids, fake_ids(pb, 5)) << "run again from the start, whole";
  const std::vector<Event> ev = events();
  const int lead = started(ev, 0), helper = started(ev, 1);
  EXPECT_GE(find(ev, [&](const Event& e) { return e.pid == helper && e.kind == "die"; }), 0);
  EXPECT_EQ(receiver(ev, pb), lead) << "the lead ran it after the helper died";
  // The dead helper is asleep again: the lead took its card back.
  EXPECT_TRUE(eventually([&] {
    return find(events(), [&](const Event& e) { return e.pid == lead && e.text == "PEER_ATTACH"; }) >= 0;
  }));
  EXPECT_EQ(desk.lane_state(1).pid, -1);
}

TEST_F(ServeDesk, LeadThatFailsToStartFailsTheDesk) {
  ::setenv("FAKE_ENGINE_FAIL_START", "1", 1);
  try {
    start(options(false));
    FAIL() << "the desk started without a lead";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("the lead engine lane did not start"), std::string::npos) << what;
    EXPECT_NE(what.find("exited with status 1"), std::string::npos) << what;
    EXPECT_NE(what.find("cannot load the model"), std::string::npos) << what;
  }
  ::unsetenv("FAKE_ENGINE_FAIL_START");
  DeskOptions o = options(false);
  o.lead.executable = (dir_ / "no-such-engine").string();
  try {
    start(std::move(o));
    FAIL() << "the desk started without a lead";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot start the lead engine lane"), std::string::npos) << e.what();
  }
}

TEST_F(ServeDesk, RefusedControlLinesAreNotFatal) {
  ::setenv("FAKE_ENGINE_REFUSE", "1", 1);  // as an engine on the CPU answers them
  ElasticDesk& desk = start(options(true));
  auto a = make_job({1, 17}, kLong), b = make_job({1, 18}, 3);
  ASSERT_TRUE(desk.submit(a));
  Reply ra;
  first_token(*a, ra);
  ASSERT_TRUE(desk.submit(b));
  const Reply rb = collect(*b);
  finish_collect(*a, ra);
  ASSERT_TRUE(ra.outcome && !ra.outcome->error && rb.outcome && !rb.outcome->error);
  EXPECT_EQ(receiver(events(), {1, 18}), started(events(), 1)) << "the helper woke all the same";
}

TEST_F(ServeDesk, CancelledJobIsAnsweredAtOnceAndItsLaneWaitsForTheDoneLine) {
  ElasticDesk& desk = start(options(false));
  auto a = make_job({1, 19}, kLong);
  ASSERT_TRUE(desk.submit(a));
  Reply ra;
  first_token(*a, ra);
  a->cancelled = true;  // the client left
  const auto t0 = Clock::now();
  finish_collect(*a, ra);
  ASSERT_TRUE(ra.outcome);
  EXPECT_EQ(ra.outcome->result.stop, StopCause::Cancelled);
  EXPECT_LT(Clock::now() - t0, 300ms) << "answered within a token or a tick, not at the engine's end";
  EXPECT_LT(ra.outcome->result.generated_ids.size(), static_cast<size_t>(kLong));
  EXPECT_TRUE(desk.lane_state(0).busy) << "the engine is still on that request";
  // The desk tells the engine to stop it (at the next tick): CANCEL with the request line's id.
  const auto until = Clock::now() + 2s;
  int cancel = -1;
  while (cancel < 0 && Clock::now() < until) {
    cancel = find(events(), [](const Event& e) { return e.kind == "recv" && e.text.starts_with("CANCEL "); });
    if (cancel < 0) std::this_thread::sleep_for(20ms);
  }
  EXPECT_GE(cancel, 0) << "the lane got no CANCEL";
  auto b = make_job({1, 20}, 2);
  ASSERT_TRUE(desk.submit(b));
  ASSERT_TRUE(collect(*b).outcome);
  const std::vector<Event> ev = events();
  const int lead = started(ev, 0);
  if (receiver(ev, {1, 20}) == lead) {
    const int done_a = find(ev, [&](const Event& e) { return e.pid == lead && e.kind == "done"; });
    const int sent_b = find(ev, [&](const Event& e) { return e.pid == lead && e.text.find("[1,20]") != std::string::npos; });
    EXPECT_GT(sent_b, done_a) << "the lead got nothing new before its done line";
  }
}

}  // namespace
