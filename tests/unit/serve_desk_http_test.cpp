// `strata serve` with serve.elastic.lanes 2, end to end: the real executable, its lanes the fake engine through the
// test hook STRATA_DESK_ENGINE, spoken to over HTTP. Plain and streamed replies, two requests at once (the helper
// wakes), what the desk cannot serve (400), the lanes' arguments, a clean exit on SIGTERM that ends the lanes, and
// a lead that does not start ending `strata serve` with its reason; and the real `strata engine` as lanes, whose
// replies are the one-engine server's.
#include <gtest/gtest.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "serve_process.hpp"

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

using strata::test::ServeProcess;
std::string stories() { return strata::test::stories_model(); }

class ServeDeskHttp : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("strata-desk-http-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    log_ = (dir_ / "engines.log").string();
    setenv("STRATA_DESK_ENGINE", STRATA_FAKE_ENGINE, 1);
    setenv("FAKE_ENGINE_LOG", log_.c_str(), 1);
    setenv("FAKE_ENGINE_TOKEN_MS", "10", 1);
  }
  void TearDown() override {
    for (const char* v : {"STRATA_DESK_ENGINE", "FAKE_ENGINE_LOG", "FAKE_ENGINE_TOKEN_MS", "FAKE_ENGINE_FAIL_START"}) unsetenv(v);
    std::filesystem::remove_all(dir_);
  }
  std::vector<std::string> log_lines() const {
    std::vector<std::string> out;
    std::ifstream in(log_);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  std::filesystem::path dir_;
  std::string log_;
};

TEST_F(ServeDeskHttp, TwoLanesBehindTheServer) {
  ServeProcess serve({"-o", "serve.elastic.lanes=2", "-o", "serve.elastic.hold_s=0.3", "-o", "runtime.context=512"});
  ASSERT_GT(serve.port(), 0) << serve.stderr_text();
  httplib::Client c = serve.client();

  auto res = c.Post("/v1/completions", json{{"prompt", "Once upon a time"}, {"max_tokens", 6}}.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json whole = json::parse(res->body);
  EXPECT_EQ(whole["usage"]["completion_tokens"], 6);
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "length");

  // Streamed, the same text as the whole reply (the fake engine answers the same prompt the same way).
  res = c.Post("/v1/completions", json{{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"stream", true}}.dump(),
               "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  std::string text;
  std::istringstream events(res->body);
  for (std::string line; std::getline(events, line);) {
    if (!line.starts_with("data: {")) continue;
    const json chunk = json::parse(line.substr(6));
    text += chunk["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, whole["choices"][0]["text"]);
  EXPECT_TRUE(res->body.ends_with("data: [DONE]\n\n"));

  // What the lanes' lines cannot carry is refused by name.
  res = c.Post("/v1/completions", json{{"prompt", "Once"}, {"max_tokens", 2}, {"logprobs", true}}.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_EQ(json::parse(res->body)["error"]["param"], "logprobs");

  // Two at once: both answered, the helper woke for the second.
  int status[2] = {0, 0};
  std::thread first([&] {
    httplib::Client c1 = serve.client();
    auto r = c1.Post("/v1/completions", json{{"prompt", "The dog"}, {"max_tokens", 30}}.dump(), "application/json");
    status[0] = r ? r->status : -1;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto second = c.Post("/v1/chat/completions",
                       json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 3}}.dump(),
                       "application/json");
  first.join();
  status[1] = second ? second->status : -1;
  EXPECT_EQ(status[0], 200);
  EXPECT_EQ(status[1], 200) << (second ? second->body : "");
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("strata_desk_wakes_total 1"), std::string::npos) << metrics->body;

  EXPECT_EQ(serve.stop(), 0) << serve.stderr_text();
  // The lanes got the server's launch, and both ended with it.
  const std::vector<std::string> lines = log_lines();
  int starts = 0, exits = 0;
  for (const std::string& line : lines) {
    if (line.find(" start ") != std::string::npos) {
      ++starts;
      EXPECT_NE(line.find("start engine -o serve.elastic.lanes=2 -o serve.elastic.hold_s=0.3 -o runtime.context=512 "
                          "--model " + stories()),
                std::string::npos)
          << line;
    }
    if (line.find(" exit ") != std::string::npos) ++exits;
  }
  EXPECT_EQ(starts, 2);
  EXPECT_EQ(exits, 2) << "every lane ended";
}

// The real `strata engine` as lanes (on the CPU, which refuses the peer and pool lines): each reply is the one the
// one-engine server gives, chat end tokens, a BOS-only prompt's leading space and stop strings included.
TEST_F(ServeDeskHttp, RealEngineLanesAnswerAsOneEngine) {
  unsetenv("STRATA_DESK_ENGINE");
  ServeProcess desk({"-o", "serve.elastic.lanes=2", "-o", "serve.elastic.hold_s=0.5", "-o", "runtime.context=512"});
  ServeProcess one({"-o", "runtime.context=512"});
  ASSERT_GT(desk.port(), 0) << desk.stderr_text();
  ASSERT_GT(one.port(), 0) << one.stderr_text();
  const auto ask = [](const ServeProcess& s, const std::string& path, const json& body) {
    httplib::Client c = s.client();
    auto r = c.Post(path, body.dump(), "application/json");
    if (!r || r->status != 200) return json{{"failed", r ? r->body : "no answer"}};
    json reply = json::parse(r->body);
    reply.erase("id");
    reply.erase("created");
    // The engine lanes run each request from position 0: nothing is cached there (yet).
    reply["usage"].erase("prompt_tokens_details");
    return reply;
  };
  const json chat = {{"messages", {{{"role", "user"}, {"content", "Tell me a story."}}}}, {"max_tokens", 40}, {"temperature", 0}};
  const std::vector<std::pair<std::string, json>> cases = {
      {"/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 60}, {"temperature", 0}}},
      {"/v1/completions", {{"prompt", ""}, {"max_tokens", 20}, {"temperature", 0}}},
      {"/v1/completions", {{"prompt", "The cat"}, {"max_tokens", 40}, {"temperature", 0.8}, {"seed", 7}, {"stop", {"."}}}},
      {"/v1/chat/completions", chat}};
  for (const auto& c : cases) EXPECT_EQ(ask(desk, c.first, c.second), ask(one, c.first, c.second)) << c.second.dump();
  // The penalties and the logit bias go down the lanes' lines (and change the reply, or this would prove nothing).
  json penalised = {{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 0}, {"frequency_penalty", 1.5},
                    {"presence_penalty", 0.5}, {"logit_bias", {{"300", 3}, {"13", -100}}}};
  EXPECT_EQ(ask(desk, "/v1/completions", penalised), ask(one, "/v1/completions", penalised));
  EXPECT_NE(ask(one, "/v1/completions", penalised), ask(one, "/v1/completions", cases[0].second));

  // Two at once (the helper wakes when the first still runs): each reply is still the one it gets alone.
  const json long_body = {{"prompt", "Once upon a time"}, {"max_tokens", 200}, {"temperature", 0}};
  const json short_body = {{"prompt", "The dog"}, {"max_tokens", 30}, {"temperature", 0}};
  json long_reply;
  std::thread first([&] { long_reply = ask(desk, "/v1/completions", long_body); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const json short_reply = ask(desk, "/v1/completions", short_body);
  first.join();
  EXPECT_EQ(long_reply, ask(one, "/v1/completions", long_body));
  EXPECT_EQ(short_reply, ask(one, "/v1/completions", short_body));
  EXPECT_EQ(desk.stop(), 0) << desk.stderr_text();
  EXPECT_EQ(one.stop(), 0);
}

TEST_F(ServeDeskHttp, LeadThatDoesNotStartEndsServeWithItsReason) {
  setenv("FAKE_ENGINE_FAIL_START", "1", 1);
  ServeProcess serve({"-o", "serve.elastic.lanes=2"}, false);
  EXPECT_EQ(serve.port(), 0) << "it listened without an engine";
  EXPECT_EQ(serve.stop(0), 2);
  EXPECT_NE(serve.stderr_text().find("strata: error: the lead engine lane did not start: it exited with status 1"),
            std::string::npos)
      << serve.stderr_text();
  EXPECT_NE(serve.stderr_text().find("cannot load the model"), std::string::npos) << serve.stderr_text();
}

}  // namespace
