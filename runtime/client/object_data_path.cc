#include "runtime/client/object_data_path.h"

#include "runtime/client/heatsink_client.h"
#include "runtime/transport/tcp_data_mover.h"

namespace heatsink::runtime {

absl::Status TcpObjectDataPath::Write(const SegmentLocation& location, SegmentId segment,
                                      uint64_t offset, absl::string_view bytes) {
  return WriteRemote(location.transport_endpoint, segment, offset, bytes, knobs_);
}

absl::StatusOr<std::string> TcpObjectDataPath::Read(const SegmentLocation& location,
                                                    SegmentId segment, uint64_t offset,
                                                    uint64_t size) {
  return ReadRemote(location.transport_endpoint, segment, offset, size, knobs_);
}

}  // namespace heatsink::runtime
