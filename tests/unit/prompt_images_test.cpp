// Images in prompts: SHA-256 against FIPS 180-4's examples, data URLs (RFC 2397) and their refusals, the placing
// of image tokens at markers and at -1 marks, and the keyed prompts the prefix caches compare.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "error_text.hpp"
#include "strata/error.hpp"
#include "strata/model.hpp"
#include "strata/prefix_cache.hpp"
#include "strata/prompt_images.hpp"
#include "strata/sha256.hpp"
#include "strata/vision.hpp"

namespace {

using strata::TokenId;

std::string hex_of(std::string_view text, size_t chunk = 0) {
  strata::Sha256 s;
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  if (chunk == 0) chunk = text.size() + 1;
  for (size_t i = 0; i < text.size(); i += chunk) s.update({p + i, std::min(chunk, text.size() - i)});
  return strata::to_hex(s.finish());
}

TEST(Sha256, FipsExamples) {
  EXPECT_EQ(hex_of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(hex_of(two_blocks), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // The same bytes fed in pieces that straddle the 64-byte blocks.
  EXPECT_EQ(hex_of(two_blocks, 7), hex_of(two_blocks));
  const std::string million(1000000, 'a');
  EXPECT_EQ(hex_of(million, 1000), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

std::vector<uint8_t> bytes_of(std::string_view s) { return {s.begin(), s.end()}; }

using strata::test::error_of;

TEST(DataUrl, DecodesBase64AndPercentData) {
  using strata::vision::decode_data_url;
  EXPECT_EQ(decode_data_url("data:image/png;base64,aGVsbG8=", "x"), bytes_of("hello"));
  EXPECT_EQ(decode_data_url("DATA:image/png;BASE64,aGVs\nbG8h", "x"), bytes_of("hello!"));
  EXPECT_EQ(decode_data_url("data:;base64,-_8=", "x"), (std::vector<uint8_t>{0xfb, 0xff}));  // URL-safe alphabet
  EXPECT_EQ(decode_data_url("data:text/plain,a%20b%FF", "x"), (std::vector<uint8_t>{'a', ' ', 'b', 0xff}));
  EXPECT_TRUE(strata::vision::is_data_url("data:,x"));
  EXPECT_FALSE(strata::vision::is_data_url("image.png"));
}

TEST(DataUrl, RefusesWhatItCannotRead) {
  using strata::vision::decode_data_url;
  EXPECT_NE(error_of([] { decode_data_url("https://example.com/cat.png", "'url'"); }).find("fetches nothing"),
            std::string::npos);
  EXPECT_NE(error_of([] { decode_data_url("cat.png", "'url'"); }).find("not a data URL"), std::string::npos);
  EXPECT_NE(error_of([] { decode_data_url("data:image/png;base64", "'url'"); }).find("','"), std::string::npos);
  EXPECT_NE(error_of([] { decode_data_url("data:image/png;base64,aGV*bG8=", "'url'"); }).find("'*'"),
            std::string::npos);
  EXPECT_NE(error_of([] { decode_data_url("data:image/png;base64,aG=Vs", "'url'"); }).find("padding"),
            std::string::npos);
  EXPECT_NE(error_of([] { decode_data_url("data:image/png;base64,a", "'url'"); }).find("cut short"),
            std::string::npos);
  EXPECT_NE(error_of([] { decode_data_url("data:image/png;base64,", "'url'"); }).find("no data"), std::string::npos);
  EXPECT_NE(error_of([] { decode_data_url("data:,a%2", "'url'"); }).find("two hex digits"), std::string::npos);
  // Every message names the field it was given.
  EXPECT_EQ(error_of([] { decode_data_url("cat.png", "'messages[0].content[1].image_url.url'"); }).rfind("'messages", 0),
            0u);
}

TEST(DataUrl, ImageSourceTakesAFileOrADataUrl) {
  // A 2x1 binary PPM: red, blue.
  const std::string ppm = std::string("P6\n2 1\n255\n") + std::string("\xff\x00\x00\x00\x00\xff", 6);
  const std::string b64 = "UDYKMiAxCjI1NQr/AAAAAP8=";
  const strata::vision::ImageSource s = strata::vision::read_image_source("data:image/x-portable-pixmap;base64," + b64, "image 0");
  EXPECT_EQ(s.bytes, bytes_of(ppm));
  EXPECT_EQ(s.image.width, 2u);
  EXPECT_EQ(s.image.rgb, (std::vector<uint8_t>{255, 0, 0, 0, 0, 255}));
  EXPECT_NE(error_of([] { strata::vision::read_image_source("/nonexistent/cat.png", "image 0"); }).find("cannot open"),
            std::string::npos);
}

TEST(PromptImages, KeysDependOnTheBytesAndNeverLookLikeIds) {
  std::vector<float> rows(4 * 3 * 2, 0.5f);
  const strata::Engine::ImageTokens im{rows, 4, 3, 4};
  const std::vector<TokenId> prompt = {1, 510, 510, 510, 510, 510, 510, 510, 510, 510, 510, 510, 510, 510, 511, 7};
  const std::vector<strata::PromptImage> placed = {{2, im}};
  const strata::Sha256Digest a = strata::sha256(bytes_of("image a")), b = strata::sha256(bytes_of("image b"));
  const std::vector<TokenId> ka = strata::keyed_prompt(prompt, placed, std::vector{a});
  const std::vector<TokenId> ka2 = strata::keyed_prompt(prompt, placed, std::vector{a});
  const std::vector<TokenId> kb = strata::keyed_prompt(prompt, placed, std::vector{b});
  EXPECT_EQ(ka, ka2);
  EXPECT_EQ(strata::common_prefix(ka, kb), 2u);  // they part at the image's first token
  for (size_t i = 0; i < ka.size(); ++i) {
    if (i >= 2 && i < 14) {
      EXPECT_LE(ka[i], -2) << i;
      EXPECT_NE(ka[i], kb[i]) << i;
    } else {
      EXPECT_EQ(ka[i], prompt[i]) << i;
    }
  }
}

std::string vision_model() { return std::string(STRATA_SOURCE_DIR) + "/../shared/data/vision/qwen3vlmoe-tiny-s1.gguf"; }

TEST(PromptImages, PlacesImagesAtMarkersAndMarks) {
  if (!std::filesystem::exists(vision_model())) GTEST_SKIP() << vision_model() << ": not here; skipped";
  const auto model = strata::Model::load(vision_model());
  const strata::Tokenizer& tok = model->tokenizer();
  std::vector<float> rows(2 * 2 * model->input_width(), 0.25f);
  const std::vector<strata::Engine::ImageTokens> images = {{rows, 2, 2, 2}, {rows, 2, 2, 2}};
  const auto piece = [&](std::string_view text, bool first) {
    return tok.encode(text, {.add_bos = first, .add_eos = false, .parse_special = false});
  };
  std::vector<strata::PromptImage> placed;
  const std::vector<TokenId> ids =
      strata::encode_with_images(tok, "Look<__media__>and<__media__>", images, piece, placed);
  ASSERT_EQ(placed.size(), 2u);
  const std::vector<TokenId> look = piece("Look", true), and_ = piece("and", false);
  ASSERT_EQ(ids.size(), look.size() + 6 + and_.size() + 6);
  EXPECT_EQ(ids[look.size()], 510);
  EXPECT_EQ(placed[0].at, look.size() + 1);
  EXPECT_EQ(ids[placed[0].at + 4], 511);
  EXPECT_EQ(placed[1].at, look.size() + 6 + and_.size() + 1);
  // The same through -1 marks in ids.
  std::vector<TokenId> marked = look;
  marked.push_back(strata::kImageMark);
  marked.insert(marked.end(), and_.begin(), and_.end());
  marked.push_back(strata::kImageMark);
  std::vector<strata::PromptImage> placed2;
  EXPECT_EQ(strata::expand_image_marks(tok, marked, images, placed2), ids);
  ASSERT_EQ(placed2.size(), 2u);
  EXPECT_EQ(placed2[1].at, placed[1].at);
  // No markers: the images come first, after what the first piece's encoding of "" gives.
  std::vector<strata::PromptImage> first;
  const std::vector<TokenId> lead = strata::encode_with_images(tok, "Hi", std::span(images).first(1), piece, first);
  EXPECT_EQ(first.at(0).at, piece("", true).size() + 1);
  EXPECT_EQ(lead.at(first.at(0).at - 1), 510);
  // Counts that differ, and ids that are neither ids nor marks, are refused by name.
  std::vector<strata::PromptImage> unused;
  EXPECT_NE(error_of([&] { strata::encode_with_images(tok, "<__media__>", images, piece, unused); }).find("1 <__media__> markers and 2 images"),
            std::string::npos);
  EXPECT_NE(error_of([&] { strata::expand_image_marks(tok, std::vector<TokenId>{-1, -2}, std::span(images).first(1), unused); })
                .find("-2"),
            std::string::npos);
  EXPECT_NE(error_of([&] { strata::expand_image_marks(tok, std::vector<TokenId>{5}, std::span(images).first(1), unused); })
                .find("0 image marks"),
            std::string::npos);
}

}  // namespace
