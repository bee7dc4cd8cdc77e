// `strata serve` with images, end to end: the real executable on the shared tiny Qwen3-VL model and its projector
// (../shared/data/vision; skipped where that folder is missing), spoken to over HTTP: a chat message with an
// image_url part (a data URL of the PNG), the prefix reuse keyed on the image's bytes (the same image reused
// whole, another image fed again, the first one's reply unchanged after), /metrics' image counts, and the 400s of
// a server without a projector and of bytes that are no image.
#include <gtest/gtest.h>
#include <httplib.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serve_process.hpp"

namespace {

using json = nlohmann::json;
using strata::test::ServeProcess;

std::string vision_dir() { return std::string(STRATA_SOURCE_DIR) + "/../shared/data/vision"; }
bool have_data() {
  return std::filesystem::exists(vision_dir() + "/qwen3vlmoe-tiny-s1.gguf") &&
         std::filesystem::exists(vision_dir() + "/mmproj-qwen3vl-tiny-s1.gguf");
}

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = static_cast<uint8_t>(bytes[i]) << 16 | static_cast<uint8_t>(bytes[i + 1]) << 8 |
                       static_cast<uint8_t>(bytes[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += kAlphabet[(v >> k) & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string data_url(const std::string& file, const std::string& type) {
  std::ifstream in(vision_dir() + "/" + file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return "data:" + type + ";base64," + base64(bytes);
}

json image_chat(const std::string& url) {
  return {{"messages",
           {{{"role", "user"},
             {"content",
              {{{"type", "text"}, {"text", "What is in"}},
               {{"type", "image_url"}, {"image_url", {{"url", url}}}},
               {{"type", "text"}, {"text", " this picture?"}}}}}}},
          {"max_tokens", 8},
          {"temperature", 0}};
}

json post(httplib::Client& c, const json& body, int want_status) {
  auto res = c.Post("/v1/chat/completions", body.dump(), "application/json");
  if (!res) {
    ADD_FAILURE() << "no answer";
    return {};
  }
  EXPECT_EQ(res->status, want_status) << res->body;
  return json::parse(res->body, nullptr, false);
}

double metric(httplib::Client& c, const std::string& name) {
  auto res = c.Get("/metrics");
  if (!res) return -1;
  const size_t at = res->body.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stod(res->body.substr(at + name.size() + 2));
}

TEST(ServeImages, ImageUrlPartsWithPrefixReuseKeyedOnTheBytes) {
  if (!have_data()) GTEST_SKIP() << vision_dir() << ": not here (the shared vision data is in CI's workspace); skipped";
  ServeProcess server({"--model", vision_dir() + "/qwen3vlmoe-tiny-s1.gguf", "--mmproj",
                       vision_dir() + "/mmproj-qwen3vl-tiny-s1.gguf", "-o", "runtime.context=256", "-o",
                       "runtime.slots=1"});
  httplib::Client c = server.client();
  const std::string png = data_url("image-64x48.png", "image/png");
  const json first = post(c, image_chat(png), 200);
  const int prompt_tokens = first["usage"]["prompt_tokens"];
  EXPECT_GT(prompt_tokens, 12 + 2);  // the image's 12 tokens, its two delimiters and the text
  EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  const std::string text = first["choices"][0]["message"]["content"];

  // The same image again: the slot holds it, so all but the last prompt token is reused, and the reply is the same.
  const json again = post(c, image_chat(png), 200);
  EXPECT_EQ(again["usage"]["prompt_tokens_details"]["cached_tokens"], prompt_tokens - 1);
  EXPECT_EQ(again["choices"][0]["message"]["content"], text);

  // Another image (the resized picture as PPM: other bytes) at the same place: the prefix stops before it.
  const json other = post(c, image_chat(data_url("image-64x48-resized-128x96.ppm", "image/x-portable-pixmap")), 200);
  const int other_cached = other["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_LT(other_cached, prompt_tokens - 12);

  // The first image once more, after the other: fed again, with the first reply.
  const json back = post(c, image_chat(png), 200);
  EXPECT_EQ(back["usage"]["prompt_tokens_details"]["cached_tokens"], other_cached);
  EXPECT_EQ(back["choices"][0]["message"]["content"], text);

  EXPECT_EQ(metric(c, "strata_images_total"), 4);
  EXPECT_GE(metric(c, "strata_image_tokens_total"), 4 * 12);
  EXPECT_GT(metric(c, "strata_image_encode_seconds_total"), 0);

  // Bytes that are no image: a 400 naming the part.
  const json bad = post(c, image_chat("data:image/png;base64,aGVsbG8="), 400);
  EXPECT_EQ(bad["error"]["code"], "invalid_image");
  EXPECT_EQ(bad["error"]["param"], "messages[0].content[1].image_url.url");
  // Two images where the template renders one marker each: both placed.
  json two = image_chat(png);
  two["messages"][0]["content"].push_back({{"type", "image_url"}, {"image_url", {{"url", png}}}});
  const json both = post(c, two, 200);
  // (+14: the image and its delimiters; the text before the second marker may encode to other pieces at its end)
  EXPECT_GE(both["usage"]["prompt_tokens"].get<int>(), prompt_tokens + 14);
  EXPECT_EQ(metric(c, "strata_images_total"), 6);
  EXPECT_EQ(server.stop(), 0);
}

// The elastic desk's lanes (two real `strata engine` processes) take images too: the lane line carries each image
// as a -1 mark and its data URL, and every reply is the one-engine server's.
TEST(ServeImages, DeskLanesAnswerImagesAsOneEngine) {
  if (!have_data()) GTEST_SKIP() << vision_dir() << ": not here; skipped";
  unsetenv("STRATA_DESK_ENGINE");
  const std::vector<std::string> launch = {"--model", vision_dir() + "/qwen3vlmoe-tiny-s1.gguf", "--mmproj",
                                           vision_dir() + "/mmproj-qwen3vl-tiny-s1.gguf", "-o", "runtime.context=256"};
  std::vector<std::string> desk_args = launch;
  desk_args.insert(desk_args.end(), {"-o", "serve.elastic.lanes=2", "-o", "serve.elastic.hold_s=0.5"});
  ServeProcess desk(desk_args);
  ServeProcess one(launch);
  const auto ask = [](const ServeProcess& s, const json& body) {
    httplib::Client c = s.client();
    auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
    if (!r || r->status != 200) return json{{"failed", r ? r->body : "no answer"}};
    json reply = json::parse(r->body);
    return json{{"content", reply["choices"][0]["message"]["content"]}, {"prompt_tokens", reply["usage"]["prompt_tokens"]}};
  };
  const std::string png = data_url("image-64x48.png", "image/png");
  const json a = ask(one, image_chat(png));
  EXPECT_FALSE(a.contains("failed")) << a.dump();
  EXPECT_EQ(ask(desk, image_chat(png)), a);
  EXPECT_EQ(ask(desk, image_chat(png)), a);  // again: the lane holds it (reused by its bytes)
  const json other = image_chat(data_url("image-64x48-resized-128x96.ppm", "image/x-portable-pixmap"));
  EXPECT_EQ(ask(desk, other), ask(one, other));
  EXPECT_EQ(desk.stop(), 0) << desk.stderr_text();
  EXPECT_EQ(one.stop(), 0);
}

TEST(ServeImages, AServerWithoutAProjectorRefusesImages) {
  ServeProcess server({"-o", "runtime.context=256"});
  httplib::Client c = server.client();
  const json r = post(c, image_chat("data:image/png;base64,aGVsbG8="), 400);
  EXPECT_EQ(r["error"]["code"], "images_unsupported");
  EXPECT_NE(r["error"]["message"].get<std::string>().find("--mmproj"), std::string::npos);
  EXPECT_EQ(server.stop(), 0);
}

}  // namespace
