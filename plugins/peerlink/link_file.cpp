// The link file's layout and protocol (link_file.hpp; README.md draws the layout). Sequence numbers and flags are
// atomics in the mapping (std::atomic_ref, acquire/release); the arrays are plain memory ordered by them.
#include "link_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace strata::peerlink {

// ---- the file's fixed parts ---------------------------------------------------------------------------------

namespace file_layout {

// One role's state, one cache line. Written by the process holding the role (the heartbeat by its thread).
struct RoleBlock {
  int32_t pid;             // 0: nobody holds the role
  uint32_t serving;        // 1: its service answers the other's requests
  uint64_t start_ticks;    // the process's start time (/proc/PID/stat), so that a reused pid is not taken for it
  uint64_t generation;     // the file's generation when it took the role
  uint64_t heartbeat_ns;   // CLOCK_MONOTONIC, every heartbeat_ms
  uint64_t residency_seq;  // seqlock over its residency bitmap: odd while it is being written
  uint32_t published;      // 1 once it published a residency
  uint32_t reserved0;
  uint64_t reserved1[2];
};
static_assert(sizeof(RoleBlock) == 64);

// The first 256 bytes. Every version keeps magic, version, header_size and the role blocks' pid and start_ticks
// where they are, so that an engine of another version still sees who holds the file.
struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_size;
  uint64_t total_size;
  uint64_t generation;  // incremented by every open
  uint32_t n_layer, n_expert, n_embd, k_max, max_tokens, reserved0;
  char fingerprint[64];
  uint8_t reserved1[8];
  RoleBlock roles[2];
};
static_assert(offsetof(FileHeader, n_layer) == 32);
static_assert(offsetof(FileHeader, roles) == 128);
static_assert(sizeof(FileHeader) == 256);

// A request box's fixed part: the requester's cache line, then the server's, so that each side spins on a line
// the other writes once.
struct BoxHeader {
  uint64_t seq_sent;  // the requester's last request
  uint32_t layer, n_tok, k, n_experts;
  uint8_t reserved0[40];
  uint64_t seq_answered;  // the server's last answer (or drop); never decreases
  uint64_t dropped_upto;  // requests up to here were dropped unanswered: their await fails
  uint8_t reserved1[48];
};
static_assert(sizeof(BoxHeader) == 128);
static_assert(offsetof(BoxHeader, seq_answered) == 64);

}  // namespace file_layout

namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'A', 'T', 'A', 'L', 'K'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kAlign = 64;
constexpr uint64_t kMaxFileBytes = 16ull << 30;
constexpr uint64_t kMs = 1000000;  // ns
constexpr int kResidencyTries = 1000;

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t round_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

template <class T>
T load_acquire(T& v) {
  return std::atomic_ref<T>(v).load(std::memory_order_acquire);
}
template <class T>
T load_relaxed(T& v) {
  return std::atomic_ref<T>(v).load(std::memory_order_relaxed);
}
template <class T>
void store_release(T& v, T x) {
  std::atomic_ref<T>(v).store(x, std::memory_order_release);
}
template <class T>
void store_relaxed(T& v, T x) {
  std::atomic_ref<T>(v).store(x, std::memory_order_relaxed);
}

// ---- processes ----------------------------------------------------------------------------------------------

struct ProcessState {
  bool alive = false;
  uint64_t start_ticks = 0;  // 0: unknown
};

bool have_procfs() {
  static const bool have = ::access("/proc/self/stat", R_OK) == 0;
  return have;
}

// Whether `pid` is a running process (an exited one that was not reaped yet counts as gone), and its start time.
ProcessState process_state(int32_t pid) {
  ProcessState s;
  if (pid <= 0) return s;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return s;
  s.alive = true;  // kill's answer, unless /proc says more
  if (!have_procfs()) return s;
  char path[48];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ESRCH) s.alive = false;
    return s;
  }
  char buf[1024];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) {
    s.alive = false;  // it went away between open and read
    return s;
  }
  buf[n] = '\0';
  // "pid (comm) state ppid ...": the command may hold spaces and parentheses, the fields after its last ')' do not.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return s;
  ++p;
  for (int field = 3; *p != '\0'; ++field) {
    while (*p == ' ') ++p;
    if (field == 3 && (*p == 'Z' || *p == 'X' || *p == 'x')) s.alive = false;
    if (field == 22) {
      s.start_ticks = std::strtoull(p, nullptr, 10);
      break;
    }
    while (*p != '\0' && *p != ' ') ++p;
  }
  return s;
}

// The process holding a role is alive: it runs, and it is the one that took the role (not a reuse of its pid).
bool holder_alive(int32_t pid, uint64_t start_ticks) {
  const ProcessState s = process_state(pid);
  if (!s.alive) return false;
  return start_ticks == 0 || s.start_ticks == 0 || s.start_ticks == start_ticks;
}

// ---- the layout ---------------------------------------------------------------------------------------------

struct Dimensions {
  uint32_t n_layer, n_expert, n_embd, k_max, max_tokens;
};

using file_layout::Layout;

// The layout of dimensions d; false when a dimension is 0 or beyond its limit, or the file would be too large (`why`
// says which). The limits keep every product below 2^63.
bool layout_of(const Dimensions& d, Layout* out, std::string* why) {
  const struct {
    const char* name;
    uint32_t value, limit;
  } checks[] = {{"n_layer", d.n_layer, 1u << 16}, {"n_expert", d.n_expert, 1u << 16}, {"n_embd", d.n_embd, 1u << 20},
                {"k_max", d.k_max, 1u << 10},     {"max_tokens", d.max_tokens, 1u << 20}};
  for (const auto& c : checks) {
    if (c.value == 0 || c.value > c.limit) {
      if (why != nullptr) {
        *why = std::string(c.name) + " " + std::to_string(c.value) + " is outside 1.." + std::to_string(c.limit);
      }
      return false;
    }
  }
  Layout l;
  const uint64_t bits = uint64_t{d.n_layer} * d.n_expert;
  l.residency_bytes = (bits + 7) / 8;
  l.residency_words = (l.residency_bytes + 7) / 8;
  const uint64_t residency_stride = round_up(l.residency_words * 8, kAlign);
  l.residency[0] = sizeof(file_layout::FileHeader);
  l.residency[1] = l.residency[0] + residency_stride;
  const uint64_t tokens = d.max_tokens, pairs = uint64_t{d.k_max} * d.max_tokens;
  l.experts = sizeof(file_layout::BoxHeader);
  l.x = round_up(l.experts + 4ull * d.n_expert, kAlign);
  l.ids = round_up(l.x + 4ull * d.n_embd * tokens, kAlign);
  l.weights = round_up(l.ids + 4ull * pairs, kAlign);
  l.rows = round_up(l.weights + 4ull * pairs, kAlign);
  l.served = round_up(l.rows + 4ull * d.n_embd * pairs, kAlign);
  const uint64_t box_size = round_up(l.served + d.n_expert, kAlign);
  l.box[0] = l.residency[1] + residency_stride;
  l.box[1] = l.box[0] + box_size;
  l.total = l.box[1] + box_size;
  if (l.total > kMaxFileBytes) {
    if (why != nullptr) {
      *why = "the link file would take " + std::to_string(l.total) + " bytes, more than " +
             std::to_string(kMaxFileBytes) + " (n_embd x k_max x max_tokens rows per box)";
    }
    return false;
  }
  *out = l;
  return true;
}

std::string printable(const char* s, size_t max) {
  std::string out;
  for (size_t i = 0; i < max && s[i] != '\0'; ++i) out += (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
  return out;
}

std::string geometry_text(const Dimensions& d, const std::string& fingerprint) {
  return "n_layer " + std::to_string(d.n_layer) + ", n_expert " + std::to_string(d.n_expert) + ", n_embd " +
         std::to_string(d.n_embd) + ", k_max " + std::to_string(d.k_max) + ", max_tokens " +
         std::to_string(d.max_tokens) + ", fingerprint '" + fingerprint + "'";
}

// An exclusive flock for the time the header is checked and a role taken.
class FileLock {
 public:
  explicit FileLock(int fd) : fd_(fd) {
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) throw LinkError(LinkError::Kind::Unavailable, std::string("flock: ") + std::strerror(errno));
    }
  }
  ~FileLock() { ::flock(fd_, LOCK_UN); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

// Backing off while waiting on the other process: spin first (answers often come within microseconds), then
// yield, then sleep in short slices once a millisecond has gone.
void back_off(uint64_t spin, uint64_t waited_ns) {
  if (spin < 4096) {
    cpu_relax();
  } else if (waited_ns < kMs) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace

// ---- opening ------------------------------------------------------------------------------------------------

LinkFile::LinkFile(const LinkSettings& settings, const LinkGeometry& geometry,
                   const std::function<void(const std::string&)>& notice)
    : settings_(settings) {
  if (settings.role > 1) {
    throw LinkError(LinkError::Kind::InvalidArgument,
                    "peerlink: role " + std::to_string(settings.role) + ": a link has roles 0 and 1");
  }
  mine_ = settings.role;
  other_ = 1 - settings.role;
  try {
    open_and_attach(geometry, notice);
    heartbeat_ = std::thread(&LinkFile::heartbeat_loop, this);
  } catch (...) {
    leave_role();
    release_file();
    throw;
  }
}

LinkFile::~LinkFile() {
  {
    std::lock_guard<std::mutex> lock(heartbeat_mutex_);
    heartbeat_stop_ = true;
  }
  heartbeat_wake_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  leave_role();
  release_file();
}

void LinkFile::open_and_attach(const LinkGeometry& geometry, const std::function<void(const std::string&)>& notice) {
  const std::string& path = settings_.path;
  const Dimensions want{geometry.n_layer, geometry.n_expert, geometry.n_embd, geometry.k_max, geometry.max_tokens};
  if (geometry.fingerprint.size() >= sizeof(FileHeader::fingerprint) ||
      geometry.fingerprint.find('\0') != std::string::npos) {
    throw LinkError(LinkError::Kind::InvalidArgument,
                    "peerlink: the model's fingerprint '" + geometry.fingerprint + "' is " +
                        std::to_string(geometry.fingerprint.size()) + " bytes: it must be shorter than 64, without NUL");
  }
  Layout layout;
  std::string why;
  if (!layout_of(want, &layout, &why)) {
    throw LinkError(LinkError::Kind::InvalidArgument, "peerlink: geometry: " + why);
  }
  const std::string want_text = geometry_text(want, geometry.fingerprint);

  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    const int e = errno;
    const bool bad_path = e == ENOENT || e == ENOTDIR || e == EACCES || e == EROFS || e == EISDIR || e == ENAMETOOLONG;
    throw LinkError(bad_path ? LinkError::Kind::InvalidArgument : LinkError::Kind::Unavailable,
                    "peerlink: cannot open the link file " + path + " (option file): " + std::strerror(e) +
                        ": give a path in a writable folder, normally /dev/shm");
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    throw LinkError(LinkError::Kind::InvalidArgument,
                    "peerlink: " + path + " is not a regular file: give the link file a path of its own, such as "
                                          "/dev/shm/NAME.link");
  }
  const FileLock lock(fd_);
  if (::fstat(fd_, &st) != 0) {  // again: its size may have changed while we waited for the lock
    throw LinkError(LinkError::Kind::Unavailable, "peerlink: fstat " + path + ": " + std::strerror(errno));
  }
  const uint64_t file_bytes = static_cast<uint64_t>(st.st_size);

  // What the file holds now, read with pread so that a short or corrupt file is never touched through a mapping.
  FileHeader old{};
  const bool have_header =
      file_bytes >= sizeof old && ::pread(fd_, &old, sizeof old, 0) == static_cast<ssize_t>(sizeof old);
  const bool link_file = have_header && std::memcmp(old.magic, kMagic, sizeof kMagic) == 0;
  // Role blocks sit at the same place in every version; in anything else their bytes mean nothing.
  const bool roles_readable = link_file;
  const int32_t self = static_cast<int32_t>(::getpid());
  int32_t live[2] = {0, 0};
  for (uint32_t r = 0; r < 2 && roles_readable; ++r) {
    if (old.roles[r].pid != 0 && holder_alive(old.roles[r].pid, old.roles[r].start_ticks)) live[r] = old.roles[r].pid;
  }
  if (live[mine_] != 0 && live[mine_] != self) {
    throw LinkError(LinkError::Kind::InvalidArgument,
                    "peerlink: role " + std::to_string(mine_) + " of " + path + " is held by pid " +
                        std::to_string(live[mine_]) + ": give the other role or another file");
  }

  // Why the file cannot be used as it is (empty: it can).
  const Dimensions had{old.n_layer, old.n_expert, old.n_embd, old.k_max, old.max_tokens};
  const std::string had_fingerprint = printable(old.fingerprint, sizeof old.fingerprint);
  std::string mismatch, fix;
  if (file_bytes == 0) {
    mismatch = "a new file";
  } else if (!have_header) {
    mismatch = "only " + std::to_string(file_bytes) + " bytes, less than a header";
  } else if (!link_file) {
    mismatch = "no STRATALK magic: not a link file";
  } else if (old.version != kVersion || old.header_size != sizeof(FileHeader)) {
    mismatch = "layout version " + std::to_string(old.version) + " with a " + std::to_string(old.header_size) +
               "-byte header, where this plugin has version " + std::to_string(kVersion) + " with " +
               std::to_string(sizeof(FileHeader));
    fix = "run the same Strata build on both engines, or give this one another file";
  } else if (std::memcmp(&had, &want, sizeof want) != 0 ||
             std::strncmp(old.fingerprint, geometry.fingerprint.c_str(), sizeof old.fingerprint) != 0) {
    mismatch = "geometry " + geometry_text(had, had_fingerprint) + ", where this engine has " + want_text;
    fix = "launch both engines with the same model and limits, or give this one another file";
  } else if (old.total_size != layout.total || file_bytes < layout.total) {
    mismatch = "a size of " + std::to_string(file_bytes) + " bytes where its header says " +
               std::to_string(old.total_size) + " and the geometry needs " + std::to_string(layout.total);
    fix = "stop that engine, or give this one another file";
  }

  const bool lay_out = !mismatch.empty();
  if (lay_out) {
    for (uint32_t r = 0; r < 2; ++r) {
      if (live[r] == 0) continue;
      throw LinkError(LinkError::Kind::InvalidArgument,
                      "peerlink: " + path + " is held by pid " + std::to_string(live[r]) + " (role " +
                          std::to_string(r) + ") with " + mismatch + ": " + fix);
    }
    if (::ftruncate(fd_, 0) != 0 || ::ftruncate(fd_, static_cast<off_t>(layout.total)) != 0) {
      throw LinkError(LinkError::Kind::Unavailable, "peerlink: cannot size " + path + ": " + std::strerror(errno));
    }
    // Reserve the pages now: on a full tmpfs a later write through the mapping would be a SIGBUS.
    const int e = ::posix_fallocate(fd_, 0, static_cast<off_t>(layout.total));
    if (e == ENOSPC || e == EFBIG) {
      throw LinkError(LinkError::Kind::OutOfMemory,
                      "peerlink: no room for the " + std::to_string(layout.total) + "-byte link file " + path +
                          ": free some of its file system, or lower max_tokens");
    }
  }

  void* mapped = ::mmap(nullptr, layout.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (mapped == MAP_FAILED) {
    throw LinkError(LinkError::Kind::OutOfMemory,
                    "peerlink: cannot map " + std::to_string(layout.total) + " bytes of " + path + ": " +
                        std::strerror(errno));
  }
  base_ = static_cast<uint8_t*>(mapped);
  size_ = layout.total;
  n_layer_ = want.n_layer;
  n_expert_ = want.n_expert;
  n_embd_ = want.n_embd;
  k_max_ = want.k_max;
  max_tokens_ = want.max_tokens;
  layout_ = layout;

  if (lay_out) {
    FileHeader& h = header();  // zeroed by the truncation
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.version = kVersion;
    h.header_size = sizeof(FileHeader);
    h.total_size = layout.total;
    // Generations keep counting up across layouts of a readable header of this version.
    h.generation = link_file && old.version == kVersion ? old.generation : 0;
    h.n_layer = want.n_layer;
    h.n_expert = want.n_expert;
    h.n_embd = want.n_embd;
    h.k_max = want.k_max;
    h.max_tokens = want.max_tokens;
    std::memcpy(h.fingerprint, geometry.fingerprint.data(), geometry.fingerprint.size());
    if (notice) {
      notice((file_bytes == 0 ? "created " + path
                              : "laid out " + path + " afresh, no live engine holding it (it had " + mismatch + ")") +
             ": " + std::to_string(layout.total) + " bytes for " + want_text);
    }
  }
  take_role();
}

// Takes this engine's role so that nothing of a previous holder survives. Our box: a previous holder's pending
// request is withdrawn (seq_sent back to seq_answered) and our numbers continue above every number it used, so a
// late answer to it can never pass for an answer to ours. The other's box: its request to a previous holder is
// dropped (dropped_upto before seq_answered), so its await sees a failure, never an answer. The pid goes last:
// the role is visible only once all of this is done. Runs under the file lock.
void LinkFile::take_role() {
  RoleBlock& me = role_block(mine_);
  store_release(me.serving, 0u);
  store_release(me.published, 0u);

  BoxHeader& out = box(mine_);
  const uint64_t sent = load_acquire(out.seq_sent), answered = load_acquire(out.seq_answered);
  next_seq_ = std::max({sent, answered, load_acquire(out.dropped_upto)});
  if (sent > answered) store_release(out.seq_sent, answered);

  BoxHeader& in = box(other_);
  const uint64_t pending = load_acquire(in.seq_sent);
  if (pending > load_acquire(in.seq_answered)) drop_request(other_, pending);

  generation_ = std::atomic_ref<uint64_t>(header().generation).fetch_add(1, std::memory_order_acq_rel) + 1;
  store_release(me.start_ticks, process_state(static_cast<int32_t>(::getpid())).start_ticks);
  store_release(me.generation, generation_);
  store_release(me.heartbeat_ns, now_ns());
  store_release(me.pid, static_cast<int32_t>(::getpid()));
  attached_ = true;
}

void LinkFile::leave_role() {
  if (base_ == nullptr || !attached_) return;
  attached_ = false;
  RoleBlock& me = role_block(mine_);
  if (load_acquire(me.pid) != static_cast<int32_t>(::getpid()) || load_acquire(me.generation) != generation_) return;
  store_release(me.serving, 0u);
  store_release(me.published, 0u);
  store_release(me.pid, 0);
}

void LinkFile::release_file() {
  if (base_ != nullptr) ::munmap(base_, size_);
  base_ = nullptr;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void LinkFile::heartbeat_loop() {
  std::unique_lock<std::mutex> lock(heartbeat_mutex_);
  while (!heartbeat_stop_) {
    store_release(role_block(mine_).heartbeat_ns, now_ns());
    heartbeat_wake_.wait_for(lock, std::chrono::milliseconds(settings_.heartbeat_ms), [this] { return heartbeat_stop_; });
  }
}

// ---- the mapping --------------------------------------------------------------------------------------------

template <class T>
T* LinkFile::at(uint64_t offset) const {
  return static_cast<T*>(static_cast<void*>(base_ + offset));
}
file_layout::FileHeader& LinkFile::header() const { return *at<FileHeader>(0); }
file_layout::RoleBlock& LinkFile::role_block(uint32_t role) const { return header().roles[role]; }
file_layout::BoxHeader& LinkFile::box(uint32_t role) const { return *at<BoxHeader>(layout_.box[role]); }

RequestView LinkFile::view_of(uint32_t role) const {
  BoxHeader& b = box(role);
  const uint64_t o = layout_.box[role];
  RequestView v;
  v.layer = load_relaxed(b.layer);
  v.n_tok = load_relaxed(b.n_tok);
  v.k = load_relaxed(b.k);
  v.n_experts = load_relaxed(b.n_experts);
  v.experts = at<uint32_t>(o + layout_.experts);
  v.x = at<float>(o + layout_.x);
  v.ids = at<int32_t>(o + layout_.ids);
  v.weights = at<float>(o + layout_.weights);
  v.rows = at<float>(o + layout_.rows);
  v.served = at<uint8_t>(o + layout_.served);
  return v;
}

// ---- residency ----------------------------------------------------------------------------------------------

void LinkFile::set_serving(bool on) { store_release(role_block(mine_).serving, on ? 1u : 0u); }

// The seqlock's writer: the sequence goes odd, a release fence keeps the words' stores after it, and the even
// store releases them. The words are relaxed atomics so that a reader racing a write reads no torn word.
void LinkFile::publish(const uint8_t* bits) {
  if (bits == nullptr) throw LinkError(LinkError::Kind::InvalidArgument, "peerlink: publish: bits is NULL");
  std::lock_guard<std::mutex> lock(publish_mutex_);
  RoleBlock& me = role_block(mine_);
  uint64_t* words = at<uint64_t>(layout_.residency[mine_]);
  const uint64_t seq = load_relaxed(me.residency_seq);
  store_relaxed(me.residency_seq, seq + 1);
  std::atomic_thread_fence(std::memory_order_release);
  for (uint64_t i = 0; i < layout_.residency_words; ++i) {
    uint64_t w = 0;
    std::memcpy(&w, bits + i * 8, std::min<uint64_t>(8, layout_.residency_bytes - i * 8));
    store_relaxed(words[i], w);
  }
  store_release(me.residency_seq, seq + 2);
  store_release(me.published, 1u);
}

// The seqlock's reader: an even sequence before the words, the same one after them (an acquire fence between);
// kResidencyTries tries at most.
bool LinkFile::read_residency(uint32_t role, std::vector<uint64_t>* words) const {
  RoleBlock& r = role_block(role);
  uint64_t* src = at<uint64_t>(layout_.residency[role]);
  words->resize(layout_.residency_words);
  for (int attempt = 0; attempt < kResidencyTries; ++attempt) {
    const uint64_t before = load_acquire(r.residency_seq);
    if ((before & 1) == 0) {
      for (uint64_t i = 0; i < layout_.residency_words; ++i) (*words)[i] = load_relaxed(src[i]);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (load_relaxed(r.residency_seq) == before) return true;
    }
    // A writer preempted mid-write keeps the sequence odd for a whole time slice: after a few spins, let it run.
    if (attempt < 64) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
  return false;
}

bool LinkFile::peer_residency(uint8_t* bits) const {
  if (bits == nullptr) return false;
  RoleBlock& o = role_block(other_);
  const int32_t pid = load_acquire(o.pid);
  if (pid == 0 || load_acquire(o.published) == 0) return false;
  if (!peer_alive(pid, load_acquire(o.generation), load_acquire(o.start_ticks))) return false;
  std::vector<uint64_t> words;
  if (!read_residency(other_, &words)) return false;
  std::memcpy(bits, words.data(), layout_.residency_bytes);
  return true;
}

// ---- liveness -----------------------------------------------------------------------------------------------

bool LinkFile::peer_alive(int32_t pid, uint64_t generation, uint64_t start_ticks) const {
  if (pid == 0) return false;
  const uint64_t now = now_ns();
  std::lock_guard<std::mutex> lock(liveness_mutex_);
  if (pid != checked_pid_ || generation != checked_generation_ || now - checked_ns_ >= kMs) {
    checked_alive_ = holder_alive(pid, start_ticks);
    checked_pid_ = pid;
    checked_generation_ = generation;
    checked_ns_ = now;
  }
  return checked_alive_;
}

bool LinkFile::peer_ready() const {
  RoleBlock& o = role_block(other_);
  const int32_t pid = load_acquire(o.pid);
  if (pid == 0 || load_acquire(o.serving) == 0) return false;
  const uint64_t beat = load_acquire(o.heartbeat_ns), now = now_ns();
  if (beat < now && now - beat > uint64_t{settings_.stale_ms} * kMs) return false;
  BoxHeader& out = box(mine_);
  if (load_acquire(out.seq_answered) < load_acquire(out.seq_sent)) return false;
  return peer_alive(pid, load_acquire(o.generation), load_acquire(o.start_ticks));
}

// ---- the requester ------------------------------------------------------------------------------------------

RequestView LinkFile::outbox() const { return view_of(mine_); }

void LinkFile::send(uint32_t layer, uint32_t n_tok, uint32_t k, uint32_t n_experts) {
  if (layer >= n_layer_ || n_tok > max_tokens_ || k > k_max_ || n_experts > n_expert_) {
    throw LinkError(LinkError::Kind::InvalidArgument,
                    "peerlink: send: layer " + std::to_string(layer) + ", n_tok " + std::to_string(n_tok) + ", k " +
                        std::to_string(k) + ", n_experts " + std::to_string(n_experts) +
                        " exceed the geometry (layer < " + std::to_string(n_layer_) + ", n_tok <= " +
                        std::to_string(max_tokens_) + ", k <= " + std::to_string(k_max_) + ", n_experts <= " +
                        std::to_string(n_expert_) + ")");
  }
  BoxHeader& out = box(mine_);
  if (load_acquire(out.seq_answered) < load_relaxed(out.seq_sent)) {
    throw LinkError(LinkError::Kind::Unavailable,
                    "peerlink: send: the other engine has not answered the previous request yet (peer_ready says "
                    "when it has)");
  }
  store_relaxed(out.layer, layer);
  store_relaxed(out.n_tok, n_tok);
  store_relaxed(out.k, k);
  store_relaxed(out.n_experts, n_experts);
  RoleBlock& o = role_block(other_);
  target_pid_ = load_acquire(o.pid);
  target_generation_ = load_acquire(o.generation);
  awaited_seq_ = ++next_seq_;
  send_ns_ = now_ns();
  store_release(out.seq_sent, awaited_seq_);
  awaiting_ = true;
}

bool LinkFile::await_answer() {
  if (!awaiting_) return false;
  awaiting_ = false;
  BoxHeader& out = box(mine_);
  RoleBlock& o = role_block(other_);
  const uint64_t deadline = send_ns_ + uint64_t{settings_.deadline_ms} * kMs;
  uint64_t now = now_ns(), next_check = 0;  // the other's state: at once, then every millisecond
  for (uint64_t spin = 0;; ++spin) {
    if (load_acquire(out.seq_answered) >= awaited_seq_) {
      if (load_acquire(out.dropped_upto) >= awaited_seq_) {  // dropped by a new holder of the other role
        peer_gone_.fetch_add(1, std::memory_order_relaxed);
        return false;
      }
      answered_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    if (spin >= 4096 || spin % 64 == 0) now = now_ns();
    if (now >= deadline) {
      timed_out_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    if (now >= next_check) {
      const int32_t pid = load_acquire(o.pid);
      if (pid != target_pid_ || load_acquire(o.generation) != target_generation_ || load_acquire(o.serving) == 0 ||
          !peer_alive(pid, target_generation_, load_acquire(o.start_ticks))) {
        peer_gone_.fetch_add(1, std::memory_order_relaxed);
        return false;
      }
      next_check = now + kMs;
    }
    back_off(spin, now - send_ns_);
  }
}

// ---- the server ---------------------------------------------------------------------------------------------

void LinkFile::drop_request(uint32_t requester, uint64_t seq) {
  BoxHeader& b = box(requester);
  store_release(b.dropped_upto, std::max(load_relaxed(b.dropped_upto), seq));
  store_release(b.seq_answered, std::max(load_relaxed(b.seq_answered), seq));
}

bool LinkFile::next_request(uint32_t wait_us, RequestView* out) {
  if (out == nullptr) return false;
  BoxHeader& in = box(other_);
  RoleBlock& me = role_block(mine_);
  const uint64_t start = now_ns(), until = start + uint64_t{wait_us} * 1000;
  uint64_t now = start;
  for (uint64_t spin = 0;; ++spin) {
    const uint64_t seq = load_acquire(in.seq_sent);
    if (load_relaxed(me.serving) != 0 && seq > load_relaxed(in.seq_answered)) {
      RequestView v = view_of(other_);
      bool well_formed = v.layer < n_layer_ && v.n_tok <= max_tokens_ && v.k <= k_max_ && v.n_experts <= n_expert_;
      for (uint32_t i = 0; well_formed && i < v.n_experts; ++i) {
        well_formed = v.experts[i] < n_expert_ && (i == 0 || v.experts[i - 1] < v.experts[i]);
      }
      if (well_formed) {
        taken_seq_ = seq;
        *out = v;
        return true;
      }
      drop_request(other_, seq);  // its await fails at once rather than at the deadline
      malformed_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (spin >= 4096 || spin % 64 == 0) now = now_ns();
    if (now >= until) return false;
    back_off(spin, now - start);
  }
}

void LinkFile::answer() {
  if (taken_seq_ == 0) return;
  BoxHeader& in = box(other_);
  store_release(in.seq_answered, std::max(load_relaxed(in.seq_answered), taken_seq_));
  taken_seq_ = 0;
  served_.fetch_add(1, std::memory_order_relaxed);
}

// ---- reporting ----------------------------------------------------------------------------------------------

LinkCounts LinkFile::counts() const {
  return {answered_.load(std::memory_order_relaxed), timed_out_.load(std::memory_order_relaxed),
          peer_gone_.load(std::memory_order_relaxed), served_.load(std::memory_order_relaxed),
          malformed_.load(std::memory_order_relaxed)};
}

std::string LinkFile::describe() const {
  std::string s = "peerlink: " + settings_.path + " role " + std::to_string(mine_) + ", generation " +
                  std::to_string(generation_) + ", deadline " + std::to_string(settings_.deadline_ms) +
                  " ms; the other engine: ";
  RoleBlock& o = role_block(other_);
  const int32_t pid = load_acquire(o.pid);
  const uint64_t generation = load_acquire(o.generation);
  if (pid == 0) {
    s += "not attached";
  } else if (!peer_alive(pid, generation, load_acquire(o.start_ticks))) {
    s += "pid " + std::to_string(pid) + " gone without leaving";
  } else {
    s += "pid " + std::to_string(pid) + " (generation " + std::to_string(generation) + "), ";
    const uint64_t beat = load_acquire(o.heartbeat_ns), now = now_ns();
    const uint64_t age_ms = beat < now ? (now - beat) / kMs : 0;
    if (age_ms > settings_.stale_ms) s += "stalled (heartbeat " + std::to_string(age_ms) + " ms ago), ";
    s += load_acquire(o.serving) != 0 ? "serving" : "not serving";
    std::vector<uint64_t> words;
    if (load_acquire(o.published) == 0) {
      s += ", no residency published";
    } else if (read_residency(other_, &words)) {
      uint64_t experts = 0;
      for (uint64_t w : words) experts += static_cast<uint64_t>(__builtin_popcountll(w));
      s += ", residency published (" + std::to_string(experts) + " experts)";
    } else {
      s += ", residency being rewritten";
    }
  }
  const LinkCounts c = counts();
  s += "; requests: " + std::to_string(c.answered) + " answered, " + std::to_string(c.timed_out) + " timed out, " +
       std::to_string(c.peer_gone) + " lost to the other leaving; " + std::to_string(c.served) + " of the other's served";
  if (c.malformed != 0) s += ", " + std::to_string(c.malformed) + " malformed dropped";
  return s;
}

}  // namespace strata::peerlink
