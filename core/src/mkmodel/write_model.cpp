// write_model: plan the file, calibrate the router skew if asked, then stream every tensor to disk; write_projector:
// the same for a Qwen3-VL spec's vision projector.
#include <chrono>
#include <cstring>

#include "block_draw.hpp"
#include "model_plan.hpp"
#include "router_skew.hpp"
#include "tensor_stream.hpp"

namespace strata::mkmodel {
namespace {

// Row scale of every expert of every block's router (empty when routing is left unskewed).
std::vector<std::vector<float>> router_row_scales(const ModelSpec& spec, const Plan& plan,
                                                  const std::vector<TensorFill>& fills,
                                                  std::optional<RouterReport>& report) {
  std::vector<std::vector<float>> scales;
  if (spec.router_skew == 0.0) return scales;
  const uint32_t n_embd = plan.hparams.n_embd, n_expert = plan.hparams.n_expert;
  // Calibrated on the first router (block 0's, or the first MoE block's after the leading dense blocks of
  // glm4moe and deepseek2).
  for (size_t i = 0; i < fills.size() && scales.empty(); ++i) {
    if (fills[i].kind != TensorFill::Kind::Router) continue;
    std::vector<float> rows(static_cast<size_t>(n_embd) * n_expert);
    draw_elements(format::GgmlType::F32, fills[i].rms, spec.seed, i, 0, rows.size(),
                  reinterpret_cast<uint8_t*>(rows.data()));
    const RouterSkew skew =
        calibrate_router_skew(spec.router_skew, plan.hparams.n_expert_used, n_embd, rows, spec.seed);
    report = skew.report;
    scales.resize(plan.hparams.n_layer);
    for (uint32_t il = 0; il < plan.hparams.n_layer; ++il) {
      const std::vector<uint32_t> order = experts_by_rank(spec.seed, il, n_expert);
      scales[il].resize(n_expert);
      for (uint32_t r = 0; r < n_expert; ++r) scales[il][order[r]] = skew.scale_by_rank[r];
    }
  }
  return scales;
}

// One streaming job per tensor: norms 1, the rest drawn at their rms; routers scaled per row when skewed.
// `row_scales` must outlive the jobs.
std::vector<StreamTensor> fill_jobs(const std::vector<PlannedTensor>& tensors, const std::vector<TensorFill>& fills,
                                    uint64_t seed, const std::vector<std::vector<float>>& row_scales) {
  std::vector<StreamTensor> jobs;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const PlannedTensor& t = tensors[i];
    uint64_t n = 1;
    for (uint64_t d : t.ne) n *= d;
    const TensorFill f = fills[i];
    const uint64_t row = t.ne[0];
    const std::vector<float>* scale = f.kind == TensorFill::Kind::Router && !row_scales.empty() ? &row_scales[f.layer]
                                                                                               : nullptr;
    const format::GgmlType type = t.type;
    jobs.push_back({i, type, n, [=](uint64_t first, uint64_t count, uint8_t* out) {
                      if (f.kind == TensorFill::Kind::Ones) {
                        const float one = 1.0f;
                        for (uint64_t k = 0; k < count; ++k) std::memcpy(out + 4 * k, &one, 4);
                        return;
                      }
                      draw_elements(type, f.rms, seed, i, first, count, out);
                      if (scale == nullptr) return;
                      for (uint64_t k = 0; k < count; ++k) {
                        float v;
                        std::memcpy(&v, out + 4 * k, 4);
                        v *= (*scale)[(first + k) / row];
                        std::memcpy(out + 4 * k, &v, 4);
                      }
                    }});
  }
  return jobs;
}

}  // namespace

WriteStats write_model(const ModelSpec& spec, const std::string& path, const WriteOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  gguf::Writer w;
  std::vector<TensorFill> fills;
  const Plan plan = build_model(spec, w, fills);
  WriteStats stats;
  const std::vector<std::vector<float>> row_scales = router_row_scales(spec, plan, fills, stats.router);

  const std::vector<StreamTensor> jobs = fill_jobs(plan.tensors, fills, spec.seed, row_scales);
  w.open(path);
  stream_tensors(w, jobs, options);
  w.close();
  stats.file_bytes = plan.file_bytes;
  stats.tensors = plan.tensors.size();
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

WriteStats write_projector(const ModelSpec& spec, const std::string& path, const WriteOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  gguf::Writer w;
  std::vector<TensorFill> fills;
  const ProjectorPlan plan = build_projector(spec, w, fills);
  // Its own random streams: tensor i of the projector is not tensor i of the model.
  const uint64_t seed = spec.seed ^ 0x6d6d70726f6a0000ull;
  const std::vector<std::vector<float>> no_router;
  const std::vector<StreamTensor> jobs = fill_jobs(plan.tensors, fills, seed, no_router);
  w.open(path);
  stream_tensors(w, jobs, options);
  w.close();
  WriteStats stats;
  stats.file_bytes = plan.file_bytes;
  stats.tensors = plan.tensors.size();
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

}  // namespace strata::mkmodel
