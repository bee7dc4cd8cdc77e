// `strata engine`'s lines: control lines parsed or refused with the reason, requests parsed against the launch's
// defaults or refused naming the field.
#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "strata/engine_protocol.hpp"

namespace pr = strata::protocol;

namespace {

std::string refusal(const std::string& line) {
  const auto parsed = pr::parse_control_line(line);
  if (const std::string* why = std::get_if<std::string>(&parsed)) return *why;
  return "(parsed as " + pr::control_name(std::get<pr::ControlLine>(parsed)) + ")";
}

pr::ControlLine control(const std::string& line) {
  const auto parsed = pr::parse_control_line(line);
  EXPECT_TRUE(std::holds_alternative<pr::ControlLine>(parsed)) << line << ": " << refusal(line);
  return std::holds_alternative<pr::ControlLine>(parsed) ? std::get<pr::ControlLine>(parsed) : pr::ControlLine{};
}

pr::ParsedRequest request(const std::string& line) {
  strata::CompletionOptions defaults;
  defaults.max_tokens = 17;
  defaults.sampling.temperature = 0.5f;
  return pr::parse_engine_request(line, defaults, 512);
}

}  // namespace

TEST(EngineProtocol, ControlLines) {
  EXPECT_EQ(control("PEER_DETACH").kind, pr::ControlKind::PeerDetach);
  EXPECT_EQ(control("  PEER_ATTACH\r").kind, pr::ControlKind::PeerAttach);
  const pr::ControlLine hold = control("POOL_HOLD 6");
  EXPECT_EQ(hold.kind, pr::ControlKind::PoolHold);
  EXPECT_EQ(hold.value, 6u);
  EXPECT_EQ(pr::control_name(hold), "POOL_HOLD 6");
  EXPECT_EQ(control("LINK_SERVE 1").value, 1u);
  EXPECT_EQ(control("LINK_SERVE 0").kind, pr::ControlKind::LinkServe);
  EXPECT_EQ(control("CANCEL").kind, pr::ControlKind::Cancel);
  EXPECT_EQ(pr::control_name(control("CANCEL")), "CANCEL");
  EXPECT_EQ(control("CANCEL 7").id, "7");
  EXPECT_EQ(pr::control_name(control("CANCEL  \"a b\"")), "CANCEL \"a b\"");
}

TEST(EngineProtocol, BadControlLinesSayWhy) {
  EXPECT_NE(refusal("PEER_DETACH now").find("PEER_DETACH takes no argument"), std::string::npos);
  EXPECT_NE(refusal("POOL_HOLD").find("POOL_HOLD takes one number"), std::string::npos);
  EXPECT_NE(refusal("POOL_HOLD -1").find("'-1' is not a count"), std::string::npos);
  EXPECT_NE(refusal("POOL_HOLD 99999999999").find("is not a count"), std::string::npos);
  EXPECT_NE(refusal("LINK_SERVE 2").find("is not 0 or 1"), std::string::npos);
  EXPECT_NE(refusal("CANCEL [3]").find("CANCEL takes a request id"), std::string::npos);
  EXPECT_NE(refusal("CANCEL a").find("CANCEL takes a request id"), std::string::npos);
  EXPECT_NE(refusal("peer_detach").find("unknown line 'peer_detach'"), std::string::npos);
  EXPECT_NE(refusal("").find("empty line"), std::string::npos);
  // A long or binary line is cut and shown safely.
  const std::string junk = std::string(200, 'x') + "\x01";
  const std::string why = refusal(junk);
  EXPECT_LT(why.size(), 200u) << why;
  EXPECT_NE(why.find("..."), std::string::npos);
}

TEST(EngineProtocol, RequestsTakeTheLaunchDefaults) {
  const pr::ParsedRequest r = request(R"({"id": "a", "prompt": "Once"})");
  ASSERT_TRUE(r.request) << r.error;
  EXPECT_EQ(r.request->id, "\"a\"");
  EXPECT_EQ(*r.request->prompt, "Once");
  EXPECT_EQ(r.request->options.max_tokens, 17);
  EXPECT_EQ(r.request->options.sampling.temperature, 0.5f);
  EXPECT_TRUE(r.request->stream);
  const pr::ParsedRequest s = request(
      R"({"id": 7, "prompt_ids": [1, 2, 3], "max_tokens": -1, "temperature": 0, "top_k": 5, "top_p": 0.9,
          "min_p": 0.1, "seed": 42, "stop": ["\n"], "end_tokens": [2, 9], "stream": false})");
  ASSERT_TRUE(s.request) << s.error;
  EXPECT_EQ(s.request->id, "7");
  EXPECT_EQ(s.request->prompt_ids, (std::vector<strata::TokenId>{1, 2, 3}));
  EXPECT_EQ(s.request->options.max_tokens, -1);
  EXPECT_EQ(s.request->options.sampling.top_k, 5);
  EXPECT_EQ(s.request->options.sampling.seed, 42u);
  EXPECT_EQ(s.request->options.stop, (std::vector<std::string>{"\n"}));
  EXPECT_EQ(s.request->options.end_tokens, (std::vector<strata::TokenId>{2, 9}));
  EXPECT_FALSE(s.request->stream);
}

TEST(EngineProtocol, PenaltiesAndLogitBias) {
  const pr::ParsedRequest r = request(
      R"({"id": 1, "prompt": "x", "frequency_penalty": 0.5, "presence_penalty": -1.25,
          "logit_bias": {"300": 2.5, "7": -100}})");
  ASSERT_TRUE(r.request) << r.error;
  EXPECT_EQ(r.request->options.sampling.frequency_penalty, 0.5f);
  EXPECT_EQ(r.request->options.sampling.presence_penalty, -1.25f);
  using Bias = std::vector<std::pair<strata::TokenId, float>>;
  EXPECT_EQ(r.request->options.sampling.logit_bias, (Bias{{7, -100.0f}, {300, 2.5f}}));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"id": 1, "prompt": "x", "frequency_penalty": 3})", "\"frequency_penalty\" must be a number from -2 to 2"},
      {R"({"id": 1, "prompt": "x", "presence_penalty": "a"})", "\"presence_penalty\" must be a number"},
      {R"({"id": 1, "prompt": "x", "logit_bias": [1]})", "\"logit_bias\" must be an object"},
      {R"({"id": 1, "prompt": "x", "logit_bias": {"512": 1}})", "the key \"512\", not a token id"},
      {R"({"id": 1, "prompt": "x", "logit_bias": {"a": 1}})", "the key \"a\", not a token id"},
      {R"({"id": 1, "prompt": "x", "logit_bias": {"5": 101}})", "of token 5 must be a number from -100 to 100"},
      {R"({"id": 1, "prompt": "x", "logit_bias": {"5": 1, "05": 2}})", "names token 5 twice"},
  };
  for (const auto& [line, want] : bad) {
    const pr::ParsedRequest b = request(line);
    EXPECT_FALSE(b.request) << line;
    EXPECT_NE(b.error.find(want), std::string::npos) << line << " -> " << b.error;
  }
}

TEST(EngineProtocol, BadRequestsNameTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"prompt": "x"})", "\"id\" is required"},
      {R"({"id": [1], "prompt": "x"})", "\"id\" is required"},
      {R"({"id": 1})", "exactly one of \"prompt\" and \"prompt_ids\""},
      {R"({"id": 1, "prompt": "x", "prompt_ids": [1]})", "exactly one of"},
      {R"({"id": 1, "prompt_ids": [1, 512]})", "not a token id of this vocabulary (0 to 511)"},
      {R"({"id": 1, "prompt_ids": []})", "non-empty array"},
      {R"({"id": 1, "prompt_ids": [1, -2]})", "nor -1 (where an image of \"images\" goes)"},
      {R"({"id": 1, "prompt_ids": [1, -1]})", "holds 1 image marks (-1) and \"images\" 0 images"},
      {R"({"id": 1, "prompt_ids": [1], "images": ["a.png"]})", "holds 0 image marks (-1) and \"images\" 1 images"},
      {R"({"id": 1, "prompt": "x", "images": []})", "\"images\" must be a non-empty array"},
      {R"({"id": 1, "prompt": "x", "images": [3]})", "\"images\" holds 3, not an image file or a data URL"},
      {R"({"id": 1, "prompt": "x", "max_tokens": 1.5})", "\"max_tokens\" must be an integer"},
      {R"({"id": 1, "prompt": "x", "temperature": -1})", "\"temperature\" must be a number from 0"},
      {R"({"id": 1, "prompt": "x", "top_p": 2})", "\"top_p\" must be a number from 0 to 1"},
      {R"({"id": 1, "prompt": "x", "seed": -3})", "\"seed\" must be a non-negative integer"},
      {R"({"id": 1, "prompt": "x", "stop": [""]})", "non-empty strings"},
      {R"({"id": 1, "prompt": "x", "stream": "yes"})", "\"stream\" must be true or false"},
      {R"({"id": 1, "prompt": "x", "end_tokens": 2})", "\"end_tokens\" must be an array of token ids"},
      {R"({"id": 1, "prompt": "x", "end_tokens": [600]})", "\"end_tokens\" holds 600, not a token id"},
      {R"({"id": 1, "prompt": "x", "temprature": 0})", "unknown field \"temprature\""},
      {R"({"id": 1, "prompt": )", "not valid JSON"},
      {R"([1, 2])", "one JSON object, not array"},
  };
  for (const auto& [line, want] : cases) {
    const pr::ParsedRequest r = request(line);
    EXPECT_FALSE(r.request) << line;
    EXPECT_NE(r.error.find(want), std::string::npos) << line << " -> " << r.error;
  }
  EXPECT_EQ(request(R"({"id": 9, "prompt": 3})").id, "9") << "the id is kept for the error line";
}
