// peerlink's link file: two engine processes, one role each (0 and 1), sharing one small mapped file. It holds a
// header (magic, version, sizes, the geometry both engines agreed on, a generation counter), per role its process,
// heartbeat, serving flag and residency bitmap under a seqlock, and one request box per direction. This class owns
// the file's layout and its protocol and nothing of the plugin ABI, so tests can drive it directly (README.md has the
// layout). One instance holds one role; its heartbeat thread runs from construction to destruction.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace strata::peerlink {

// The file's fixed parts, as they sit in the mapping (link_file.cpp).
namespace file_layout {
struct FileHeader;
struct RoleBlock;
struct BoxHeader;
// Where everything lies in a file of given dimensions (offsets in bytes from the file's start; a box's arrays from
// the box's start).
struct Layout {
  uint64_t residency_bytes = 0, residency_words = 0;
  uint64_t residency[2] = {0, 0}, box[2] = {0, 0};
  uint64_t experts = 0, x = 0, ids = 0, weights = 0, rows = 0, served = 0;  // within a box
  uint64_t total = 0;
};
}  // namespace file_layout

// What both engines must agree on; the file's layout follows from it.
struct LinkGeometry {
  uint32_t n_layer = 0, n_expert = 0, n_embd = 0, k_max = 0, max_tokens = 0;
  std::string fingerprint;  // the model's; shorter than 64 bytes
};

struct LinkSettings {
  std::string path;
  uint32_t role = 0;            // 0 or 1
  uint32_t deadline_ms = 50;    // await_answer gives up this long after send
  uint32_t stale_ms = 1000;     // an older heartbeat means the other engine stalled
  uint32_t heartbeat_ms = 10;
};

// A refusal or failure, with what the plugin turns it into.
class LinkError : public std::runtime_error {
 public:
  enum class Kind { InvalidArgument, Unavailable, OutOfMemory };
  LinkError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// One request, as pointers into the mapping (valid while the LinkFile lives).
struct RequestView {
  uint32_t layer = 0, n_tok = 0, k = 0, n_experts = 0;
  uint32_t* experts = nullptr;  // [n_experts], ascending
  float* x = nullptr;           // [n_embd, n_tok]
  int32_t* ids = nullptr;       // [k, n_tok]
  float* weights = nullptr;     // [k, n_tok]
  float* rows = nullptr;        // [n_embd, k * n_tok]
  uint8_t* served = nullptr;    // [n_experts]
};

// How this engine's requests ended, and how many of the other's it answered.
struct LinkCounts {
  uint64_t answered = 0;    // await_answer returned 1
  uint64_t timed_out = 0;   // the deadline passed
  uint64_t peer_gone = 0;   // the other died, detached, stopped serving or was replaced first
  uint64_t served = 0;      // the other's requests this engine answered
  uint64_t malformed = 0;   // the other's requests refused unread (sizes out of range)
};

class LinkFile {
 public:
  // Maps the file (creating it, or laying it out afresh when no live process holds a role of a different layout),
  // takes `settings.role` and starts the heartbeat. `notice` gets one line when the file was laid out afresh.
  // Throws LinkError naming the problem and the fix: the role is held by a live process, or a live engine holds the
  // other role with another layout version, geometry or fingerprint.
  LinkFile(const LinkSettings& settings, const LinkGeometry& geometry,
           const std::function<void(const std::string&)>& notice);
  ~LinkFile();  // leaves the role: pid 0, not serving; stops the heartbeat; unmaps
  LinkFile(const LinkFile&) = delete;
  LinkFile& operator=(const LinkFile&) = delete;

  uint64_t generation() const { return generation_; }  // the file's generation when this engine took its role
  uint64_t file_size() const { return size_; }

  void set_serving(bool on);
  // Publishes this engine's residency: n_layer x n_expert bits, layer-major (bit e % 8 of byte (l n_expert + e) / 8).
  void publish(const uint8_t* bits);
  // The other engine's residency, consistent under its seqlock; false (bits untouched) when it is not attached,
  // not alive, never published, or kept rewriting it through every try.
  bool peer_residency(uint8_t* bits) const;
  // The other is attached, alive, heartbeat fresh, serving, and has answered (or dropped) every request of ours.
  bool peer_ready() const;

  // The requester's side.
  RequestView outbox() const;
  // Throws LinkError: sizes beyond the geometry (InvalidArgument), the previous request still unanswered
  // (Unavailable).
  void send(uint32_t layer, uint32_t n_tok, uint32_t k, uint32_t n_experts);
  // true once the last sent request is answered; false at the deadline, or as soon as the other dies, detaches,
  // stops serving or is replaced (checked every millisecond), or when nothing was sent.
  bool await_answer();

  // The server's side: waits up to wait_us for the other's request; false when none came or this engine is not
  // serving. answer() marks the request last returned answered.
  bool next_request(uint32_t wait_us, RequestView* out);
  void answer();

  std::string describe() const;
  LinkCounts counts() const;

 private:
  using FileHeader = file_layout::FileHeader;
  using RoleBlock = file_layout::RoleBlock;
  using BoxHeader = file_layout::BoxHeader;

  void open_and_attach(const LinkGeometry& geometry, const std::function<void(const std::string&)>& notice);
  void take_role();
  void leave_role();
  void release_file();
  void heartbeat_loop();

  template <class T>
  T* at(uint64_t offset) const;
  FileHeader& header() const;
  RoleBlock& role_block(uint32_t role) const;
  BoxHeader& box(uint32_t role) const;
  RequestView view_of(uint32_t role) const;
  bool read_residency(uint32_t role, std::vector<uint64_t>* words) const;
  bool peer_alive(int32_t pid, uint64_t generation, uint64_t start_ticks) const;
  void drop_request(uint32_t requester, uint64_t seq);

  LinkSettings settings_;
  uint32_t mine_ = 0, other_ = 1;
  int fd_ = -1;
  uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  uint64_t generation_ = 0;
  bool attached_ = false;  // this instance took its role (and leaves it on destruction)
  // Offsets, from the geometry (layout_of in link_file.cpp).
  uint32_t n_layer_ = 0, n_expert_ = 0, n_embd_ = 0, k_max_ = 0, max_tokens_ = 0;
  file_layout::Layout layout_;  // of the mapped file

  // The requester (one thread at a time): the last request's sequence number and whom it was sent to.
  uint64_t next_seq_ = 0, awaited_seq_ = 0;
  uint64_t send_ns_ = 0, target_generation_ = 0;
  int32_t target_pid_ = 0;
  bool awaiting_ = false;
  // The server (one thread at a time): the request last handed out, 0 when none.
  uint64_t taken_seq_ = 0;

  mutable std::atomic<uint64_t> answered_{0}, timed_out_{0}, peer_gone_{0}, served_{0}, malformed_{0};
  std::mutex publish_mutex_;
  // Whether the other's process lives is asked of the kernel at most once a millisecond.
  mutable std::mutex liveness_mutex_;
  mutable int32_t checked_pid_ = 0;
  mutable uint64_t checked_generation_ = 0, checked_ns_ = 0;
  mutable bool checked_alive_ = false;

  std::mutex heartbeat_mutex_;
  std::condition_variable heartbeat_wake_;
  bool heartbeat_stop_ = false;
  std::thread heartbeat_;
};

}  // namespace strata::peerlink
