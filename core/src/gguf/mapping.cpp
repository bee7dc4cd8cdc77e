#include "mapping.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "strata/gguf.hpp"

namespace strata::gguf::detail {
namespace {

[[noreturn]] void fail(const std::string& path, const char* what, int err) {
  throw IoError(path + ": cannot " + what + ": " + std::strerror(err));
}

constexpr uint64_t kHugePage = uint64_t{2} << 20;

// Reserves size + 2 MiB of address space, maps the file at its first 2 MiB boundary and gives back the rest.
// MAP_FAILED (errno set) when either mmap fails.
void* map_aligned(int fd, uint64_t size) {
  void* reserved = ::mmap(nullptr, size + kHugePage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserved == MAP_FAILED) return MAP_FAILED;
  const auto start = reinterpret_cast<uintptr_t>(reserved);
  const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  void* p = ::mmap(reinterpret_cast<void*>(aligned), size, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    ::munmap(reserved, size + kHugePage);
    errno = err;
    return MAP_FAILED;
  }
  // The reservation's ends around the file's pages (the file's mapping replaced its middle).
  if (aligned > start) ::munmap(reserved, aligned - start);
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t end = (aligned + size + page - 1) / page * page;
  if (start + size + kHugePage > end) ::munmap(reinterpret_cast<void*>(end), start + size + kHugePage - end);
  return p;
}

}  // namespace

Mapping::Mapping(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, "open", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail(path, "stat", err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw IoError(path + ": not a regular file");
  }
  size_ = static_cast<uint64_t>(st.st_size);
  // An empty file cannot be mapped; the parser reports it as truncated.
  if (size_ > 0) {
    // MAP_SHARED read-only: pages come straight from the page cache, never copied, and the mapping costs
    // nothing until a tensor is read. Placed at a 2 MiB boundary, so that an address and its file offset agree
    // modulo 2 MiB: only then can the kernel map the file's large folios (or collapsed tmpfs pages) with one
    // page-table entry per 2 MiB (experts.huge_pages). Linux 6.18 places an ext4 file's mapping so by itself;
    // this makes it so on every file system and kernel.
    void* p = map_aligned(fd, size_);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      fail(path, "mmap", err);
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping keeps the file open
}

Mapping::Mapping(Mapping&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Mapping::~Mapping() { release(); }

void Mapping::release() noexcept {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace strata::gguf::detail
