#include "strata/tensor_role.hpp"

#include <charconv>
#include <string>

namespace strata {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

}  // namespace

std::string_view part_name(TensorPart part) {
  switch (part) {
    case TensorPart::Embeddings: return "embeddings";
    case TensorPart::Attention: return "attention";
    case TensorPart::Norm: return "norms";
    case TensorPart::Router: return "router";
    case TensorPart::SharedExperts: return "shared experts";
    case TensorPart::RoutedExperts: return "routed experts";
    case TensorPart::DenseFfn: return "dense ffn";
    case TensorPart::Head: return "head";
    case TensorPart::Other: return "other";
  }
  return "other";
}

TensorRole classify_tensor(std::string_view name) {
  TensorRole role{TensorPart::Other, std::nullopt};
  std::string_view rest = name;
  if (starts_with(rest, "blk.")) {
    rest.remove_prefix(4);
    int layer = 0;
    const auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
    if (ec == std::errc() && ptr != rest.data() && ptr < rest.data() + rest.size() && *ptr == '.') {
      role.layer = layer;
      rest.remove_prefix(static_cast<size_t>(ptr - rest.data()) + 1);
    }
  }
  // Strip ".weight" / ".bias" and similar suffixes: the stem decides.
  const std::string_view stem = rest.substr(0, rest.find('.'));
  if (!role.layer) {
    if (stem == "token_embd" || stem == "token_embd_norm") {
      role.part = stem == "token_embd" ? TensorPart::Embeddings : TensorPart::Norm;
    } else if (stem == "output") {
      role.part = TensorPart::Head;
    } else if (contains(stem, "norm")) {
      role.part = TensorPart::Norm;
    }
    return role;
  }
  if (contains(stem, "norm")) {
    role.part = TensorPart::Norm;
  } else if (contains(stem, "shexp")) {
    role.part = TensorPart::SharedExperts;
  } else if (contains(stem, "_exps") && rest.substr(stem.size()) == ".bias") {
    // gpt-oss's expert biases: a few floats per expert that every device computing an expert reads, so they stay
    // with the dense weights (the router's part), never in the expert cache's slots.
    role.part = TensorPart::Router;
  } else if (contains(stem, "_exps") || stem == "ffn_gate_up_exps") {
    role.part = TensorPart::RoutedExperts;
  } else if (stem == "ffn_gate_inp" || stem == "exp_probs_b") {
    role.part = TensorPart::Router;
  } else if (starts_with(stem, "attn_")) {
    role.part = TensorPart::Attention;
  } else if (stem == "ffn_gate" || stem == "ffn_up" || stem == "ffn_down") {
    role.part = TensorPart::DenseFfn;
  }
  return role;
}

}  // namespace strata
