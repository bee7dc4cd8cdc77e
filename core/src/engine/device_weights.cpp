#include "strata/device_weights.hpp"

#include <algorithm>
#include <chrono>
#include <string>

#include "strata/error.hpp"
#include "strata/format/expert_form.hpp"
#include "strata/log.hpp"
#include "strata/model.hpp"
#include "strata/op_tensor.hpp"
#include "strata/tensor_role.hpp"

namespace strata {

void DeviceWeights::copy_run(const unsigned char* host, uint64_t size, DeviceMemory& mem, const std::string& what) {
  Run r;
  r.host = host;
  r.size = size;
  try {
    r.device = Buffer<unsigned char>(size, &mem);
  } catch (const Error& e) {
    throw Error("the weights of " + what + " (" + std::to_string(size >> 20) + " MiB) do not fit on " +
                mem.device_name() + ": " + e.what());
  }
  // In pieces, so a 17 GB file does not need one 17 GB staging copy inside the driver.
  constexpr uint64_t kPiece = uint64_t{256} << 20;
  for (uint64_t off = 0; off < size; off += kPiece) mem.upload(r.device.data() + off, host + off, std::min(kPiece, size - off));
  bytes_ += size;
  runs_.push_back(std::move(r));
}

DeviceWeights::DeviceWeights(const Model& model, DeviceMemory& mem, WeightsOnDevice which, LayerRange layers)
    : which_(which) {
  const auto start = std::chrono::steady_clock::now();
  const gguf::Model& file = model.file();
  // Which tensors this device holds: a routed expert only with All; a layer's tensor only in `layers`.
  const auto held = [&](const gguf::TensorView& t) {
    const TensorRole role = classify_tensor(t.name);
    if (role.part == TensorPart::RoutedExperts && which == WeightsOnDevice::Dense) return false;
    return !role.layer || layers.holds(static_cast<uint32_t>(*role.layer));
  };
  if (which == WeightsOnDevice::All && layers.whole()) {
    for (size_t i = 0; i < file.part_count(); ++i) {
      const gguf::File& part = file.part(i);
      const std::span<const uint8_t> bytes = part.bytes();
      copy_run(bytes.data() + part.data_offset(), bytes.size() - part.data_offset(), mem, part.name());
    }
  } else {
    // Runs of consecutive held tensors in file order; a tensor not held ends a run.
    std::vector<const gguf::TensorView*> order;
    for (const gguf::TensorView& t : file.tensors()) order.push_back(&t);
    std::sort(order.begin(), order.end(), [](const gguf::TensorView* a, const gguf::TensorView* b) {
      return a->data < b->data;
    });
    const unsigned char* run_begin = nullptr;
    const unsigned char* run_end = nullptr;
    uint32_t run_split = 0;
    const auto flush = [&] {
      if (run_begin != nullptr) copy_run(run_begin, static_cast<uint64_t>(run_end - run_begin), mem, "the tensors");
      run_begin = run_end = nullptr;
    };
    for (const gguf::TensorView* t : order) {
      if (!held(*t)) {
        flush();
        continue;
      }
      // A run stays inside one part's mapping.
      if (run_begin != nullptr && (t->split != run_split || t->data < run_end)) flush();
      if (run_begin == nullptr) {
        run_begin = t->data;
        run_split = t->split;
      }
      run_end = t->data + t->n_bytes;
    }
    flush();
  }
  std::sort(runs_.begin(), runs_.end(), [](const Run& a, const Run& b) { return a.host < b.host; });
  upload_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  log::info("weights on " + mem.device_name() + ": " + std::to_string(bytes_ >> 20) + " MiB in " +
            std::to_string(upload_seconds_).substr(0, 5) + " s" +
            (which == WeightsOnDevice::Dense ? " (all but the routed experts, " + std::to_string(runs_.size()) + " runs)" : "") +
            (layers.whole() ? "" : " for layers " + std::to_string(layers.begin) + ".." +
                                       std::to_string(std::min(layers.end, model.hparams().n_layer) - 1)));
  const ModelWeights& w = model.weights();
  // Gated shared experts (qwen2moe): a table of one entry each, with the dense weights on every path.
  shared_tables_.resize(w.layers.size());
  shared_entries_.resize(w.layers.size());
  for (size_t il = 0; il < w.layers.size(); ++il) {
    const SharedExperts& sh = w.layers[il].shared;
    if (sh.gate == nullptr || sh.gate_inp == nullptr || !layers.holds(static_cast<uint32_t>(il))) continue;
    const strata_expert_weights host{place(sh.gate->data), place(sh.up->data), place(sh.down->data),
                                     static_cast<uint32_t>(sh.gate->type), static_cast<uint32_t>(sh.up->type),
                                     static_cast<uint32_t>(sh.down->type), 0};
    shared_entries_[il] = Buffer<strata_expert_weights>(1, &mem);
    mem.upload(shared_entries_[il].data(), &host, sizeof(host));
    shared_tables_[il] = strata_expert_table{static_cast<uint32_t>(model.hparams().n_embd),
                                             static_cast<uint32_t>(sh.gate->ne[1]),
                                             1,
                                             host.gate_type,
                                             host.up_type,
                                             host.down_type,
                                             shared_entries_[il].data(),
                                             nullptr};
  }
  // Expert biases are dense tensors (copied above): the forms point at their device copies.
  forms_.resize(w.layers.size());
  for (size_t il = 0; il < w.layers.size(); ++il) {
    const strata_expert_form* host = w.layers[il].experts.form();
    if (host == nullptr || !layers.holds(static_cast<uint32_t>(il))) continue;
    const auto on_device = [this](const float* p) { return p != nullptr ? static_cast<const float*>(place(p)) : nullptr; };
    forms_[il] = *host;
    forms_[il].gate_bias = on_device(host->gate_bias);
    forms_[il].up_bias = on_device(host->up_bias);
    forms_[il].down_bias = on_device(host->down_bias);
  }
  if (which == WeightsOnDevice::Dense) return;

  tables_.resize(w.layers.size());
  entries_.resize(w.layers.size());
  for (size_t il = 0; il < w.layers.size(); ++il) {
    const LayerWeights& lw = w.layers[il];
    if (!lw.has_experts() || lw.experts.gate == nullptr || !layers.holds(static_cast<uint32_t>(il))) continue;
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
                                      entries_[il].data(),
                                      expert_form(static_cast<uint32_t>(il))};
  }
}

const void* DeviceWeights::place(const void* host) const {
  const auto* h = static_cast<const unsigned char*>(host);
  // The last run starting at or before h.
  auto it = std::upper_bound(runs_.begin(), runs_.end(), h, [](const unsigned char* a, const Run& r) { return a < r.host; });
  if (it != runs_.begin()) {
    --it;
    if (h < it->host + it->size) return it->device.data() + (h - it->host);
  }
  throw Error("internal: a weight address outside the tensor data copied to the device");
}

strata_tensor DeviceWeights::tensor(const gguf::TensorView& t) const {
  strata_tensor s = tensor_of(t);
  s.data = const_cast<void*>(place(s.data));
  return s;
}

const strata_expert_form* DeviceWeights::expert_form(uint32_t il) const {
  if (il >= forms_.size() || format::form_is_plain(&forms_[il])) return nullptr;
  return &forms_[il];
}

const strata_expert_table* DeviceWeights::shared_table(uint32_t il) const {
  if (il >= shared_tables_.size() || shared_tables_[il].n_expert == 0) return nullptr;
  return &shared_tables_[il];
}

const strata_expert_table* DeviceWeights::expert_table(uint32_t il) const {
  if (il >= tables_.size() || tables_[il].n_expert == 0) return nullptr;
  return &tables_[il];
}

}  // namespace strata
