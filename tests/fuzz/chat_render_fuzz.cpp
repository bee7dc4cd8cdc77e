// libFuzzer target for what `strata serve` does with a chat request's messages: the body through the request
// parser and, when it is accepted, its messages and tools rendered by one of the real chat templates (the first
// byte picks it; STRATA_FUZZ_TEMPLATES names them). A template may refuse the messages (a TemplateError: the server
// answers 400); any other exception would be the server's 500 for a client's input, and is a finding, as is a
// crash or a hang.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <variant>
#include <vector>

#include "fuzz_fixtures.hpp"
#include "strata/chat_template.hpp"
#include "strata/serve/request.hpp"

namespace {

const std::vector<std::unique_ptr<strata::chat::ChatTemplate>>& templates() {
  static const std::vector<std::unique_ptr<strata::chat::ChatTemplate>> all = [] {
    std::vector<std::unique_ptr<strata::chat::ChatTemplate>> v;
    for (const std::string& path : strata::fuzz::fixture_paths(STRATA_FUZZ_TEMPLATES)) {
      v.push_back(std::make_unique<strata::chat::ChatTemplate>(strata::fuzz::fixture_bytes(path)));
    }
    return v;
  }();
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& all = templates();
  const size_t which = data[0] % all.size();
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto parsed =
      strata::serve::parse_completion_request(strata::serve::Endpoint::ChatCompletions, body, "model");
  const auto* request = std::get_if<strata::serve::CompletionRequest>(&parsed);
  if (request == nullptr) return 0;
  // The context ChatPrompt::render gives (core/serve/chat_prompt.cpp), with a fixed clock.
  nlohmann::ordered_json context = {{"messages", request->messages},
                                    {"add_generation_prompt", true},
                                    {"bos_token", "<s>"},
                                    {"eos_token", "</s>"}};
  if (request->tools.is_array() && !request->tools.empty()) context["tools"] = request->tools;
  try {
    (void)all[which]->render(context, std::chrono::system_clock::time_point{});
  } catch (const strata::chat::TemplateError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chat_render_fuzz: template %zu threw a %s, not a TemplateError: %s\n", which,
                 typeid(e).name(), e.what());
    std::abort();
  }
  return 0;
}
