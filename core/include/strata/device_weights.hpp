// A model's weights in a device's memory. All of them: the data section of each GGUF part copied once, whole, so a
// weight's device address is its part's device base plus its offset in the file, and each MoE layer gets its
// expert table (plugin_api.h's strata_expert_table, for MOE_ROUTED) with the entries in device memory. Or, for the
// hybrid path, every tensor but the routed experts (WeightsOnDevice::Dense): runs of consecutive dense tensors are
// copied as one buffer each, and the experts come from the expert cache's slots (core/src/engine/hybrid_moe.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "strata/device_memory.hpp"
#include "strata/gguf.hpp"
#include "strata/model.hpp"
#include "strata/plugin_api.h"

namespace strata {

class Model;

enum class WeightsOnDevice { All, Dense };

class DeviceWeights {
 public:
  // Copies the weights to the device. Throws strata::Error when the device cannot hold them.
  // With `layers` short of the whole model (runtime.layer_split), only those layers' tensors, and the tensors of no
  // layer (embeddings, output norm and head: both cards have them); runs of consecutive tensors, as for Dense.
  DeviceWeights(const Model& model, DeviceMemory& mem, WeightsOnDevice which = WeightsOnDevice::All,
                LayerRange layers = {});

  // The device address of a host address inside a copied tensor. Throws strata::Error otherwise.
  const void* place(const void* host) const;
  // A weight as ops take it, addressed on the device.
  strata_tensor tensor(const gguf::TensorView& t) const;
  // Layer il's routed experts (null for a layer without them, and for every layer with WeightsOnDevice::Dense).
  const strata_expert_table* expert_table(uint32_t il) const;
  // Layer il's gated shared expert (qwen2moe) as a table of one expert, for a MOE_ROUTED weighted by the gate's
  // sigmoid; with both All and Dense (a shared expert is a dense weight). Null for a layer without one.
  const strata_expert_table* shared_table(uint32_t il) const;
  // Layer il's expert biases and activation (gpt-oss) with the biases' device addresses, for any expert table of the
  // layer on this device (the hybrid path's too); null where the experts are plain SwiGLU without biases.
  const strata_expert_form* expert_form(uint32_t il) const;
  WeightsOnDevice which() const { return which_; }
  uint64_t bytes() const { return bytes_; }
  double upload_seconds() const { return upload_seconds_; }

 private:
  // A span of host bytes copied whole (a part's data section, or a run of dense tensors), sorted by host address.
  struct Run {
    const unsigned char* host = nullptr;
    uint64_t size = 0;
    Buffer<unsigned char> device;
  };
  void copy_run(const unsigned char* host, uint64_t size, DeviceMemory& mem, const std::string& what);
  std::vector<Run> runs_;
  std::vector<strata_expert_table> tables_;               // per layer; n_expert 0 when the layer has none
  std::vector<Buffer<strata_expert_weights>> entries_;    // per layer, in device memory
  std::vector<strata_expert_table> shared_tables_;        // per layer; n_expert 0 without a gated shared expert
  std::vector<Buffer<strata_expert_weights>> shared_entries_;
  std::vector<strata_expert_form> forms_;                  // per layer; plain (activation 0, no biases) elsewhere
  WeightsOnDevice which_ = WeightsOnDevice::All;
  uint64_t bytes_ = 0;
  double upload_seconds_ = 0.0;
};

}  // namespace strata
