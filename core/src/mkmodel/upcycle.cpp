// upcycle: a dense llama GGUF turned into a Mixtral-style llama MoE whose experts are copies of the dense FFN.
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>

#include "block_draw.hpp"
#include "strata/arch.hpp"
#include "strata/error.hpp"
#include "strata/tensor_role.hpp"
#include "tensor_stream.hpp"

namespace strata::mkmodel {
namespace {

struct Source {
  const gguf::TensorView* dense = nullptr;  // copied (n_copies times, stacked)
  uint32_t n_copies = 1;
  bool router = false;
  float rms = 0.0f;
};

// "blk.3.ffn_up.weight" -> "ffn_up"; empty for other names.
std::string dense_ffn_stem(std::string_view name) {
  const TensorRole role = classify_tensor(name);
  if (role.part != TensorPart::DenseFfn || !role.layer) return {};
  const std::string prefix = "blk." + std::to_string(*role.layer) + ".";
  std::string_view rest = name.substr(prefix.size());
  return std::string(rest.substr(0, rest.find('.')));
}

}  // namespace

WriteStats upcycle(const UpcycleSpec& spec, const std::string& path, const WriteOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const gguf::Model model = gguf::Model::open(spec.dense_path);
  const HParams hp = read_hparams(model.metadata());
  if (hp.arch != Arch::Llama || hp.has_experts()) {
    throw Error(spec.dense_path + ": --upcycle takes a dense llama model; this is " +
                std::string(arch_name(hp.arch)) + (hp.has_experts() ? " with experts" : ""));
  }
  require_valid(hp, model);
  if (spec.n_expert == 0 || spec.n_expert > 512) throw Error("mkmodel: --experts must be between 1 and 512");
  if (spec.n_expert_used == 0 || spec.n_expert_used > spec.n_expert) {
    throw Error("mkmodel: --top-k " + std::to_string(spec.n_expert_used) + " must be between 1 and --experts " +
                std::to_string(spec.n_expert));
  }

  gguf::Writer w;
  for (const gguf::KeyValue& kv : model.metadata().entries()) w.set_value(kv.key, kv.value);
  w.set_u32("llama.expert_count", spec.n_expert);
  w.set_u32("llama.expert_used_count", spec.n_expert_used);

  std::vector<Source> sources;
  std::vector<int> router_done(hp.n_layer, 0);
  for (const gguf::TensorView& t : model.tensors()) {
    const std::string stem = dense_ffn_stem(t.name);
    if (stem.empty()) {
      w.add_tensor(t.name, t.type, t.shape());
      sources.push_back({&t, 1, false, 0.0f});
      continue;
    }
    if (t.name.substr(t.name.size() - 7) != ".weight") {
      throw Error(spec.dense_path + ": " + std::string(t.name) +
                  ": llama's experts have no biases, so a dense FFN with biases cannot be upcycled");
    }
    const uint32_t il = *classify_tensor(t.name).layer;
    if (!router_done[il]) {
      router_done[il] = 1;
      const uint64_t ne[2] = {hp.n_embd, spec.n_expert};
      w.add_tensor("blk." + std::to_string(il) + ".ffn_gate_inp.weight", format::GgmlType::F32, ne);
      sources.push_back({nullptr, 1, true, static_cast<float>(1.0 / std::sqrt(static_cast<double>(hp.n_embd)))});
    }
    const uint64_t ne[3] = {t.ne[0], t.ne[1], spec.n_expert};
    w.add_tensor("blk." + std::to_string(il) + "." + stem + "_exps.weight", t.type, ne);
    sources.push_back({&t, spec.n_expert, false, 0.0f});
  }

  std::vector<StreamTensor> jobs;
  for (size_t i = 0; i < sources.size(); ++i) {
    const Source s = sources[i];
    if (s.router) {
      const uint64_t seed = spec.seed;
      jobs.push_back({i, format::GgmlType::F32, uint64_t{hp.n_embd} * spec.n_expert,
                      [=](uint64_t first, uint64_t count, uint8_t* out) {
                        draw_elements(format::GgmlType::F32, s.rms, seed, i, first, count, out);
                      }});
      continue;
    }
    const format::GgmlType type = s.dense->type;
    const uint64_t per_copy = s.dense->n_elements;
    jobs.push_back({i, type, per_copy * s.n_copies, [=](uint64_t first, uint64_t count, uint8_t* out) {
                      // Elements [first, first + count) of the stack: pieces of consecutive copies.
                      while (count > 0) {
                        const uint64_t within = first % per_copy;
                        const uint64_t n = std::min(count, per_copy - within);
                        const uint64_t offset = format::row_bytes(type, within);
                        const uint64_t bytes = format::row_bytes(type, n);
                        std::memcpy(out, s.dense->data + offset, bytes);
                        out += bytes;
                        first += n;
                        count -= n;
                      }
                    }});
  }
  w.open(path);
  stream_tensors(w, jobs, options);
  w.close();

  WriteStats stats;
  stats.file_bytes = w.file_size();
  stats.tensors = sources.size();
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

}  // namespace strata::mkmodel
