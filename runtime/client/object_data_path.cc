#include "runtime/client/object_data_path.h"

#include "core/base/status_macros.h"
#include "runtime/client/heatsink_client.h"
#include "runtime/transport/tcp_data_mover.h"

namespace heatsink::runtime {

absl::Status TcpObjectDataPath::Write(const SegmentLocation& location, SegmentId segment,
                                      uint64_t offset, absl::string_view bytes) {
  return WriteRemote(location.transport_endpoint, segment, offset, bytes, knobs_);
}

absl::Status TcpObjectDataPath::ReadInto(const SegmentLocation& location, SegmentId segment,
                                         uint64_t offset, absl::Span<uint8_t> out) {
  return ReadRemoteInto(location.transport_endpoint, segment, offset, out, knobs_);
}

absl::StatusOr<std::string> ObjectDataPath::Read(const SegmentLocation& location, SegmentId segment,
                                                 uint64_t offset, uint64_t size) {
  std::string out(static_cast<size_t>(size), '\0');
  HS_RETURN_IF_ERROR(ReadInto(location, segment, offset,
                              absl::MakeSpan(reinterpret_cast<uint8_t*>(out.data()), out.size())));
  return out;
}

}  // namespace heatsink::runtime
