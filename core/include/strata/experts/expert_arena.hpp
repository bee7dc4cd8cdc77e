// The host copy of every routed expert that the hybrid path reads its misses from: the CPU pool computes from it
// and PCIe copies read it (core/src/engine/expert_upload.hpp). A device slot lays an expert's matrices out together,
// [gate | up | down] (`ExpertLayout`).
//
// By default (experts.host_copy: auto, and file, file_registered) the host copy is the mapped GGUF itself: no second
// copy of the experts in RAM. Expert e of a layer is then three slices, one per stack (a layer's experts are one
// 3-D tensor per matrix), and `pieces` names them. PCIe reads take pieces of the mapping registered one bounded
// piece at a time (file_registered, and auto when the experts fit in memory: fits_in_memory), or stage the slices
// through a small pinned ring (docs/ARCHITECTURE.md, "Registered host memory").
//
// With experts.host_copy: arena (or experts.arena set) the experts are copied into an arena at start, each expert's
// matrices together, one expert after another and layer after layer, so that a missed expert crosses the link as
// one copy. By default the arena is private memory filled at each start. With a file on tmpfs (experts.arena) it
// outlives the process: a later engine of the same model, or the second engine of a pair, maps it instead of
// filling it again.
//
// The file: a 4 KiB header (magic, format version, the model's fingerprint, the data's size, and a completion mark
// written last), then the data. The filler holds an exclusive flock while it checks and fills, so two engines
// starting together fill it once; a header that does not match (another model, an interrupted fill) is refilled.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/plugin_api.h"

namespace strata {
struct ModelWeights;
}

namespace strata::experts {

// Where each matrix sits inside one expert's bytes.
struct ExpertLayout {
  uint64_t gate = 0, up = 0, down = 0;  // offsets
  uint64_t bytes = 0;                   // the expert's total
  uint32_t gate_type = 0, up_type = 0, down_type = 0;
  // The matrices of the expert whose bytes start at base, in the layout (host or device addresses alike).
  strata_expert_weights at(const void* base) const;
};

class ExpertArena {
 public:
  // One matrix of one expert in the host copy: `bytes` at `src`, at `offset` in the expert's layout.
  struct Piece {
    const unsigned char* src = nullptr;
    uint64_t offset = 0, bytes = 0;
  };
  // The mapped GGUF as the host copy (experts.host_copy: file): nothing copied, nothing allocated. Throws as the
  // arena's constructor does for stacks the hybrid layout does not take.
  struct InFile {};
  ExpertArena(const ModelWeights& weights, InFile);
  // Copies every layer's routed experts (gate, up and down stacks) with `threads` threads into private memory, or
  // into `file` (on tmpfs; reused when its header says it holds this model's experts, `fingerprint`). Throws
  // strata::Error for fused gate_up stacks or per-expert biases (no hybrid layout for them yet), a file that is not
  // on tmpfs or cannot be made, or when memory runs out.
  ExpertArena(const ModelWeights& weights, unsigned threads, const std::string& file = {},
              const std::string& fingerprint = {});
  ~ExpertArena();
  ExpertArena(const ExpertArena&) = delete;
  ExpertArena& operator=(const ExpertArena&) = delete;

  // Layer il's layout (bytes 0 for a layer without routed experts).
  const ExpertLayout& layout(uint32_t il) const { return layers_[il].layout; }
  // True for an arena (an expert's bytes are one run at expert()); false for the file as the host copy.
  bool contiguous() const { return !in_file_; }
  // The arena's copy of the expert (contiguous() only).
  const unsigned char* expert(uint32_t il, uint32_t e) const {
    return base_ + layers_[il].offset + uint64_t{e} * layers_[il].layout.bytes;
  }
  // The expert's matrices on the host, in the arena or in the mapped file: what the CPU pool computes from.
  strata_expert_weights weights(uint32_t il, uint32_t e) const;
  // Its three matrices (gate, up, down), in the layout's order; an arena's lie back to back.
  void pieces(uint32_t il, uint32_t e, Piece out[3]) const;
  // The mapped ranges the experts' bytes lie in (the file's stacks merged where adjacent, or the arena's data).
  struct Range {
    const unsigned char* p = nullptr;
    uint64_t bytes = 0;
  };
  std::vector<Range> ranges() const;
  // Asks the kernel to read the experts' pages ahead (MADV_WILLNEED) when they fit in the memory available;
  // returns the bytes asked for (0 when skipped or an arena).
  uint64_t advise_willneed() const;
  // Whether the mapped file's expert pages fit in memory: their bytes within 90% of what the kernel calls available
  // (which counts a disk file's cached pages), plus, for a file on tmpfs (`in_shmem`: its pages are memory the
  // kernel does not count as available), what of them is resident. experts.host_copy: auto registers them only
  // then, so that page-locking never pins a model larger than the RAM. False for an arena.
  bool fits_in_memory(bool in_shmem) const;
  // Whether `path` is on tmpfs (false when it cannot be told).
  static bool on_tmpfs(const std::string& path);
  unsigned char* data() const { return base_; }
  uint64_t size() const { return size_; }
  double fill_seconds() const { return fill_seconds_; }
  // False when a file arena was found complete and mapped as it was.
  bool filled() const { return filled_; }
  const std::string& file() const { return file_; }

 private:
  struct Layer {
    ExpertLayout layout;
    uint64_t offset = 0;
    uint32_t n_expert = 0;
    const unsigned char* stack[3] = {nullptr, nullptr, nullptr};  // the file's gate, up and down stacks (InFile)
  };
  void plan_layers(const ModelWeights& weights);
  std::vector<Layer> layers_;
  void fill(const ModelWeights& weights, unsigned threads);
  void open_file(const ModelWeights& weights, unsigned threads, const std::string& fingerprint);
  unsigned char* base_ = nullptr;  // the data
  unsigned char* map_ = nullptr;   // the whole mapping (the file's header first)
  uint64_t map_bytes_ = 0;
  uint64_t size_ = 0;
  double fill_seconds_ = 0;
  bool filled_ = true;
  bool in_file_ = false;
  std::string file_;
};

}  // namespace strata::experts
