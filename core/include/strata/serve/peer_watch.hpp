// Whether the client of a request has gone: its connection's socket, found by the request's addresses, polled
// for the peer's close (POLLRDHUP) without reading from it. The engine thread asks once per generated token, so a
// client that disconnects stops its generation within one step, streaming or not. httplib keeps the socket open
// while the request's handler or content provider runs, which is as long as the job may ask.
#pragma once

#include <string>

namespace strata::serve {

class PeerWatch {
 public:
  PeerWatch() = default;  // watches nothing: gone() is false
  // The socket connected to remote_addr:remote_port on local_port; none found: watches nothing.
  static PeerWatch find(const std::string& remote_addr, int remote_port, int local_port);
  // The peer closed or reset the connection. A client that half-closes its side while it waits counts as gone.
  bool gone() const;
  bool watching() const { return fd_ >= 0; }

 private:
  explicit PeerWatch(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Shuts the read side of every connected socket of this process on local_port (the server's connections), so that
// threads waiting for a next request on a kept-alive connection see its end; writes still in flight go on.
void end_connection_reads(int local_port);

}  // namespace strata::serve
