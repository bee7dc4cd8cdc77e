#include "model_facts.hpp"

#include <algorithm>

#include "strata/arch.hpp"
#include "strata/hparams.hpp"

namespace strata::inspect {
namespace {

// The check lists every expected tensor; a block_count far beyond the tensors present (a hostile or a partial
// file) would list millions of missing ones, so it is skipped past this many layers.
constexpr uint32_t kMaxCheckedLayers = 1024;

}  // namespace

ModelFacts read_model_facts(const gguf::Model& model, bool has_routed) {
  ModelFacts facts;
  HParams hp;
  try {
    hp = read_hparams(model.metadata());
  } catch (const Error& e) {
    facts.warnings.push_back(std::string("hyperparameters: ") + e.what() + "; architecture check skipped");
    if (has_routed) {
      facts.warnings.push_back("expert counts unknown: bytes per token not computed");
    } else {
      facts.experts = ExpertCounts{};
    }
    return facts;
  }

  if (hp.n_layer > std::max<uint64_t>(kMaxCheckedLayers, model.tensors().size())) {
    facts.warnings.push_back("block_count is " + std::to_string(hp.n_layer) + " but the file has only " +
                             std::to_string(model.tensors().size()) + " tensors; architecture check skipped");
  } else {
    facts.issues.emplace();
    for (const ArchIssue& issue : check_tensors(hp, model)) facts.issues->push_back(issue.message);
  }
  if (has_routed && hp.n_expert == 0) {
    facts.warnings.push_back(
        "the file has routed-expert tensors but its metadata describes a dense model: bytes per "
        "token not computed");
  } else {
    facts.experts = ExpertCounts{hp.n_expert, hp.n_expert_used};
  }
  return facts;
}

}  // namespace strata::inspect
