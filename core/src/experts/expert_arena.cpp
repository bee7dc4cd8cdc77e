#include "strata/experts/expert_arena.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "strata/error.hpp"
#include "strata/format/types.hpp"
#include "strata/model.hpp"

namespace strata::experts {

strata_expert_weights ExpertLayout::at(const void* base) const {
  const auto* b = static_cast<const unsigned char*>(base);
  return strata_expert_weights{b + gate, b + up, b + down, gate_type, up_type, down_type, 0};
}

namespace {

uint64_t matrix_bytes(Tensor t) { return format::row_bytes(t->type, t->ne[0]) * t->ne[1]; }

}  // namespace

void ExpertArena::plan_layers(const ModelWeights& weights) {
  layers_.resize(weights.layers.size());
  for (size_t il = 0; il < weights.layers.size(); ++il) {
    const LayerWeights& lw = weights.layers[il];
    if (!lw.has_experts()) continue;
    const ExpertStack& s = lw.experts;
    // Expert biases (gpt-oss) are not in the arena: they stay with the dense weights, and the ops read them through
    // the layer's strata_expert_form.
    if (s.gate == nullptr || s.up == nullptr || s.down == nullptr || s.gate_up != nullptr) {
      throw Error("layer " + std::to_string(il) +
                  ": the hybrid expert path takes separate gate, up and down stacks (not a fused gate_up); this "
                  "model's experts need all of VRAM (set experts.cache: auto on a card that holds them, or use a CPU "
                  "backend)");
    }
    Layer& l = layers_[il];
    l.n_expert = lw.routing.n_expert;
    l.layout.gate = 0;
    l.layout.up = matrix_bytes(s.gate);
    l.layout.down = l.layout.up + matrix_bytes(s.up);
    l.layout.bytes = l.layout.down + matrix_bytes(s.down);
    l.layout.gate_type = static_cast<uint32_t>(s.gate->type);
    l.layout.up_type = static_cast<uint32_t>(s.up->type);
    l.layout.down_type = static_cast<uint32_t>(s.down->type);
    l.stack[0] = s.gate->data;
    l.stack[1] = s.up->data;
    l.stack[2] = s.down->data;
    l.offset = size_;
    size_ += uint64_t{l.n_expert} * l.layout.bytes;
  }
}

ExpertArena::ExpertArena(const ModelWeights& weights, InFile) : filled_(false), in_file_(true) {
  plan_layers(weights);
}

strata_expert_weights ExpertArena::weights(uint32_t il, uint32_t e) const {
  if (!in_file_) return layers_[il].layout.at(expert(il, e));
  const Layer& l = layers_[il];
  return strata_expert_weights{l.stack[0] + uint64_t{e} * (l.layout.up - l.layout.gate),
                               l.stack[1] + uint64_t{e} * (l.layout.down - l.layout.up),
                               l.stack[2] + uint64_t{e} * (l.layout.bytes - l.layout.down),
                               l.layout.gate_type,
                               l.layout.up_type,
                               l.layout.down_type,
                               0};
}

void ExpertArena::pieces(uint32_t il, uint32_t e, Piece out[3]) const {
  const ExpertLayout& l = layers_[il].layout;
  const strata_expert_weights w = weights(il, e);
  out[0] = Piece{static_cast<const unsigned char*>(w.gate), l.gate, l.up - l.gate};
  out[1] = Piece{static_cast<const unsigned char*>(w.up), l.up, l.down - l.up};
  out[2] = Piece{static_cast<const unsigned char*>(w.down), l.down, l.bytes - l.down};
}

std::vector<ExpertArena::Range> ExpertArena::ranges() const {
  std::vector<Range> r;
  if (!in_file_) {
    if (size_ > 0) r.push_back({base_, size_});
    return r;
  }
  for (const Layer& l : layers_) {
    if (l.n_expert == 0) continue;
    const uint64_t bytes[3] = {l.layout.up - l.layout.gate, l.layout.down - l.layout.up, l.layout.bytes - l.layout.down};
    for (int m = 0; m < 3; ++m) r.push_back({l.stack[m], bytes[m] * l.n_expert});
  }
  std::sort(r.begin(), r.end(), [](const Range& a, const Range& b) { return a.p < b.p; });
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  std::vector<Range> merged;
  for (const Range& x : r) {
    // GGUF pads tensors to its alignment (32 bytes by default): a gap under a page merges, so that two ranges
    // never share a page (registration is by page).
    if (!merged.empty() && x.p <= merged.back().p + merged.back().bytes + page) {
      merged.back().bytes = std::max<uint64_t>(merged.back().bytes, static_cast<uint64_t>(x.p - merged.back().p) + x.bytes);
    } else {
      merged.push_back(x);
    }
  }
  return merged;
}

namespace {

// What the kernel calls available (MemAvailable), 0 when unknown.
uint64_t memory_available() {
  uint64_t available = 0;
  if (FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      unsigned long long kb = 0;
      if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) available = uint64_t{kb} * 1024;
    }
    std::fclose(f);
  }
  return available;
}

}  // namespace

bool ExpertArena::on_tmpfs(const std::string& path) {
  struct statfs fs {};
  return statfs(path.c_str(), &fs) == 0 && static_cast<uint64_t>(fs.f_type) == TMPFS_MAGIC;
}

bool ExpertArena::fits_in_memory(bool in_shmem) const {
  if (!in_file_ || size_ == 0) return false;
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t resident = 0;
  std::vector<unsigned char> in_core;
  for (const Range& r : in_shmem ? ranges() : std::vector<Range>{}) {
    const auto a = reinterpret_cast<uintptr_t>(r.p) / page * page;
    const uint64_t len = reinterpret_cast<uintptr_t>(r.p) + r.bytes - a;
    in_core.assign((len + page - 1) / page, 0);
    if (mincore(reinterpret_cast<void*>(a), len, in_core.data()) != 0) continue;
    for (unsigned char c : in_core) resident += (c & 1u) != 0 ? page : 0;
  }
  const uint64_t room = memory_available() + resident;
  return size_ <= room / 10 * 9;
}

uint64_t ExpertArena::advise_willneed() const {
  if (!in_file_ || size_ == 0) return 0;
  // Only when the experts fit in what the kernel calls available: read-ahead of a file larger than RAM would push
  // out the pages the cache fill and the first tokens need.
  const uint64_t available = memory_available();
  if (available == 0 || size_ > available / 10 * 9) return 0;
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t asked = 0;
  for (const Range& r : ranges()) {
    const auto a = reinterpret_cast<uintptr_t>(r.p) / page * page;
    const uint64_t len = reinterpret_cast<uintptr_t>(r.p) + r.bytes - a;
    if (madvise(reinterpret_cast<void*>(a), len, MADV_WILLNEED) == 0) asked += r.bytes;
  }
  return asked;
}

ExpertArena::ExpertArena(const ModelWeights& weights, unsigned threads, const std::string& file,
                         const std::string& fingerprint)
    : file_(file) {
  const auto start = std::chrono::steady_clock::now();
  plan_layers(weights);
  if (size_ == 0) return;
  if (!file.empty()) {
    open_file(weights, threads, fingerprint);
  } else {
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      throw Error("cannot reserve " + std::to_string(size_ >> 20) + " MiB of RAM for the host copy of the experts: " +
                  std::strerror(errno));
    }
    map_ = base_ = static_cast<unsigned char*>(p);
    map_bytes_ = size_;
    (void)madvise(p, size_, MADV_HUGEPAGE);  // fewer page faults while filling; a hint only
    fill(weights, threads);
  }
  fill_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void ExpertArena::fill(const ModelWeights& weights, unsigned threads) {
  // Work items: one (layer, expert) each, taken in order by the threads.
  std::vector<std::pair<uint32_t, uint32_t>> items;
  for (uint32_t il = 0; il < layers_.size(); ++il) {
    for (uint32_t e = 0; e < layers_[il].n_expert; ++e) items.emplace_back(il, e);
  }
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i = next++; i < items.size(); i = next++) {
      const auto [il, e] = items[i];
      const strata_expert_weights src = weights.layers[il].experts.expert(e);
      const ExpertLayout& l = layers_[il].layout;
      unsigned char* dst = base_ + layers_[il].offset + uint64_t{e} * l.bytes;
      std::memcpy(dst + l.gate, src.gate, l.up - l.gate);
      std::memcpy(dst + l.up, src.up, l.down - l.up);
      std::memcpy(dst + l.down, src.down, l.bytes - l.down);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::max(1u, threads); ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

namespace {

constexpr uint64_t kHeaderBytes = 4096;
constexpr char kMagic[16] = "strata-arena";
constexpr uint32_t kArenaVersion = 1;
constexpr uint32_t kComplete = 0x600dda7a;

// The file's first page. Written with `complete` 0 before the fill and set once the data is in place.
struct ArenaHeader {
  char magic[16];
  uint32_t version;
  uint32_t complete;
  uint64_t data_bytes;
  char fingerprint[128];
};
static_assert(sizeof(ArenaHeader) <= kHeaderBytes);

class FileLock {
 public:
  explicit FileLock(int fd) : fd_(fd) { (void)flock(fd_, LOCK_EX); }
  ~FileLock() { (void)flock(fd_, LOCK_UN); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

}  // namespace

void ExpertArena::open_file(const ModelWeights& weights, unsigned threads, const std::string& fingerprint) {
  const std::filesystem::path folder = std::filesystem::path(file_).parent_path();
  struct statfs fs {};
  if (statfs(folder.empty() ? "." : folder.c_str(), &fs) != 0) {
    throw Error("experts.arena: cannot read the file system of " + folder.string() + ": " + std::strerror(errno));
  }
  if (static_cast<uint64_t>(fs.f_type) != TMPFS_MAGIC) {
    char type[32];
    std::snprintf(type, sizeof type, "0x%llx", static_cast<unsigned long long>(fs.f_type));
    throw Error("experts.arena: " + file_ + " is not on tmpfs (file system type " + type +
                "); page-locking a mapped file on a disk file system can hang the GPU driver: put it under /dev/shm, "
                "or leave experts.arena unset for private memory");
  }
  const int fd = open(file_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("experts.arena: cannot open " + file_ + ": " + std::strerror(errno));
  struct CloseFd {
    int fd;
    ~CloseFd() { close(fd); }
  } closer{fd};
  FileLock lock(fd);
  map_bytes_ = kHeaderBytes + size_;
  struct stat st {};
  if (fstat(fd, &st) != 0) throw Error("experts.arena: cannot stat " + file_ + ": " + std::strerror(errno));
  const bool right_size = static_cast<uint64_t>(st.st_size) == map_bytes_;
  if (!right_size && ftruncate(fd, static_cast<off_t>(map_bytes_)) != 0) {
    throw Error("experts.arena: cannot size " + file_ + " to " + std::to_string(map_bytes_ >> 20) +
                " MiB: " + std::strerror(errno) + " (is /dev/shm large enough? see `df -h /dev/shm`)");
  }
  void* p = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) throw Error("experts.arena: cannot map " + file_ + ": " + std::strerror(errno));
  map_ = static_cast<unsigned char*>(p);
  base_ = map_ + kHeaderBytes;
  ArenaHeader want{};
  std::memcpy(want.magic, kMagic, sizeof kMagic);
  want.version = kArenaVersion;
  want.data_bytes = size_;
  std::snprintf(want.fingerprint, sizeof want.fingerprint, "%s", fingerprint.c_str());
  ArenaHeader have{};
  std::memcpy(&have, map_, sizeof have);
  if (right_size && have.complete == kComplete && std::memcmp(have.magic, want.magic, sizeof want.magic) == 0 &&
      have.version == want.version && have.data_bytes == want.data_bytes &&
      std::memcmp(have.fingerprint, want.fingerprint, sizeof want.fingerprint) == 0) {
    filled_ = false;  // this model's experts, complete: map them as they are
    return;
  }
  // tmpfs hands out its pages as they are written: a file larger than the room left would take SIGBUS in the
  // middle of the fill. Reserve every page first, so that too small a /dev/shm is an error, not a crash.
  if (const int err = posix_fallocate(fd, 0, static_cast<off_t>(map_bytes_)); err != 0) {
    char free_gib[32];
    std::snprintf(free_gib, sizeof free_gib, "%.1f", static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_bsize) / 1073741824.0);
    throw Error("experts.arena: cannot reserve " + std::to_string(map_bytes_ >> 20) + " MiB for " + file_ + " (" +
                std::strerror(err) + "; its file system had " + free_gib +
                " GiB free): make /dev/shm larger (mount -o remount,size=<N>G /dev/shm) or free it, or leave "
                "experts.arena unset for private memory");
  }
  want.complete = 0;
  std::memcpy(map_, &want, sizeof want);
  fill(weights, threads);
  std::atomic_thread_fence(std::memory_order_release);
  want.complete = kComplete;
  std::memcpy(map_, &want, sizeof want);
}

ExpertArena::~ExpertArena() {
  if (map_ != nullptr) munmap(map_, map_bytes_);
}

}  // namespace strata::experts
