// `strata mkmodel`: writes a synthetic model (a named shape, any dimension overridden, a quant preset, a seed), or
// upcycles a dense llama model into a Mixtral-style MoE whose experts are copies of its FFN.
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "args.hpp"
#include "commands.hpp"
#include "strata/mkmodel.hpp"

namespace strata::cli {
namespace {

using mkmodel::ModelSpec;
using mkmodel::QuantPreset;

std::string with_commas(uint64_t v) {
  const std::string digits = std::to_string(v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string shape_text(const std::vector<uint64_t>& ne) {
  std::string out;
  for (uint64_t d : ne) out += (out.empty() ? "" : " x ") + std::to_string(d);
  return out;
}

// "\r[#####.....]  45.2%  8.12/17.99 GB  1.52 GB/s" on stderr, at most ten times a second.
class ProgressBar {
 public:
  void update(uint64_t done, uint64_t total) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (done < total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double frac = total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
    const double secs = std::chrono::duration<double>(now - start_).count();
    std::string bar(30, '.');
    for (size_t i = 0; i < static_cast<size_t>(frac * 30); ++i) bar[i] = '#';
    // Rounded down, so that 100% means done.
    const double percent = std::floor(frac * 1000) / 10;
    std::fprintf(stderr, "\r[%s] %5.1f%%  %.2f/%.2f GB  %.2f GB/s ", bar.c_str(), percent, done / 1e9, total / 1e9,
                 secs > 0 ? done / 1e9 / secs : 0.0);
    if (done == total) std::fputc('\n', stderr);
    std::fflush(stderr);
  }

 private:
  std::mutex mutex_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_{};
};

void print_plan(const std::vector<mkmodel::PlannedTensor>& tensors, uint64_t file_bytes, bool every_tensor) {
  std::map<std::string, std::pair<size_t, uint64_t>> by_type;
  for (const auto& t : tensors) {
    const std::string type(format::traits(t.type).name);
    if (every_tensor) {
      std::printf("%-36s %-7s %-22s %s\n", t.name.c_str(), type.c_str(), shape_text(t.ne).c_str(),
                  with_commas(t.n_bytes).c_str());
    }
    by_type[type].first += 1;
    by_type[type].second += t.n_bytes;
  }
  for (const auto& [type, v] : by_type) {
    std::printf("  %-7s %4zu tensors %20s bytes\n", type.c_str(), v.first, with_commas(v.second).c_str());
  }
  std::printf("%s bytes, %zu tensors\n", with_commas(file_bytes).c_str(), tensors.size());
}

void print_router(const mkmodel::RouterReport& r, double exponent) {
  std::printf("router skew zipf:%g: share of tokens routed to the most popular experts (target in brackets):\n",
              exponent);
  const size_t n = std::min<size_t>(8, r.achieved.size());
  for (size_t i = 0; i < n; ++i) {
    std::printf("  rank %zu: %5.1f%% (%5.1f%%)\n", i + 1, 100 * r.achieved[i], 100 * r.target[i]);
  }
  std::printf("  last:   %5.1f%% (%5.1f%%)\n", 100 * r.achieved.back(), 100 * r.target.back());
}

void report(const std::string& out, const mkmodel::WriteStats& s) {
  std::printf("wrote %s: %s bytes, %zu tensors, %.2f s, %.2f GB/s\n", out.c_str(), with_commas(s.file_bytes).c_str(),
              s.tensors, s.seconds, s.seconds > 0 ? s.file_bytes / 1e9 / s.seconds : 0.0);
}

std::string preset_list() {
  std::string out;
  for (const auto& p : mkmodel::quant_presets()) out += std::string(out.empty() ? "" : ", ") + std::string(p.name);
  return out;
}

std::string preset_help() {
  std::string out;
  for (const auto& p : mkmodel::quant_presets()) out += "\n  " + std::string(p.name) + ": " + std::string(p.summary);
  return out;
}

}  // namespace

int cmd_mkmodel(const Args& args) {
  ArgParser p("strata mkmodel", "--out FILE [--mmproj-out FILE] [--arch A] [--shape S] [--quant Q] [--seed N] [dimension flags...]\n"
              "       strata mkmodel --upcycle DENSE.gguf --experts E --top-k K [--seed N] --out FILE",
              "Writes a synthetic GGUF with llama.cpp's tensor names and keys: random weights drawn directly in each\n"
              "block format (zero-mean, rms 1/sqrt(row width); norms 1; biases, sinks and routing biases small),\n"
              "deterministic for a seed whatever the thread count. --upcycle turns a dense llama model into a\n"
              "Mixtral-style MoE whose experts are byte copies of its FFN and whose router is seeded random, so its\n"
              "output equals the dense model's. A vision shape (qwen3-vl-30b-a3b) is a pair: the text model (--out,\n"
              "arch qwen3vlmoe) and its vision projector (--mmproj-out, an mmproj GGUF of type qwen3vl_merger) for\n"
              "`strata run --model M --mmproj P --image I`.\n"
              "Quant presets:" + preset_help());
  std::string out, mmproj_out, arch_text = "qwen3moe", shape = "tiny", quant_text, vocab, skew, upcycle_path, name;
  std::map<std::string, long long> dims;
  std::optional<double> rope_theta, rms_eps;
  uint64_t seed = 1;
  unsigned threads = 0;
  long long chunk_mib = 8;
  bool progress = false, dry_run = false, list = false;

  p.option("--out", "FILE", "the GGUF to write", &out);
  p.option("--mmproj-out", "FILE",
           "a vision shape's projector (mmproj GGUF), written after --out; required with qwen3-vl-30b-a3b (and tiny "
           "with --arch qwen3vlmoe), refused otherwise",
           &mmproj_out);
  p.option("--arch", "A",
           "llama, qwen3moe, gpt-oss, glm4moe, deepseek2 or qwen3vlmoe (default qwen3moe; the gpt-oss-*, glm-*, "
           "deepseek-v3, kimi-k2 and qwen3-vl-* shapes set their own)",
           &arch_text);
  p.option("--shape", "S", mkmodel::shape_names() + " (default tiny)", &shape);
  p.option("--quant", "Q", preset_list() + " (default: mxfp4_moe for gpt-oss, q4_k_m otherwise)", &quant_text);
  p.option("--seed", "N", "random seed (default 1)",
           [&](const std::string& v) { seed = static_cast<uint64_t>(parse_int("--seed", v, 0, LLONG_MAX)); });
  struct Dim {
    const char* flag;
    const char* help;
    long long min;
  };
  const Dim dim_flags[] = {
      {"--layers",
       "decoder blocks; a glm4moe or deepseek2 shape cut to N keeps its nextn (MTP) blocks after them (glm-4.6, "
       "deepseek-v3: block_count N+1; kimi-k2 has none) and at most N-1 of its leading dense blocks (one MoE block "
       "at least); gpt-oss's even blocks stay sliding-window; qwen3vlmoe needs a block more than its deepstack parts "
       "(qwen3-vl-30b-a3b: 4 at least), and its projector stays whole",
       1},
      {"--embd", "hidden size (embedding_length)", 1},
      {"--ff", "dense FFN width (feed_forward_length; llama with experts: each expert's width)", 1},
      {"--expert-ff", "routed expert width (expert_feed_forward_length of qwen3moe, gpt-oss, glm4moe, deepseek2)", 1},
      {"--heads", "query heads", 1},
      {"--kv-heads", "key/value heads", 1},
      {"--head-dim", "head size (key_length = value_length; deepseek2: the query/key head qk_nope + qk_rope)", 2},
      {"--experts", "routed experts (0: dense, llama only)", 0},
      {"--experts-used", "experts per token", 1},
      {"--context", "context_length", 1},
      {"--nextn", "nextn (MTP) blocks after the decoder blocks, glm4moe and deepseek2 (0: none, as llama.cpp's "
                  "deepseek2 converter writes DeepSeek-V3)", 0},
  };
  for (const Dim& d : dim_flags) {
    const std::string flag = d.flag;
    const long long min = d.min;
    p.option(flag + (flag == "--experts-used" ? "|--top-k" : ""), "N", d.help,
             [&dims, flag, min](const std::string& v) { dims[flag] = parse_int(flag, v, min, 1ll << 30); });
  }
  p.option("--vocab", "N|FILE", "vocabulary size of the built-in vocabulary, or a GGUF whose tokenizer is copied",
           &vocab);
  p.option("--rope-theta", "F", "rope.freq_base",
           [&](const std::string& v) { rope_theta = parse_double("--rope-theta", v, 1e-3, 1e12); });
  p.option("--rms-eps", "F", "attention.layer_norm_rms_epsilon",
           [&](const std::string& v) { rms_eps = parse_double("--rms-eps", v, 1e-12, 1.0); });
  p.option("--router-skew", "zipf:S", "expert popularity falling as 1/rank^S (S in 0..8)", &skew);
  p.option("--name", "TEXT", "general.name", &name);
  p.option("--upcycle", "DENSE", "turn this dense llama GGUF into an MoE (with --experts, --top-k, --seed)",
           &upcycle_path);
  p.option("--threads", "N", "worker threads (default: every core)",
           [&](const std::string& v) { threads = static_cast<unsigned>(parse_int("--threads", v, 1, 4096)); });
  p.option("--chunk-mib", "N", "work unit per thread in MiB (default 8)",
           [&](const std::string& v) { chunk_mib = parse_int("--chunk-mib", v, 1, 4096); });
  p.flag("--progress", "show the progress bar even when stderr is not a terminal", &progress);
  p.flag("--dry-run", "print the types and sizes without writing a file", &dry_run);
  p.flag("--list", "with --dry-run: every tensor with its type, shape and bytes", &list);
  if (!p.parse(args)) return 0;

  ProgressBar bar;
  mkmodel::WriteOptions options;
  options.threads = threads;
  options.chunk_bytes = static_cast<uint64_t>(chunk_mib) << 20;
  if (progress || isatty(STDERR_FILENO)) {
    options.progress = [&bar](uint64_t done, uint64_t total) { bar.update(done, total); };
  }

  if (!upcycle_path.empty()) {
    for (const char* f : {"--arch", "--shape", "--quant", "--vocab", "--router-skew", "--name", "--dry-run",
                          "--mmproj-out"}) {
      if (p.given(f)) throw UsageError(std::string(f) + " does not apply to --upcycle");
    }
    for (const auto& [flag, v] : dims) {
      if (flag != "--experts" && flag != "--experts-used") throw UsageError(flag + " does not apply to --upcycle");
    }
    if (!dims.count("--experts") || !dims.count("--experts-used")) {
      throw UsageError("--upcycle needs --experts E and --top-k K");
    }
    if (out.empty()) throw UsageError("--upcycle needs --out FILE");
    mkmodel::UpcycleSpec u;
    u.dense_path = upcycle_path;
    u.n_expert = static_cast<uint32_t>(dims["--experts"]);
    u.n_expert_used = static_cast<uint32_t>(dims["--experts-used"]);
    u.seed = seed;
    report(out, mkmodel::upcycle(u, out, options));
    return 0;
  }

  // A shape made for one architecture brings it; --arch may only repeat it.
  const std::optional<Arch> shape_arch = mkmodel::shape_arch(shape);
  const auto arch = p.given("--arch") || !shape_arch ? arch_from_name(arch_text) : shape_arch;
  if (!arch || (*arch != Arch::Llama && *arch != Arch::Qwen3Moe && *arch != Arch::GptOss && *arch != Arch::Glm4Moe &&
                *arch != Arch::Deepseek2 && *arch != Arch::Qwen3VlMoe)) {
    throw UsageError("--arch '" + arch_text +
                     "': mkmodel writes llama, qwen3moe, gpt-oss, glm4moe, deepseek2 or qwen3vlmoe");
  }
  std::optional<ModelSpec> spec = mkmodel::shape_preset(shape, *arch);
  if (!spec && shape_arch) {
    throw UsageError("--shape " + shape + " is a " + std::string(arch_name(*shape_arch)) + " shape; drop --arch " +
                     arch_text + " or pick another shape");
  }
  if (!spec && (shape == "qwen3-30b-a3b" || shape == "qwen3-235b-a22b")) {
    throw UsageError("--shape " + shape + " is for --arch llama or qwen3moe, not " + arch_text);
  }
  if (!spec) throw UsageError("--shape '" + shape + "' is not one of " + mkmodel::shape_names());
  if (p.given("--quant")) {
    const auto quant = mkmodel::quant_preset_from_name(quant_text);
    if (!quant) throw UsageError("--quant '" + quant_text + "' is not one of " + preset_list());
    spec->quant = *quant;
  }
  spec->seed = seed;
  spec->name = name;

  auto dim = [&](const char* flag, uint32_t& field) {
    if (auto it = dims.find(flag); it != dims.end()) field = static_cast<uint32_t>(it->second);
  };
  if (auto it = dims.find("--layers"); it != dims.end()) mkmodel::set_layers(*spec, static_cast<uint32_t>(it->second));
  dim("--embd", spec->n_embd);
  dim("--ff", spec->n_ff);
  dim("--heads", spec->n_head);
  dim("--kv-heads", spec->n_head_kv);
  dim("--head-dim", spec->head_dim);
  dim("--experts", spec->n_expert);
  dim("--experts-used", spec->n_expert_used);
  dim("--context", spec->n_ctx);
  dim("--nextn", spec->n_layer_nextn);
  if (*arch == Arch::Llama) {
    // llama's experts are feed_forward_length wide: --expert-ff names the same number.
    if (dims.count("--expert-ff")) {
      if (dims.count("--ff") && dims["--ff"] != dims["--expert-ff"]) {
        throw UsageError("--ff and --expert-ff differ, but a llama model's experts are --ff wide");
      }
      spec->n_ff = static_cast<uint32_t>(dims["--expert-ff"]);
    }
    if (spec->n_expert == 0) spec->n_expert_used = 0;
  } else {
    dim("--expert-ff", spec->n_ff_exp);
  }
  if (rope_theta) spec->rope_theta = static_cast<float>(*rope_theta);
  if (rms_eps) spec->rms_eps = static_cast<float>(*rms_eps);
  if (!vocab.empty()) {
    if (vocab.find_first_not_of("0123456789") == std::string::npos) {
      spec->n_vocab = static_cast<uint32_t>(parse_int("--vocab", vocab, 1, 1ll << 24));
    } else {
      spec->vocab_file = vocab;
    }
  }
  if (!skew.empty()) {
    if (skew.rfind("zipf:", 0) != 0) throw UsageError("--router-skew '" + skew + "': expected zipf:S, e.g. zipf:1.2");
    spec->router_skew = parse_double("--router-skew", skew.substr(5), 0.0, 8.0);
  }

  // A vision shape is a pair: the text model and its projector, written together so that their widths agree.
  const std::string arch_text_used(arch_name(*arch));
  if (!spec->projector && p.given("--mmproj-out")) {
    throw UsageError("--mmproj-out is for a vision shape (--shape qwen3-vl-30b-a3b, or --shape tiny --arch "
                     "qwen3vlmoe); --shape " + shape + " (--arch " + arch_text_used + ") has no projector");
  }
  if (spec->projector && !dry_run && mmproj_out.empty()) {
    throw UsageError("--shape " + shape + " (--arch " + arch_text_used +
                     ") is a text model and its vision projector: give --mmproj-out FILE for the projector beside "
                     "--out FILE (or --dry-run)");
  }
  if (!mmproj_out.empty() && mmproj_out == out) throw UsageError("--mmproj-out and --out name the same file");

  if (dry_run) {
    const mkmodel::Plan plan = mkmodel::plan_model(*spec);
    if (spec->projector) std::printf("text model (%s):\n", arch_text_used.c_str());
    print_plan(plan.tensors, plan.file_bytes, list);
    if (spec->projector) {
      const mkmodel::ProjectorPlan proj = mkmodel::plan_projector(*spec);
      std::printf("vision projector (clip, qwen3vl_merger):\n");
      print_plan(proj.tensors, proj.file_bytes, list);
    }
    return 0;
  }
  if (out.empty()) throw UsageError("'strata mkmodel' needs --out FILE (or --dry-run)");
  // Both checked before the long write begins.
  if (spec->projector) mkmodel::plan_projector(*spec);
  const mkmodel::WriteStats stats = mkmodel::write_model(*spec, out, options);
  if (stats.router) print_router(*stats.router, spec->router_skew);
  report(out, stats);
  if (spec->projector) report(mmproj_out, mkmodel::write_projector(*spec, mmproj_out, options));
  return 0;
}

}  // namespace strata::cli
