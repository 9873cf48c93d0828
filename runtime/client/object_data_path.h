// File: runtime/client/object_data_path.h
//
// How a client moves an object's bytes between itself and the stores: a
// write of a put's bytes into one replica's range, and a read of one
// replica's range. The client library (heatsink_client.h) decides which
// replica; the data path only carries bytes.
//
// Two implementations: TcpObjectDataPath (below; the store's framed TCP data
// endpoint, `data_path = tcp`, the default) and GrpcObjectDataPath
// (runtime/rpc/grpc_store_client.h; the store's heatsink.v1.Store gRPC
// service, `data_path = grpc`).
//
// Thread safety: implementations are thread-safe.
#ifndef HEATSINK_RUNTIME_CLIENT_OBJECT_DATA_PATH_H_
#define HEATSINK_RUNTIME_CLIENT_OBJECT_DATA_PATH_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/master/master_types.h"
#include "runtime/transport/tcp_knobs.h"

namespace heatsink::runtime {

class ObjectDataPath {
 public:
  virtual ~ObjectDataPath() = default;

  // Writes `bytes` at [offset, +size) of `segment`, served by the store at
  // `location`; OK once every byte landed. The store's status otherwise
  // (NOT_FOUND, OUT_OF_RANGE, ...), UNAVAILABLE or DEADLINE_EXCEEDED when
  // the store cannot be reached.
  [[nodiscard]] virtual absl::Status Write(const SegmentLocation& location, SegmentId segment,
                                           uint64_t offset, absl::string_view bytes) = 0;
  // Reads out.size() bytes at `offset` of `segment`, served at `location`,
  // into `out` (the caller's memory: a caller that reuses a buffer pays no
  // allocation and no page fault per read).
  [[nodiscard]] virtual absl::Status ReadInto(const SegmentLocation& location, SegmentId segment,
                                              uint64_t offset, absl::Span<uint8_t> out) = 0;
  // Reads `size` bytes at `offset` of `segment` into a new string (ReadInto).
  [[nodiscard]] absl::StatusOr<std::string> Read(const SegmentLocation& location, SegmentId segment,
                                                 uint64_t offset, uint64_t size);
  // "tcp" or "grpc".
  virtual absl::string_view name() const = 0;
};

// The framed TCP protocol of runtime/transport/wire.h against
// `location.transport_endpoint`; one connection per call.
class TcpObjectDataPath final : public ObjectDataPath {
 public:
  explicit TcpObjectDataPath(const TcpTransportKnobs& knobs) : knobs_(knobs) {}

  absl::Status Write(const SegmentLocation& location, SegmentId segment, uint64_t offset,
                     absl::string_view bytes) override;
  absl::Status ReadInto(const SegmentLocation& location, SegmentId segment, uint64_t offset,
                        absl::Span<uint8_t> out) override;
  absl::string_view name() const override { return "tcp"; }

 private:
  const TcpTransportKnobs knobs_;
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_CLIENT_OBJECT_DATA_PATH_H_
