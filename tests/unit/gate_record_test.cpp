// `strata gate`'s files: the saved run (written, read back, and refused strictly when damaged) and the prompt
// file of --prompts.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "strata/error.hpp"
#include "strata/gate.hpp"
#include "test_temp_dir.hpp"

namespace gate = strata::gate;
using Json = nlohmann::ordered_json;

namespace {

gate::Record sample_record() {
  gate::Record r;
  r.strata_version = "0.1.0";
  r.n_predict = 4;
  r.model = {"stories260K.gguf", 1185376, "llama", 512, "0123456789abcdef", "fedcba9876543210"};
  r.backend = "cpu_avx2";
  r.backend_detail = "cpu_avx2: 2 threads";
  r.launch_file = "configs/gate-default.yaml";
  r.launch_json = R"({"model":"/m/stories260K.gguf","runtime":{"context":128,"batch":512}})";
  r.cases.push_back({"chat", "User: hi\nAssistant:", {1, 30, 40}, 0, {5, 6, 7, 8}, "n_predict"});
  r.cases.push_back({"long", "a b c d e f", {1, 9, 9}, 11, {4, 2}, "eos"});
  return r;
}

// The sample's JSON with one edit applied.
std::string edited(const std::function<void(Json&)>& edit) {
  Json j = Json::parse(gate::to_json(sample_record()));
  edit(j);
  return j.dump();
}

// The message of the strata::Error that parsing `text` throws ("" when it does not throw).
std::string parse_error(const std::string& text) {
  try {
    gate::parse_record(text, "ref.json");
  } catch (const strata::Error& e) {
    return e.what();
  }
  return "";
}

std::string prompts_error(const std::string& text) {
  try {
    gate::parse_prompts(text, "p.json");
  } catch (const strata::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(GateRecord, RoundTripsEveryField) {
  const gate::Record r = sample_record();
  const gate::Record back = gate::parse_record(gate::to_json(r), "ref.json");
  EXPECT_EQ(back.strata_version, r.strata_version);
  EXPECT_EQ(back.n_predict, r.n_predict);
  EXPECT_EQ(back.model, r.model);
  EXPECT_EQ(back.backend, r.backend);
  EXPECT_EQ(back.backend_detail, r.backend_detail);
  EXPECT_EQ(back.launch_file, r.launch_file);
  EXPECT_EQ(Json::parse(back.launch_json), Json::parse(r.launch_json));
  ASSERT_EQ(back.cases.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.cases[i].name, r.cases[i].name);
    EXPECT_EQ(back.cases[i].text, r.cases[i].text);
    EXPECT_EQ(back.cases[i].prompt_ids, r.cases[i].prompt_ids);
    EXPECT_EQ(back.cases[i].cut_from, r.cases[i].cut_from);
    EXPECT_EQ(back.cases[i].ids, r.cases[i].ids);
    EXPECT_EQ(back.cases[i].stop, r.cases[i].stop);
  }
}

TEST(GateRecord, SavedLayoutHasTheDocumentedKeysInOrder) {
  const Json j = Json::parse(gate::to_json(sample_record()));
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"format", "format_version", "strata_version", "n_predict", "model",
                                            "backend", "backend_detail", "launch_file", "launch", "prompts"}));
  EXPECT_EQ(j["format"], "strata gate");
  EXPECT_EQ(j["format_version"], gate::kFormatVersion);
  EXPECT_EQ(j["prompts"][0]["ids"], Json({5, 6, 7, 8}));
  EXPECT_FALSE(j["prompts"][0].contains("cut_from")) << "only cut prompts say what they were cut from";
  EXPECT_EQ(j["prompts"][1]["cut_from"], 11);
  EXPECT_EQ(j["launch"]["runtime"]["context"], 128);
}

TEST(GateRecord, WritesAndReadsAFile) {
  const std::string path = strata::testing_support::test_temp_path("gate", "ref.json");
  gate::write_record(sample_record(), path);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  const gate::Record back = gate::read_record(path);
  EXPECT_EQ(back.cases.at(1).ids, (std::vector<strata::TokenId>{4, 2}));
}

TEST(GateRecord, UnreadableFilesNameTheFile) {
  const std::string dir = strata::testing_support::test_temp_path("gate", "");
  EXPECT_THROW(gate::read_record(dir + "/missing.json"), strata::Error);
  try {
    gate::read_record(dir + "/missing.json");
  } catch (const strata::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read the saved gate file '" + dir + "/missing.json'"),
              std::string::npos)
        << e.what();
  }
  try {
    gate::read_record(dir);
    ADD_FAILURE() << "a folder was read as a file";
  } catch (const strata::Error& e) {
    EXPECT_NE(std::string(e.what()).find("it is a folder"), std::string::npos) << e.what();
  }
  EXPECT_THROW(gate::write_record(sample_record(), dir + "/no/such/folder/ref.json"), strata::Error);
}

TEST(GateRecord, RefusesDamagedFilesWithThePath) {
  EXPECT_NE(parse_error("{\"format\": ").find("ref.json: not valid JSON (byte"), std::string::npos);
  EXPECT_NE(parse_error("[1, 2]").find("the top level is not an object"), std::string::npos);
  EXPECT_NE(parse_error(edited([](Json& j) { j.erase("n_predict"); })).find("missing key 'n_predict'"),
            std::string::npos);
  EXPECT_NE(parse_error(edited([](Json& j) { j["format"] = "other"; })).find("'format' is not \"strata gate\""),
            std::string::npos);
  EXPECT_NE(parse_error(edited([](Json& j) { j["format_version"] = 2; })).find("format_version 2; this strata reads "
                                                                               "version 1"),
            std::string::npos);
  EXPECT_NE(parse_error(edited([](Json& j) { j["extra"] = 1; })).find("unknown key 'extra'"), std::string::npos);
  EXPECT_NE(parse_error(edited([](Json& j) { j["model"]["n_vocab"] = "512"; })).find("model.n_vocab is not a "
                                                                                      "non-negative integer"),
            std::string::npos);
  EXPECT_NE(parse_error(edited([](Json& j) { j["prompts"][0]["ids"][2] = 512; }))
                .find("prompts[0].ids[2] is 512, not a token id of the saved 512-token vocabulary"),
            std::string::npos);
  EXPECT_NE(parse_error(edited([](Json& j) { j["prompts"][1]["prompt_ids"][0] = -1; }))
                .find("prompts[1].prompt_ids[0] is -1"),
            std::string::npos);
  EXPECT_NE(parse_error(edited([](Json& j) { j["prompts"][0]["ids"][1] = 6.5; })).find("prompts[0].ids[1] is 6.5"),
            std::string::npos);
  EXPECT_NE(parse_error(edited([](Json& j) { j["prompts"][0]["ids"].erase(3); }))
                .find("prompts[0].ids has 3 ids; stop \"n_predict\" means n_predict (4)"),
            std::string::npos);
  EXPECT_NE(parse_error(edited([](Json& j) { j["prompts"][1]["stop"] = "context"; }))
                .find("prompts[1].stop is \"context\""),
            std::string::npos);
  EXPECT_NE(parse_error(edited([](Json& j) { j["prompts"][1]["name"] = "chat"; })).find("the name 'chat' is used twice"),
            std::string::npos);
  EXPECT_NE(parse_error(edited([](Json& j) { j["prompts"][1]["cut_from"] = 3; })).find("prompts[1].cut_from (3) is "
                                                                                       "not more than the 3"),
            std::string::npos);
  EXPECT_NE(parse_error(edited([](Json& j) { j["prompts"] = Json::array(); })).find("'prompts' is empty"),
            std::string::npos);
  EXPECT_NE(parse_error(edited([](Json& j) { j["launch"] = "x"; })).find("'launch' is not an object"),
            std::string::npos);
  // Every refusal says how to get a good file.
  EXPECT_NE(parse_error(edited([](Json& j) { j["prompts"][0].erase("text"); })).find("save a new one with --save"),
            std::string::npos);
}

TEST(GatePrompts, BuiltInSetHasChatCodeMathAndLong) {
  const std::vector<gate::Prompt> p = gate::builtin_prompts();
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].name, "chat");
  EXPECT_EQ(p[1].name, "code");
  EXPECT_EQ(p[2].name, "math");
  EXPECT_EQ(p[3].name, "long");
  for (const gate::Prompt& prompt : p) EXPECT_FALSE(prompt.text.empty()) << prompt.name;
  EXPECT_GT(p[3].text.size(), 30000u) << "the long prompt outgrows a 4096-token context under any vocabulary";
}

// A case with images keeps their sources and digests; the reader wants both lists, equally long, digests in hex.
TEST(GateRecord, ImagesRoundTripAndAreCheckedStrictly) {
  gate::Record r = sample_record();
  r.cases[0].images = {"builtin:gate-picture"};
  r.cases[0].image_sha256 = {std::string(64, 'a')};
  const gate::Record back = gate::parse_record(gate::to_json(r), "ref.json");
  EXPECT_EQ(back.cases[0].images, r.cases[0].images);
  EXPECT_EQ(back.cases[0].image_sha256, r.cases[0].image_sha256);
  EXPECT_TRUE(back.cases[1].images.empty());
  Json j = Json::parse(gate::to_json(r));
  Json no_hash = j;
  no_hash["prompts"][0].erase("image_sha256");
  EXPECT_NE(parse_error(no_hash.dump()).find("missing key prompts[0].image_sha256"), std::string::npos) << parse_error(no_hash.dump());
  Json bad_hash = j;
  bad_hash["prompts"][0]["image_sha256"][0] = "xyz";
  EXPECT_NE(parse_error(bad_hash.dump()).find("not 64 lowercase hex digits"), std::string::npos);
  Json two = j;
  two["prompts"][0]["images"].push_back("b.png");
  EXPECT_NE(parse_error(two.dump()).find("the same non-zero number of images"), std::string::npos);
}

TEST(GatePrompts, TheImagePromptAndItsPicture) {
  const std::vector<gate::Prompt> p = gate::builtin_prompts(true);
  ASSERT_EQ(p.size(), 5u);
  EXPECT_EQ(p[4].name, "image");
  EXPECT_EQ(p[4].images, std::vector<std::string>{std::string(gate::kBuiltinImage)});
  EXPECT_NE(p[4].text.find("<__media__>"), std::string::npos);
  const std::vector<uint8_t> bytes = gate::builtin_image_bytes();
  EXPECT_EQ(bytes, gate::builtin_image_bytes());  // drawn the same every time
  EXPECT_EQ(bytes.size(), std::string("P6\n320 240\n255\n").size() + 3u * 320 * 240);
}

TEST(GatePrompts, AFileMayGiveImagesRelativeToItsFolder) {
  const std::vector<gate::Prompt> p = gate::parse_prompts(
      R"([{"name": "a", "text": "x <__media__>", "images": ["pics/cat.png"]},
          {"name": "b", "text": "y", "images": ["data:image/png;base64,aGk=", "/abs/dog.jpg"]}])",
      "p.json", "/prompts");
  EXPECT_EQ(p[0].images, std::vector<std::string>{"/prompts/pics/cat.png"});
  EXPECT_EQ(p[1].images, (std::vector<std::string>{"data:image/png;base64,aGk=", "/abs/dog.jpg"}));
  EXPECT_NE(prompts_error(R"([{"name": "a", "text": "x", "images": []}])").find("not a non-empty array"), std::string::npos);
  EXPECT_NE(prompts_error(R"([{"name": "a", "text": "x", "images": [1]}])").find("not an image file or data URL"),
            std::string::npos);
}

TEST(GatePrompts, ReadsAFileOfNamesAndTexts) {
  const std::vector<gate::Prompt> p =
      gate::parse_prompts(R"([{"name": "a", "text": "Once upon a time"}, {"text": "x\ny", "name": "b"}])", "p.json");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].name, "a");
  EXPECT_EQ(p[0].text, "Once upon a time");
  EXPECT_EQ(p[1].name, "b");
  EXPECT_EQ(p[1].text, "x\ny");
}

TEST(GatePrompts, RefusesBadFilesNamingTheEntry) {
  EXPECT_NE(prompts_error("one prompt per line").find("p.json: not valid JSON"), std::string::npos);
  EXPECT_NE(prompts_error(R"({"name": "a", "text": "b"})").find("the top level is not an array"), std::string::npos);
  EXPECT_NE(prompts_error("[]").find("the array is empty"), std::string::npos);
  EXPECT_NE(prompts_error(R"([{"name": "a", "txt": "b"}])").find("entry 0: unknown key 'txt'"), std::string::npos);
  EXPECT_NE(prompts_error(R"([{"name": "a"}])").find("entry 0 has no \"text\""), std::string::npos);
  EXPECT_NE(prompts_error(R"([{"name": "a", "text": 3}])").find("\"text\" is not a string"), std::string::npos);
  EXPECT_NE(prompts_error(R"([{"name": "", "text": "b"}])").find("\"name\" is empty"), std::string::npos);
  EXPECT_NE(prompts_error(R"([{"name": "a", "text": "b"}, {"name": "a", "text": "c"}])")
                .find("entry 1: the name 'a' is used twice"),
            std::string::npos);
  EXPECT_NE(prompts_error(R"(["just text"])").find("entry 0 is not an object"), std::string::npos);
}
