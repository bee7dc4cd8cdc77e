// `strata serve` end to end: the real executable on stories260K (--port 0), spoken to over HTTP with httplib's
// client: whole and streamed chat completions, the prompt cache across turns, greedy /v1/completions equal to
// `strata run`, the side endpoints, OpenAI-style 4xx for bad input, the API key, the body limit, a full queue,
// a client that leaves mid-stream, and a clean exit on SIGTERM.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "serve_process.hpp"

namespace {

using json = nlohmann::json;
using strata::test::ServeProcess;

std::string stories() { return strata::test::stories_model(); }

json chat_body(const json& messages, int max_tokens) {
  return {{"messages", messages}, {"max_tokens", max_tokens}, {"temperature", 0}};
}

json post_json(httplib::Client& c, const std::string& path, const json& body, int want_status) {
  auto res = c.Post(path, body.dump(), "application/json");
  if (!res) {
    ADD_FAILURE() << "no answer from " << path;
    return {};
  }
  EXPECT_EQ(res->status, want_status) << path << " " << body.dump() << " -> " << res->body;
  return json::parse(res->body, nullptr, false);
}

// The data of every event of a server-sent event stream.
std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
  }
  return out;
}

class ServeHttp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServeProcess({"-o", "runtime.context=512", "-o", "runtime.slots=2"}); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static ServeProcess* server_;
};
ServeProcess* ServeHttp::server_ = nullptr;

TEST_F(ServeHttp, ChatCompletionWhole) {
  httplib::Client c = server_->client();
  const json r = post_json(c, "/v1/chat/completions",
                           chat_body({{{"role", "user"}, {"content", "Tell me a story."}}}, 16), 200);
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["model"], "stories260K");
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  EXPECT_TRUE(r["choices"][0]["message"]["content"].is_string());
  EXPECT_FALSE(r["choices"][0]["message"]["content"].get<std::string>().empty());
  const std::string finish = r["choices"][0]["finish_reason"];
  EXPECT_TRUE(finish == "length" || finish == "stop") << finish;
  EXPECT_GT(r["usage"]["prompt_tokens"].get<int>(), 5);
  EXPECT_LE(r["usage"]["completion_tokens"].get<int>(), 16);
  EXPECT_EQ(r["usage"]["total_tokens"].get<int>(),
            r["usage"]["prompt_tokens"].get<int>() + r["usage"]["completion_tokens"].get<int>());
}

TEST_F(ServeHttp, ChatCompletionStreamedMatchesWhole) {
  httplib::Client c = server_->client();
  const json messages = {{{"role", "user"}, {"content", "Once upon a time there was a dog."}}};
  const json whole = post_json(c, "/v1/chat/completions", chat_body(messages, 24), 200);
  json body = chat_body(messages, 24);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  auto res = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_NE(res->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  const std::vector<std::string> events = sse_data(res->body);
  ASSERT_GE(events.size(), 4u) << res->body;
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(res->body.substr(res->body.size() - 14), "data: [DONE]\n\n");
  const json first = json::parse(events.front());
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  std::string text, finish;
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    const json chunk = json::parse(events[i]);
    EXPECT_EQ(chunk["id"], first["id"]);
    const json& choice = chunk["choices"][0];
    if (choice["delta"].contains("content")) text += choice["delta"]["content"].get<std::string>();
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
  }
  EXPECT_EQ(text, whole["choices"][0]["message"]["content"]);
  EXPECT_EQ(finish, whole["choices"][0]["finish_reason"]);
  const json usage = json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], whole["usage"]["completion_tokens"]);
  EXPECT_EQ(usage["usage"]["prompt_tokens"], whole["usage"]["prompt_tokens"]);
  // The same request again: the whole prompt but its last token comes from the slot.
  EXPECT_EQ(usage["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(),
            usage["usage"]["prompt_tokens"].get<int>() - 1);
}

TEST_F(ServeHttp, SecondTurnReusesTheFirstFromTheCache) {
  httplib::Client c = server_->client();
  json messages = {{{"role", "system"}, {"content", "You tell stories about a frog named Pip."}},
                   {{"role", "user"}, {"content", "Where does Pip live?"}}};
  const json first = post_json(c, "/v1/chat/completions", chat_body(messages, 12), 200);
  const int first_prompt = first["usage"]["prompt_tokens"];
  messages.push_back({{"role", "assistant"}, {"content", first["choices"][0]["message"]["content"]}});
  messages.push_back({{"role", "user"}, {"content", "And what does he eat?"}});
  const json second = post_json(c, "/v1/chat/completions", chat_body(messages, 12), 200);
  const int cached = second["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GE(cached, first_prompt);  // at least the first turn's prompt
  EXPECT_LT(cached, second["usage"]["prompt_tokens"].get<int>());
}

TEST_F(ServeHttp, GreedyCompletionEqualsStrataRun) {
  const std::string cmd = std::string(STRATA_EXE) + " run --model " + stories() +
                          " --prompt 'Once upon a time' -n 40 --temperature 0 --json 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ASSERT_EQ(pclose(p), 0);
  const json run = json::parse(out);
  ASSERT_TRUE(run.is_object()) << cmd << " printed: " << out;
  httplib::Client c = server_->client();
  const json r = post_json(c, "/v1/completions",
                           {{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 0}}, 200);
  ASSERT_TRUE(r.is_object()) << r.dump();
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["choices"][0]["text"], run["text"]);
  EXPECT_EQ(r["usage"]["prompt_tokens"], run["prompt_ids"].size());
  EXPECT_EQ(r["usage"]["completion_tokens"], run["generated_ids"].size());
}

// runtime.slots 2: two requests run at once, decoded in shared steps, and each gets the text it gets alone.
TEST_F(ServeHttp, TwoRequestsAtOnceEachGetTheirOwnText) {
  const auto body = [](const std::string& prompt, uint64_t seed) {
    return json{{"prompt", prompt}, {"max_tokens", 300}, {"temperature", 0.8}, {"seed", seed}};
  };
  const json a = body("Once upon a time", 5), b = body("The little dog ran", 9);
  httplib::Client c = server_->client();
  const std::string alone_a = post_json(c, "/v1/completions", a, 200)["choices"][0]["text"];
  const std::string alone_b = post_json(c, "/v1/completions", b, 200)["choices"][0]["text"];
  const auto steps = [&]() {
    httplib::Client m = server_->client();
    const auto r = m.Get("/metrics");
    double total = 0, sequences = 0;
    std::istringstream in(r ? r->body : "");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("strata_decode_steps_total ", 0) == 0) total = std::stod(line.substr(line.find(' ') + 1));
      if (line.rfind("strata_decode_step_sequences_total ", 0) == 0) sequences = std::stod(line.substr(line.find(' ') + 1));
    }
    return std::pair{total, sequences};
  };
  // Whether two requests overlap depends on timing: a few tries, each must keep both texts.
  bool shared = false;
  for (int attempt = 0; attempt < 5 && !shared; ++attempt) {
    const auto before = steps();
    std::string got_a, got_b;
    std::thread ta([&] {
      httplib::Client ca = server_->client();
      got_a = post_json(ca, "/v1/completions", a, 200)["choices"][0]["text"];
    });
    std::thread tb([&] {
      httplib::Client cb = server_->client();
      got_b = post_json(cb, "/v1/completions", b, 200)["choices"][0]["text"];
    });
    ta.join();
    tb.join();
    EXPECT_EQ(got_a, alone_a);
    EXPECT_EQ(got_b, alone_b);
    const auto after = steps();
    // A step of two sequences adds 1 step and 2 sequences: more sequences than steps means some were shared.
    shared = after.second - before.second > after.first - before.first;
  }
  EXPECT_TRUE(shared) << "in five tries the two requests never shared a decode step";
}

TEST_F(ServeHttp, LogprobsAndStopStrings) {
  httplib::Client c = server_->client();
  json body = {{"prompt", "Once upon a time"}, {"max_tokens", 30}, {"temperature", 0}, {"logprobs", 2}};
  const json lp = post_json(c, "/v1/completions", body, 200);
  const json& l = lp["choices"][0]["logprobs"];
  ASSERT_EQ(l["tokens"].size(), lp["usage"]["completion_tokens"].get<size_t>());
  for (size_t i = 0; i < l["tokens"].size(); ++i) {
    EXPECT_LE(l["token_logprobs"][i].get<double>(), 0.0);
    EXPECT_EQ(l["top_logprobs"][i].size(), 2u);
  }
  // Stop at the first word of the greedy story after a few tokens: the text ends before it.
  const std::string story = lp["choices"][0]["text"];
  const std::string stop = story.substr(story.size() / 2, 4);
  body = {{"prompt", "Once upon a time"}, {"max_tokens", 30}, {"temperature", 0}, {"stop", stop}};
  const json stopped = post_json(c, "/v1/completions", body, 200);
  EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(stopped["choices"][0]["text"], story.substr(0, story.find(stop)));
}

// logit_bias on the real model, greedy: +100 makes a token win every step, -100 on all but two leaves only those.
TEST_F(ServeHttp, LogitBiasForcesAndBansTokens) {
  httplib::Client c = server_->client();
  const auto pieces = [&](const json& ids) {
    return post_json(c, "/detokenize", {{"tokens", ids}}, 200)["content"].get<std::string>();
  };
  json force = {{"prompt", "Once upon a time"}, {"max_tokens", 5}, {"temperature", 0}, {"logit_bias", {{"300", 100}}}};
  const json forced = post_json(c, "/v1/completions", force, 200);
  EXPECT_EQ(forced["usage"]["completion_tokens"], 5);
  // /detokenize drops a first piece's leading space (SentencePiece's decoding); the reply keeps it.
  const std::string five = pieces({300, 300, 300, 300, 300});
  const std::string text = forced["choices"][0]["text"];
  EXPECT_TRUE(text == five || text == " " + five) << "'" << text << "' vs '" << five << "'";
  const json plain = post_json(c, "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 5}, {"temperature", 0}}, 200);
  EXPECT_NE(plain["choices"][0]["text"], text) << "the bias changed nothing: the test proves nothing";

  json ban = {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}, {"logit_bias", json::object()}};
  for (int id = 0; id < 512; ++id) {
    if (id != 300 && id != 301) ban["logit_bias"][std::to_string(id)] = -100;
  }
  const json banned = post_json(c, "/v1/completions", ban, 200);
  EXPECT_EQ(banned["usage"]["completion_tokens"], 6);
  const std::string a = pieces({0, 300}), b = pieces({0, 301});  // after <unk>: with their leading space, if any
  std::string rest = banned["choices"][0]["text"];
  const std::string unk = pieces({0});
  const std::string pa = a.substr(unk.size()), pb = b.substr(unk.size());
  int n = 0;
  while (!rest.empty() && n < 6) {
    if (rest.starts_with(pa)) {
      rest.erase(0, pa.size());
    } else if (rest.starts_with(pb)) {
      rest.erase(0, pb.size());
    } else {
      break;
    }
    ++n;
  }
  EXPECT_TRUE(rest.empty()) << "the reply holds text other than tokens 300 ('" << pa << "') and 301 ('" << pb
                            << "'): " << banned["choices"][0]["text"];
}

// Fields that would change the reply and cannot be honoured are 400s naming them, on the real server.
TEST_F(ServeHttp, UnsupportedFieldsAre400WithTheirParam) {
  httplib::Client c = server_->client();
  const json msg = {{{"role", "user"}, {"content", "x"}}};
  const std::pair<json, std::string> cases[] = {
      {{{"messages", msg}, {"response_format", {{"type", "json_object"}}}}, "response_format"},
      {{{"messages", msg}, {"n", 2}}, "n"},
      {{{"messages", msg}, {"logit_bias", {{"512", 1}}}}, "logit_bias"},  // outside the 512-token vocabulary
      {{{"messages", msg}, {"logit_bias", {{"5", -101}}}}, "logit_bias"},
      {{{"messages", msg}, {"frequency_penalty", 2.5}}, "frequency_penalty"},
      {{{"messages", msg}, {"presence_penalty", -2.5}}, "presence_penalty"},
      {{{"messages", msg}, {"tool_choice", "required"}}, "tool_choice"},
      {{{"messages", msg}, {"mirostat", 2}}, "mirostat"},
  };
  for (const auto& [body, param] : cases) {
    const json e = post_json(c, "/v1/chat/completions", body, 400);
    EXPECT_EQ(e["error"]["param"], param) << body.dump() << " -> " << e.dump();
    EXPECT_EQ(e["error"]["type"], "invalid_request_error");
  }
  // Accepted: the text format, and the penalties in range (greedy, so the plain reply is the same without them
  // only if no token repeats).
  post_json(c, "/v1/chat/completions",
            {{"messages", msg}, {"max_tokens", 4}, {"response_format", {{"type", "text"}}}, {"presence_penalty", 1},
             {"frequency_penalty", 0.5}},
            200);
}

TEST_F(ServeHttp, SideEndpoints) {
  httplib::Client c = server_->client();
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  const json m = json::parse(models->body);
  EXPECT_EQ(m["object"], "list");
  EXPECT_EQ(m["data"][0]["id"], "stories260K");

  const json tokens = post_json(c, "/tokenize", {{"content", "Once upon a time"}}, 200);
  ASSERT_TRUE(tokens["tokens"].is_array());
  EXPECT_FALSE(tokens["tokens"].empty());
  const json text = post_json(c, "/detokenize", {{"tokens", tokens["tokens"]}}, 200);
  EXPECT_EQ(text["content"], "Once upon a time");
  post_json(c, "/detokenize", {{"tokens", {1, 99999999}}}, 400);

  const json tmpl = post_json(c, "/apply-template", {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}}, 200);
  EXPECT_EQ(tmpl["prompt"], "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  const json no_gen = post_json(
      c, "/apply-template",
      {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"add_generation_prompt", false}}, 200);
  EXPECT_EQ(no_gen["prompt"], "<|im_start|>user\nHi<|im_end|>\n");

  post_json(c, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2}}, 200);
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->get_header_value("Content-Type").find("text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(metrics->body.find("strata_requests_total{endpoint=\"/v1/completions\",status=\"200\"}"),
            std::string::npos);
  EXPECT_NE(metrics->body.find("strata_time_to_first_token_seconds_bucket{le=\"+Inf\"}"), std::string::npos);
  auto live = c.Get("/live");
  ASSERT_TRUE(live);
  const json l = json::parse(live->body);
  EXPECT_EQ(l["model"], "stories260K");
  EXPECT_GE(l["requests_total"].get<int>(), 1);
  EXPECT_GT(l["tokens_total"].get<int>(), 0);
  EXPECT_EQ(l["active"], 0);
}

TEST_F(ServeHttp, BadInputIsAnOpenAIError) {
  httplib::Client c = server_->client();
  const auto expect_error = [&](const std::string& path, const std::string& body, int status, const std::string& code) {
    auto res = c.Post(path, body, "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, status) << body;
    const json e = json::parse(res->body, nullptr, false);
    ASSERT_TRUE(e.is_object() && e.contains("error")) << res->body;
    EXPECT_TRUE(e["error"]["message"].is_string());
    EXPECT_TRUE(e["error"]["type"].is_string());
    EXPECT_TRUE(e["error"].contains("param"));
    EXPECT_EQ(e["error"]["code"], code) << res->body;
  };
  expect_error("/v1/chat/completions", "{not json", 400, "invalid_json");
  expect_error("/v1/chat/completions", R"({"messages": []})", 400, "empty_array");
  expect_error("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})",
               400, "invalid_type");
  expect_error("/v1/chat/completions", R"({"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]})", 404,
               "model_not_found");
  std::string long_prompt;
  for (int i = 0; i < 600; ++i) long_prompt += "the cat sat. ";
  expect_error("/v1/completions", json{{"prompt", long_prompt}}.dump(), 400, "context_length_exceeded");
  expect_error("/v1/nothing", "{}", 404, "not_found");
  // The server is still there.
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

// A raw connection that sends one request and reads only the start of the answer, then can be dropped.
class RawClient {
 public:
  RawClient(int port, const std::string& path, const std::string& body) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("connect");
    const std::string req = "POST " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sekret\r\n"
                            "Content-Type: application/json\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body;
    if (send(fd_, req.data(), req.size(), 0) != static_cast<ssize_t>(req.size())) throw std::runtime_error("send");
  }
  ~RawClient() { close(fd_); }
  // Reads until `marker` has arrived (or 30 s pass).
  bool read_until(const std::string& marker) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    char buf[4096];
    while (received_.find(marker) == std::string::npos && std::chrono::steady_clock::now() < give_up) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return false;
      received_.append(buf, static_cast<size_t>(n));
    }
    return received_.find(marker) != std::string::npos;
  }

 private:
  int fd_ = -1;
  std::string received_;
};

double metric(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l.rfind(name + " ", 0) == 0) return std::stod(l.substr(name.size() + 1));
  }
  return -1;
}

// A server with an API key, a 1 KiB body limit and no queue: 401, 413, 503 when busy, and a streaming client
// that leaves stops its generation.
TEST(ServeHttpLimits, KeyBodyLimitQueueAndDisconnect) {
  ServeProcess server({"-o", "serve.api_key=sekret", "-o", "serve.max_body=1KiB", "-o", "serve.queue=0", "-o",
                       "runtime.context=4096"});
  httplib::Client c = server.client();
  const std::string small = R"({"prompt": "Once", "max_tokens": 2})";
  auto no_key = c.Post("/v1/completions", small, "application/json");
  ASSERT_TRUE(no_key);
  EXPECT_EQ(no_key->status, 401);
  EXPECT_EQ(json::parse(no_key->body)["error"]["code"], "invalid_api_key");
  c.set_bearer_token_auth("wrong");
  auto wrong = c.Post("/v1/completions", small, "application/json");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto health = c.Get("/health");  // open without a key
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  c.set_bearer_token_auth("sekret");
  auto ok = c.Post("/v1/completions", small, "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;

  const std::string big = json{{"prompt", std::string(2000, 'a')}}.dump();
  auto too_big = c.Post("/v1/completions", big, "application/json");
  ASSERT_TRUE(too_big);
  EXPECT_EQ(too_big->status, 413);
  EXPECT_EQ(json::parse(too_big->body, nullptr, false)["error"]["code"], "body_too_large");

  // A long streamed story holds the engine; with no queue, the next request is turned away.
  {
    RawClient stream(server.port(), "/v1/completions",
                     R"({"prompt": "Once upon a time", "max_tokens": 100000, "stream": true})");
    ASSERT_TRUE(stream.read_until("data: "));
    auto busy = c.Post("/v1/completions", small, "application/json");
    ASSERT_TRUE(busy);
    EXPECT_EQ(busy->status, 503);
    EXPECT_EQ(busy->get_header_value("Retry-After"), "1");
    EXPECT_EQ(json::parse(busy->body)["error"]["code"], "queue_full");
  }  // the client leaves

  // Its generation stops within a step: far short of the ~4000 tokens the context allows.
  double active = 1;
  std::string text;
  for (int i = 0; i < 100 && active != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto m = c.Get("/metrics");
    ASSERT_TRUE(m);
    text = m->body;
    active = metric(text, "strata_requests_active");
  }
  EXPECT_EQ(active, 0);
  const double generated = metric(text, "strata_generated_tokens_total");
  EXPECT_GT(generated, 0);
  EXPECT_LT(generated, 3000);
  auto after = c.Post("/v1/completions", small, "application/json");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(server.stop(), 0);  // SIGTERM: a clean exit
}

}  // namespace

namespace {

// serve.request_timeout_s ends a long reply where it is, as a reply cut for length.
TEST(ServeHttpLimits, RequestTimeoutEndsTheReply) {
  ServeProcess server({"-o", "serve.request_timeout_s=0.05", "-o", "runtime.context=4096"});
  httplib::Client c = server.client();
  const json r = post_json(c, "/v1/completions",
                           {{"prompt", "Once upon a time"}, {"max_tokens", 100000}, {"temperature", 0}}, 200);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_GT(r["usage"]["completion_tokens"].get<int>(), 0);
  EXPECT_LT(r["usage"]["completion_tokens"].get<int>(), 3000);
}

// `strata run --chat`: two turns on stdin, two replies on stdout, and the second turn reuses the first's KV.
TEST(ServeRunChat, SecondTurnReusesTheFirst) {
  const std::string cmd = "printf 'Hello there.\\nTell me about a cat.\\n' | " + std::string(STRATA_EXE) +
                          " run --chat --model " + stories() + " -n 12 --temperature 0 2>&1 >/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string err;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) err.append(buf, n);
  ASSERT_EQ(pclose(p), 0) << err;
  // Each turn's line: "[prompt N tokens, M reused ...".
  std::vector<std::pair<int, int>> turns;
  const std::string mark = "[prompt ";
  for (size_t at = err.find(mark); at != std::string::npos; at = err.find(mark, at + 1)) {
    int tokens = 0, reused = 0;
    if (std::sscanf(err.c_str() + at, "[prompt %d tokens, %d reused", &tokens, &reused) == 2) {
      turns.emplace_back(tokens, reused);
    }
  }
  ASSERT_EQ(turns.size(), 2u) << err;
  EXPECT_EQ(turns[0].second, 0);
  EXPECT_GE(turns[1].second, turns[0].first);  // the whole first prompt, at least
  EXPECT_LT(turns[1].second, turns[1].first);
}

}  // namespace
