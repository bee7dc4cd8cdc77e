#include "strata/serve/peer_watch.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>

namespace strata::serve {
namespace {

// The numeric address and the port of a socket address (IPv4 or IPv6); port -1 for other families.
int address_of(const sockaddr_storage& a, std::string* text) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof buf);
    *text = buf;
    return ntohs(v4->sin_port);
  }
  if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof buf);
    *text = buf;
    return ntohs(v6->sin6_port);
  }
  return -1;
}

bool is_connection(int fd, const std::string& remote_addr, int remote_port, int local_port) {
  sockaddr_storage local{}, peer{};
  socklen_t local_len = sizeof local, peer_len = sizeof peer;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) return false;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) return false;
  std::string local_text, peer_text;
  if (address_of(local, &local_text) != local_port || address_of(peer, &peer_text) != remote_port) return false;
  // httplib names IPv6 peers with their scope ("fe80::1%eth0"): compare the address part.
  return remote_addr.compare(0, remote_addr.find('%'), peer_text) == 0;
}

}  // namespace

PeerWatch PeerWatch::find(const std::string& remote_addr, int remote_port, int local_port) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return {};
  int found = -1;
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    if (is_connection(static_cast<int>(fd), remote_addr, remote_port, local_port)) {
      found = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
  return found >= 0 ? PeerWatch(found) : PeerWatch();
}

void end_connection_reads(int local_port) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t local_len = sizeof local, peer_len = sizeof peer;
    std::string text;
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &local_len) != 0) continue;
    if (address_of(local, &text) != local_port) continue;
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) continue;  // listening
    shutdown(static_cast<int>(fd), SHUT_RD);
  }
  closedir(dir);
}

bool PeerWatch::gone() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLRDHUP, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace strata::serve
