#include "backend_ops_harness.hpp"
#include "float_nmse.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <exception>
#include <optional>
#include <sstream>

#include "strata/format/types.hpp"
#include "strata/reference_backend.hpp"

namespace strata::test {
namespace {

constexpr size_t kGuard = 64;           // sentinel bytes before and after every output
constexpr unsigned char kGuardByte = 0xa5;
constexpr unsigned char kFillByte = 0x7f;  // initial output bytes: 0x7f7f7f7f, a large finite float

// An output region with its guards, for one run.
struct GuardedBuffer {
  std::vector<unsigned char> mem;
  explicit GuardedBuffer(const Output& o) : mem(o.bytes + 2 * kGuard, kGuardByte) {
    if (o.initial.empty()) {
      std::memset(mem.data() + kGuard, kFillByte, o.bytes);
    } else {
      std::memcpy(mem.data() + kGuard, o.initial.data(), o.bytes);
    }
  }
  void* data() { return mem.data() + kGuard; }
  bool guards_intact() const {
    for (size_t i = 0; i < kGuard; ++i) {
      if (mem[i] != kGuardByte || mem[mem.size() - 1 - i] != kGuardByte) return false;
    }
    return true;
  }
  std::vector<unsigned char> contents() const {
    return {mem.begin() + static_cast<std::ptrdiff_t>(kGuard), mem.end() - static_cast<std::ptrdiff_t>(kGuard)};
  }
};

template <class Run>
RunResult run_with(Instance& inst, Run run) {
  std::vector<GuardedBuffer> bufs;
  bufs.reserve(inst.outputs.size());
  std::vector<void*> ptrs;
  for (const Output& o : inst.outputs) {
    bufs.emplace_back(o);
    ptrs.push_back(bufs.back().data());
  }
  const strata_op op = inst.bind(ptrs);
  RunResult r;
  run(op, r);
  for (size_t i = 0; i < bufs.size(); ++i) {
    r.out.push_back(bufs[i].contents());
    if (!bufs[i].guards_intact()) r.guard_damage.push_back(inst.outputs[i].name);
  }
  return r;
}

struct Discovered {
  std::unique_ptr<PluginRegistry> registry;
  std::vector<std::unique_ptr<PluginInstance>> instances;
  std::vector<BackendUnderTest> backends;
  std::optional<BackendUnderTest> one_worker;  // cpu_avx2 with workers=1: not a parity label, a bytes check's
  std::optional<BackendUnderTest> gathering, gather_free;  // cpu_avx2 with gathers=true / false: the same

  Discovered() {
    PluginSearchPath path;
    path.folders.push_back(STRATA_BUILD_PLUGIN_DIR);
    path.origins.push_back("build plugin folder");
    registry = std::make_unique<PluginRegistry>(path);
    for (const PluginCandidate& c : registry->candidates()) {
      if (c.verdict != PluginCandidate::Verdict::Usable || c.kind != STRATA_KIND_BACKEND) continue;
      add(c.name, c.name, {});
      if (c.name == "cpu_avx2") {
        add(c.name, "cpu_avx2_force_avx2", {"force_avx2=true"});
        one_worker = bytes_check(c.name, "cpu_avx2_one_worker", "workers=1");
        gathering = bytes_check(c.name, "cpu_avx2_gathering", "gathers=true");
        gather_free = bytes_check(c.name, "cpu_avx2_gather_free", "gathers=false");
      }
      // The GPU plugins' double kernels (issue 28): the CPU's arithmetic, compared as tightly as cpu_avx2.
      if (c.name == "cuda" || c.name == "hip") add(c.name, c.name + "_canonical_double", {"canonical_double=true"}, true);
    }
  }

  // An instance with one option, for a bytes check against another (not a parity label).
  std::optional<BackendUnderTest> bytes_check(const std::string& plugin, const std::string& label,
                                              const std::string& option) {
    auto inst = registry->instantiate(plugin, {option});
    const auto* be = inst->get<strata_backend_v1>(STRATA_BACKEND_FAMILY, STRATA_BACKEND_VERSION);
    if (be == nullptr) return std::nullopt;
    BackendUnderTest b{label, be, inst->ctx(), inst.get()};
    instances.push_back(std::move(inst));
    return b;
  }

  // `always`: list a variant even when its device reports the plugin's default arch (its path is an option's).
  void add(const std::string& plugin, const std::string& label, const std::vector<std::string>& options,
           bool always = false) {
    auto inst = registry->instantiate(plugin, options);
    const auto* be = inst->get<strata_backend_v1>(STRATA_BACKEND_FAMILY, STRATA_BACKEND_VERSION);
    if (be == nullptr || be->device_count(inst->ctx()) == 0) return;
    if (label != plugin && !always) {
      // A variant only counts when it runs another code path than the plugin's default.
      const auto devs = inst->devices();
      const BackendUnderTest* base = nullptr;
      for (const auto& b : backends) {
        if (b.label == plugin) base = &b;
      }
      if (base == nullptr || base->instance->devices().at(0).arch == devs.at(0).arch) return;
    }
    backends.push_back({label, be, inst->ctx(), inst.get()});
    instances.push_back(std::move(inst));
  }
};

Discovered& discovered() {
  static Discovered d;
  return d;
}

}  // namespace

bool float_label(const std::string& label) {
  return label == "cuda" || label == "hip";
}

Output output_for(const Output& o, const std::string& label) {
  Output r = o;
  if (o.float_op && float_label(label)) r.compare = o.on_float;
  return r;
}

std::string test_name(const std::string& vars) {
  std::string s;
  for (char c : vars) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum) {
      s += c;
    } else if (!s.empty() && s.back() != '_') {
      s += '_';
    }
  }
  while (!s.empty() && s.back() == '_') s.pop_back();
  return s;
}

const std::vector<BackendUnderTest>& backends_under_test() { return discovered().backends; }

const BackendUnderTest* cpu_one_worker() {
  const auto& w = discovered().one_worker;
  return w ? &*w : nullptr;
}

const BackendUnderTest* cpu_gathering() {
  const auto& w = discovered().gathering;
  return w ? &*w : nullptr;
}

const BackendUnderTest* cpu_gather_free() {
  const auto& w = discovered().gather_free;
  return w ? &*w : nullptr;
}

std::vector<std::string> backend_labels() {
  std::vector<std::string> out;
  for (const auto& b : backends_under_test()) out.push_back(b.label);
  return out;
}

const BackendUnderTest* find_backend(const std::string& label) {
  for (const auto& b : backends_under_test()) {
    if (b.label == label) return &b;
  }
  return nullptr;
}

namespace {

bool has_device_memory(const BackendUnderTest& b) {
  const strata_backend_v1& t = *b.backend;
  return t.header.minor >= 1 && t.header.struct_size >= sizeof(strata_backend_v1) && t.buffer_alloc != nullptr;
}

// Copies of an op's operands in a GPU backend's memory: every input (and every table the op points at) is
// uploaded; outputs are bound to device buffers with the same guard bytes around them, and read back whole so the
// guards are checked on what the device wrote.
class DeviceMirror {
 public:
  explicit DeviceMirror(const BackendUnderTest& b) : b_(b) {}
  ~DeviceMirror() {
    for (void* p : buffers_) b_.backend->buffer_free(b_.ctx, 0, p);
  }
  DeviceMirror(const DeviceMirror&) = delete;
  DeviceMirror& operator=(const DeviceMirror&) = delete;

  void* upload(const void* host, size_t bytes) {
    void* p = nullptr;
    check(b_.backend->buffer_alloc(b_.ctx, 0, bytes, STRATA_BUFFER_DEVICE, &p), "buffer_alloc");
    buffers_.push_back(p);
    check(b_.backend->copy(b_.ctx, 0, p, host, bytes, STRATA_COPY_HOST_TO_DEVICE), "copy");
    return p;
  }
  void download(void* host, const void* dev, size_t bytes) {
    check(b_.backend->copy(b_.ctx, 0, host, dev, bytes, STRATA_COPY_DEVICE_TO_HOST), "copy");
  }
  // The bytes a tensor spans: its last row's end.
  static size_t extent(const strata_tensor& t) {
    size_t end = static_cast<size_t>(format::row_bytes(static_cast<format::GgmlType>(t.type), static_cast<uint64_t>(t.ne[0])));
    for (int d = 1; d < 4; ++d) end += static_cast<size_t>(t.ne[d] - 1) * t.nb[d];
    return end;
  }
  void mirror_inputs(strata_op& op, const std::vector<void*>& outputs) {
    const auto is_output = [&](const void* p) { return std::find(outputs.begin(), outputs.end(), p) != outputs.end(); };
    for (strata_tensor& t : op.src) {
      if (t.data != nullptr && !is_output(t.data)) t.data = upload(t.data, extent(t));
    }
    // Backend 1.6: ATTENTION's sinks.
    if (op.struct_size >= offsetof(strata_op, src4) + sizeof(strata_tensor) && op.src4.data != nullptr) {
      op.src4.data = upload(op.src4.data, extent(op.src4));
    }
    if (op.kind == STRATA_OP_MOE && op.extra != nullptr) {
      moe_ = *static_cast<const strata_moe_op*>(op.extra);
      weights_.assign(moe_.weights, moe_.weights + moe_.n_experts);
      for (strata_expert_weights& w : weights_) w = mirror_expert(w, moe_.n_embd, moe_.n_ff);
      moe_.weights = weights_.data();
      moe_.x = static_cast<const float*>(upload(moe_.x, sizeof(float) * moe_.n_embd * moe_.n_tok));
      // The form's biases are indexed by expert id: as many experts as the largest listed id needs.
      const uint32_t n_ids = moe_.n_experts > 0 ? moe_.expert_ids[moe_.n_experts - 1] + 1 : 0;
      moe_.form = mirror_form(moe_.form, moe_.n_embd, moe_.n_ff, n_ids);
      op.extra = &moe_;  // the pair lists stay in host memory (plugin_api.h); rows was bound to the device
    }
    if (op.kind == STRATA_OP_MOE_ROUTED && op.extra != nullptr) {
      table_ = *static_cast<const strata_expert_table*>(op.extra);
      weights_.assign(table_.experts, table_.experts + table_.n_expert);
      for (strata_expert_weights& w : weights_) w = mirror_expert(w, table_.n_embd, table_.n_ff);
      table_.experts = static_cast<const strata_expert_weights*>(
          upload(weights_.data(), weights_.size() * sizeof(strata_expert_weights)));
      table_.form = mirror_form(table_.form, table_.n_embd, table_.n_ff, table_.n_expert);
      op.extra = &table_;
    }
  }

 private:
  strata_expert_weights mirror_expert(strata_expert_weights w, uint32_t n_embd, uint32_t n_ff) {
    const auto bytes = [](uint32_t type, uint32_t row, uint32_t rows) {
      return static_cast<size_t>(format::row_bytes(static_cast<format::GgmlType>(type), row)) * rows;
    };
    // A NULL matrix stays NULL: MOE_ROUTED's precomputed experts have none.
    const auto mirror = [&](const void* m, size_t n) { return m != nullptr ? upload(m, n) : nullptr; };
    w.gate = mirror(w.gate, bytes(w.gate_type, n_embd, n_ff));
    w.up = mirror(w.up, bytes(w.up_type, n_embd, n_ff));
    w.down = mirror(w.down, bytes(w.down_type, n_ff, n_embd));
    return w;
  }
  // A form (host memory, as plugin_api.h has it) whose biases are copied to the device; NULL stays NULL.
  const strata_expert_form* mirror_form(const strata_expert_form* f, uint32_t n_embd, uint32_t n_ff, uint32_t n_expert) {
    if (f == nullptr) return nullptr;
    form_ = *f;
    const auto bias = [&](const float* b, uint32_t len) {
      return b != nullptr ? static_cast<const float*>(upload(b, sizeof(float) * len * n_expert)) : nullptr;
    };
    form_.gate_bias = bias(f->gate_bias, n_ff);
    form_.up_bias = bias(f->up_bias, n_ff);
    form_.down_bias = bias(f->down_bias, n_embd);
    return &form_;
  }
  void check(strata_status* st, const char* what) {
    if (st != nullptr) {
      const auto [code, message] = take_status(st);
      throw std::runtime_error(std::string(what) + ": " + status_code_name(code) + ": " + message);
    }
  }
  const BackendUnderTest& b_;
  std::vector<void*> buffers_;
  strata_moe_op moe_{};
  strata_expert_table table_{};
  strata_expert_form form_{};
  std::vector<strata_expert_weights> weights_;
};

RunResult run_on_device(const BackendUnderTest& b, Instance& inst) {
  RunResult r;
  try {
    DeviceMirror mirror(b);
    std::vector<GuardedBuffer> bufs;
    std::vector<void*> dev_outputs;
    for (const Output& o : inst.outputs) {
      bufs.emplace_back(o);
      auto* base = static_cast<unsigned char*>(mirror.upload(bufs.back().mem.data(), bufs.back().mem.size()));
      dev_outputs.push_back(base + kGuard);
    }
    strata_op op = inst.bind(dev_outputs);
    mirror.mirror_inputs(op, dev_outputs);
    if (b.backend->supports_op(b.ctx, 0, &op) == 0) {
      r.supported = false;
      return r;
    }
    if (strata_status* st = b.backend->compute(b.ctx, 0, &op, 1)) {
      const auto [code, message] = take_status(st);
      r.error = std::string(status_code_name(code)) + ": " + message;
    }
    for (size_t i = 0; i < bufs.size(); ++i) {
      mirror.download(bufs[i].mem.data(), static_cast<unsigned char*>(dev_outputs[i]) - kGuard, bufs[i].mem.size());
      r.out.push_back(bufs[i].contents());
      if (!bufs[i].guards_intact()) r.guard_damage.push_back(inst.outputs[i].name);
    }
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

}  // namespace

RunResult run_on_backend(const BackendUnderTest& b, Instance& inst) {
  if (has_device_memory(b)) return run_on_device(b, inst);
  return run_with(inst, [&](const strata_op& op, RunResult& r) {
    if (b.backend->supports_op(b.ctx, 0, &op) == 0) {
      r.supported = false;
      return;
    }
    if (strata_status* st = b.backend->compute(b.ctx, 0, &op, 1)) {
      const auto [code, message] = take_status(st);
      r.error = std::string(status_code_name(code)) + ": " + message;
    }
  });
}

RunResult run_on_reference(Instance& inst) {
  return run_with(inst, [&](const strata_op& op, RunResult& r) {
    try {
      run_reference(op);
    } catch (const std::exception& e) {
      r.error = e.what();
    }
  });
}

std::string compare_output(const Output& o, const std::vector<unsigned char>& want,
                           const std::vector<unsigned char>& got, double max_nmse) {
  std::ostringstream msg;
  if (want.size() != got.size()) return o.name + ": sizes differ";
  if (o.compare == Compare::ByCase) return o.name + ": compared by the case's float_check, not here";
  if (o.compare == Compare::Bytes) {
    if (std::memcmp(want.data(), got.data(), want.size()) == 0) return "";
    size_t i = 0;
    while (want[i] == got[i]) ++i;
    const size_t word = i / 4;
    uint32_t a = 0, b = 0;
    std::memcpy(&a, want.data() + 4 * word, std::min<size_t>(4, want.size() - 4 * word));
    std::memcpy(&b, got.data() + 4 * word, std::min<size_t>(4, got.size() - 4 * word));
    float fa, fb;
    std::memcpy(&fa, &a, 4);
    std::memcpy(&fb, &b, 4);
    size_t bad = 0;
    for (size_t k = 0; k < want.size(); ++k) bad += want[k] != got[k];
    msg << o.name << ": " << bad << " of " << want.size() << " bytes differ; first at byte " << i << " (word "
        << word << ": want 0x" << std::hex << a << " got 0x" << b << std::dec << ", as f32 " << fa << " vs " << fb
        << ")";
    return msg.str();
  }
  return nmse_mismatch(o.name, want, got, max_nmse);
}

}  // namespace strata::test
