#include "strata/device_weights.hpp"

#include <chrono>
#include <string>

#include "strata/error.hpp"
#include "strata/log.hpp"
#include "strata/model.hpp"
#include "strata/op_tensor.hpp"

namespace strata {

DeviceWeights::DeviceWeights(const Model& model, DeviceMemory& mem) {
  const auto start = std::chrono::steady_clock::now();
  const gguf::Model& file = model.file();
  for (size_t i = 0; i < file.part_count(); ++i) {
    const gguf::File& part = file.part(i);
    const std::span<const uint8_t> bytes = part.bytes();
    Part p;
    p.host = bytes.data() + part.data_offset();
    p.size = bytes.size() - part.data_offset();
    try {
      p.device = Buffer<unsigned char>(p.size, &mem);
    } catch (const Error& e) {
      throw Error("the weights of " + part.name() + " (" + std::to_string(p.size >> 20) + " MiB) do not fit on " +
                  mem.device_name() + ": " + e.what());
    }
    // In pieces, so a 17 GB file does not need one 17 GB staging copy inside the driver.
    constexpr uint64_t kPiece = uint64_t{256} << 20;
    for (uint64_t off = 0; off < p.size; off += kPiece) {
      mem.upload(p.device.data() + off, p.host + off, std::min(kPiece, p.size - off));
    }
    bytes_ += p.size;
    parts_.push_back(std::move(p));
  }
  upload_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const ModelWeights& w = model.weights();
  tables_.resize(w.layers.size());
  entries_.resize(w.layers.size());
  for (size_t il = 0; il < w.layers.size(); ++il) {
    const LayerWeights& lw = w.layers[il];
    if (!lw.has_experts() || lw.experts.gate == nullptr) continue;
    const uint32_t n_expert = lw.routing.n_expert;
    std::vector<strata_expert_weights> host(n_expert);
    for (uint32_t e = 0; e < n_expert; ++e) {
      host[e] = lw.experts.expert(e);
      host[e].gate = place(host[e].gate);
      host[e].up = place(host[e].up);
      host[e].down = place(host[e].down);
    }
    entries_[il] = Buffer<strata_expert_weights>(n_expert, &mem);
    mem.upload(entries_[il].data(), host.data(), n_expert * sizeof(strata_expert_weights));
    tables_[il] = strata_expert_table{static_cast<uint32_t>(model.hparams().n_embd),
                                      lw.experts.n_ff,
                                      n_expert,
                                      host[0].gate_type,
                                      host[0].up_type,
                                      host[0].down_type,
                                      entries_[il].data()};
  }
  log::info("weights on " + mem.device_name() + ": " + std::to_string(bytes_ >> 20) + " MiB in " +
            std::to_string(upload_seconds_).substr(0, 5) + " s");
}

const void* DeviceWeights::place(const void* host) const {
  const auto* h = static_cast<const unsigned char*>(host);
  for (const Part& p : parts_) {
    if (h >= p.host && h < p.host + p.size) return p.device.data() + (h - p.host);
  }
  throw Error("internal: a weight address outside the model's mapped tensor data");
}

strata_tensor DeviceWeights::tensor(const gguf::TensorView& t) const {
  strata_tensor s = tensor_of(t);
  s.data = const_cast<void*>(place(s.data));
  return s;
}

const strata_expert_table* DeviceWeights::expert_table(uint32_t il) const {
  if (il >= tables_.size() || tables_[il].n_expert == 0) return nullptr;
  return &tables_[il];
}

}  // namespace strata
