// A model's chat format: its tokenizer.chat_template (ChatML when it has none) rendered over the messages, the
// text encoded with special tokens parsed and BOS added only where the template did not write it, and the tokens
// and texts that end an assistant turn. The server and `strata run --chat` share it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "strata/chat_template.hpp"
#include "strata/model.hpp"

namespace strata::serve {

class ChatPrompt {
 public:
  // Throws chat::TemplateError when the model's template does not parse.
  explicit ChatPrompt(const Model& model);

  // The prompt text. `tools`: null or the request's tools array. Throws chat::TemplateError (the template
  // rejects the conversation: raise_exception, a role it does not know).
  std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                     bool add_generation_prompt) const;
  std::vector<TokenId> encode(std::string_view text) const;
  // A piece of the rendered text between images: the first as encode() does, the others without a BOS.
  std::vector<TokenId> encode_piece(std::string_view text, bool first) const;

  // EOS and the end-of-turn tokens the vocabulary has (<|im_end|>, <|eot_id|>, <|end|>, ...).
  const std::vector<TokenId>& end_tokens() const { return end_tokens_; }
  // End-of-turn markers that are plain text in this vocabulary (ChatML's <|im_end|> on a model without it),
  // to be used as stop strings.
  const std::vector<std::string>& end_texts() const { return end_texts_; }
  const std::string& template_source() const { return template_.source(); }
  bool is_fallback() const { return fallback_; }

 private:
  const Tokenizer* tokenizer_;
  chat::ChatTemplate template_;
  bool fallback_ = false;
  std::string bos_text_, eos_text_;
  std::vector<TokenId> end_tokens_;
  std::vector<std::string> end_texts_;
};

}  // namespace strata::serve
