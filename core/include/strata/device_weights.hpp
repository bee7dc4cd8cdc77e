// A model's weights in a device's memory: the data section of each GGUF part copied once, whole, so a weight's
// device address is its part's device base plus its offset in the file. Each MoE layer also gets its expert table
// (plugin_api.h's strata_expert_table, for MOE_ROUTED) with the entries in device memory. The mapped file stays
// the host copy (the hybrid path later reads misses from it).
#pragma once

#include <cstdint>
#include <vector>

#include "strata/device_memory.hpp"
#include "strata/gguf.hpp"
#include "strata/plugin_api.h"

namespace strata {

class Model;

class DeviceWeights {
 public:
  // Copies every part's tensor data to the device. Throws strata::Error when the device cannot hold it.
  DeviceWeights(const Model& model, DeviceMemory& mem);

  // The device address of a host address inside a mapped part's data section. Throws strata::Error otherwise.
  const void* place(const void* host) const;
  // A weight as ops take it, addressed on the device.
  strata_tensor tensor(const gguf::TensorView& t) const;
  // Layer il's routed experts (null for a layer without them).
  const strata_expert_table* expert_table(uint32_t il) const;
  uint64_t bytes() const { return bytes_; }
  double upload_seconds() const { return upload_seconds_; }

 private:
  struct Part {
    const unsigned char* host = nullptr;  // the part's data section in the mapping
    uint64_t size = 0;
    Buffer<unsigned char> device;
  };
  std::vector<Part> parts_;
  std::vector<strata_expert_table> tables_;               // per layer; n_expert 0 when the layer has none
  std::vector<Buffer<strata_expert_weights>> entries_;    // per layer, in device memory
  uint64_t bytes_ = 0;
  double upload_seconds_ = 0.0;
};

}  // namespace strata
