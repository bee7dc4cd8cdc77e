#include "model_facts.hpp"

namespace strata::inspect {
namespace {

// A u32 count under `key`, or nullopt (with a warning when the key is there but holds something else).
std::optional<uint32_t> read_count(const gguf::Metadata& meta, const std::string& key,
                                   std::vector<std::string>* warnings) {
  const gguf::KeyValue* kv = meta.find(key);
  if (kv == nullptr) return std::nullopt;
  const auto v = kv->value.as_u64();
  if (!v || *v > UINT32_MAX) {
    warnings->push_back(key + " should be a count, found " + kv->value.describe());
    return std::nullopt;
  }
  return static_cast<uint32_t>(*v);
}

}  // namespace

ModelFacts read_model_facts(const gguf::Model& model, const std::string& architecture, bool has_routed) {
  ModelFacts facts;
  const std::string count_key = architecture + ".expert_count";
  const std::string used_key = architecture + ".expert_used_count";
  const auto n_expert = read_count(model.metadata(), count_key, &facts.warnings);
  const auto n_used = read_count(model.metadata(), used_key, &facts.warnings);
  if (!has_routed) {
    if (n_expert.value_or(0) > 0) {
      facts.warnings.push_back(count_key + " is " + std::to_string(*n_expert) +
                               " but the file has no routed-expert tensors (blk.N.ffn_*_exps)");
    }
    facts.experts = ExpertCounts{};
    return facts;
  }
  if (n_expert.value_or(0) == 0 || n_used.value_or(0) == 0) {
    facts.warnings.push_back("the file has routed-expert tensors but " +
                             (n_expert.value_or(0) == 0 ? count_key : used_key) +
                             " is missing or 0: bytes per token not computed");
  } else if (*n_used > *n_expert) {
    facts.warnings.push_back(used_key + " (" + std::to_string(*n_used) + ") exceeds " + count_key + " (" +
                             std::to_string(*n_expert) + "): bytes per token not computed");
  } else {
    facts.experts = ExpertCounts{*n_expert, *n_used};
  }
  return facts;
}

}  // namespace strata::inspect
