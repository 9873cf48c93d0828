// File: runtime/transport/read_gate.h
//
// Who may read a range of a store's segments. A store's data services (the
// framed TCP endpoint of tcp_data_server.h and the gRPC store service of
// runtime/rpc/store_server.h) ask their ReadGate before they send a byte of a
// read; runtime/rpc/read_access.h is the store's implementation (the rules
// are in docs/runtime.md, "Who may read a range"). Without a gate every
// reader the transport let in is served.
//
// Thread safety: Allow() is called from every serving thread at once.
#ifndef HEATSINK_RUNTIME_TRANSPORT_READ_GATE_H_
#define HEATSINK_RUNTIME_TRANSPORT_READ_GATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/model/ids.h"

namespace heatsink::runtime {

// The reader as its transport authenticated it.
struct ReadPeer {
  // The peer presented a certificate the server verified (mutual TLS).
  bool verified = false;
  // The URI subject alternative names of that certificate.
  std::vector<std::string> uri_sans;
};

struct ReadQuery {
  SegmentId segment;
  uint64_t offset = 0;
  uint64_t size = 0;
  // The copy lease the reader says it reads under (invalid: none).
  LeaseId copy_lease;
};

class ReadGate {
 public:
  virtual ~ReadGate() = default;
  // OK to serve the read; PERMISSION_DENIED (or UNAUTHENTICATED for a peer
  // without a usable identity) to refuse it, with a message naming the
  // reader and the range. May block for a bounded time (a question to the
  // master, a wait for the store's manifest).
  [[nodiscard]] virtual absl::Status Allow(const ReadPeer& peer, const ReadQuery& query) = 0;
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_TRANSPORT_READ_GATE_H_
