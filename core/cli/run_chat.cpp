#include "run_chat.hpp"

#include <cstdio>
#include <iostream>

#include "strata/chat_template.hpp"
#include "strata/prefix_cache.hpp"
#include "strata/serve/chat_prompt.hpp"
#include "strata/steady_seconds.hpp"

namespace strata::cli {

void run_chat(Engine& engine, const GenerateOptions& options, const std::string& system) {
  const serve::ChatPrompt chat(engine.model());
  PrefixCache cache(engine.settings().slots);
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
  CompletionOptions c;
  c.max_tokens = options.n_predict;
  c.sampling = options.sampling;
  c.end_tokens = chat.end_tokens();
  c.stop = chat.end_texts();
  c.stop.insert(c.stop.end(), options.stop.begin(), options.stop.end());
  c.draft = options.draft;
  c.draft_n_max = options.draft_n_max;

  std::string line;
  while (true) {
    std::fputs("> ", stderr);
    std::fflush(stderr);
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", line}});
    const std::vector<TokenId> prompt = chat.encode(chat.render(messages, nullptr, true));
    if (prompt.size() >= engine.settings().context) {
      std::fprintf(stderr, "strata run: the conversation has %zu tokens, runtime.context is %u; start again with a "
                   "larger context\n", prompt.size(), engine.settings().context);
      break;
    }
    const PrefixCache::Choice choice = cache.choose(prompt);
    const CompletionResult r = complete(engine, choice.slot, prompt, choice.reuse, c, [](const GeneratedToken& t) {
      std::fwrite(t.text.data(), 1, t.text.size(), stdout);
      std::fflush(stdout);
      return true;
    });
    std::fputc('\n', stdout);
    std::fflush(stdout);
    std::vector<TokenId> held = prompt;
    held.insert(held.end(), r.generated_ids.begin(), r.generated_ids.end());
    held.resize(std::min<size_t>(held.size(), engine.position(choice.slot)));
    cache.record(choice.slot, std::move(held));
    messages.push_back({{"role", "assistant"}, {"content", r.text}});
    std::fprintf(stderr, "[prompt %zu tokens, %zu reused, %.1f tokens/s; %zu generated (%s), %.1f tokens/s]\n",
                 prompt.size(), r.reused_tokens, per_second(prompt.size() - r.reused_tokens, r.prompt_seconds),
                 r.generated_ids.size(), std::string(finish_reason(r.stop)).c_str(),
                 per_second(r.decode_tokens, r.decode_seconds));
  }
  std::fputc('\n', stderr);
}

}  // namespace strata::cli
