#include "strata/serve/chat_prompt.hpp"

#include <algorithm>

#include "strata/gguf.hpp"

namespace strata::serve {
namespace {

constexpr std::string_view kTemplateKey = "tokenizer.chat_template";

std::string template_of(const Model& model, bool* fallback) {
  const gguf::Metadata& md = model.file().metadata();
  *fallback = !md.contains(kTemplateKey);
  return std::string(*fallback ? chat::chatml_fallback_template() : md.get_string(kTemplateKey));
}

std::string token_text(const Tokenizer& tok, TokenId id) {
  return id == kNoToken ? std::string() : std::string(tok.token_text(id));
}

}  // namespace

ChatPrompt::ChatPrompt(const Model& model)
    : tokenizer_(&model.tokenizer()), template_(template_of(model, &fallback_)) {
  const Tokenizer& tok = *tokenizer_;
  bos_text_ = token_text(tok, tok.bos());
  eos_text_ = token_text(tok, tok.eos());
  if (tok.eos() != kNoToken) end_tokens_.push_back(tok.eos());
  // The turn ends of the chat formats in use; those that are not tokens here are matched as text.
  for (const char* end : {"<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|end|>", "<|endoftext|>", "<end_of_turn>",
                          "<|return|>", "<|call|>", "<|end_of_text|>"}) {
    const TokenId id = tok.find(end);
    if (id != kNoToken) {
      if (std::find(end_tokens_.begin(), end_tokens_.end(), id) == end_tokens_.end()) end_tokens_.push_back(id);
    } else if (template_.source().find(end) != std::string::npos) {
      end_texts_.emplace_back(end);
    }
  }
}

std::string ChatPrompt::render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                               bool add_generation_prompt) const {
  nlohmann::ordered_json context = {{"messages", messages},
                                    {"add_generation_prompt", add_generation_prompt},
                                    {"bos_token", bos_text_},
                                    {"eos_token", eos_text_}};
  if (tools.is_array() && !tools.empty()) context["tools"] = tools;
  return template_.render(context);
}

std::vector<TokenId> ChatPrompt::encode(std::string_view text) const {
  const Tokenizer& tok = *tokenizer_;
  EncodeOptions options;
  options.add_eos = false;
  options.parse_special = true;
  // Templates that start with {{ bos_token }} have written it already.
  options.add_bos = bos_text_.empty() || !text.starts_with(bos_text_);
  return tok.encode(text, options);
}

std::vector<TokenId> ChatPrompt::encode_piece(std::string_view text, bool first) const {
  if (first) return encode(text);
  EncodeOptions options;
  options.add_bos = false;
  options.add_eos = false;
  options.parse_special = true;
  return tokenizer_->encode(text, options);
}

}  // namespace strata::serve
