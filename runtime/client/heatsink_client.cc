#include "runtime/client/heatsink_client.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "core/replication/replica_selection.h"
#include "runtime/env/notification.h"
#include "runtime/transport/socket.h"
#include "runtime/transport/tcp_data_mover.h"
#include "runtime/transport/tls_stream.h"
#include "runtime/transport/wire.h"

namespace heatsink::runtime {
namespace {

// Waits for one MasterClient callback. Every MasterClient call runs its
// callback exactly once, bounded by the client's deadline.
template <typename T>
class Await {
 public:
  auto Callback() {
    return [state = state_](T result) mutable {
      state->result.emplace(std::move(result));
      state->done.Notify();
    };
  }
  T Wait() {
    state_->done.WaitForNotification();
    return *std::move(state_->result);
  }

 private:
  struct State {
    Notification done;
    std::optional<T> result;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace

absl::Status HeatsinkClientOptions::Validate() const {
  if (!client_id.valid()) return absl::InvalidArgumentError("client id must be non-zero");
  if (replica_num == 0) return absl::InvalidArgumentError("replica_num must be positive");
  if (object_bytes_max == 0) return absl::InvalidArgumentError("object_bytes_max must be positive");
  if (lookup_batch_keys_max == 0) {
    return absl::InvalidArgumentError("lookup_batch_keys_max must be at least 1");
  }
  return tcp.Validate();
}

absl::Status WriteRemote(absl::string_view endpoint, SegmentId segment, uint64_t offset,
                         absl::string_view bytes, const TcpTransportKnobs& knobs) {
  HS_ASSIGN_OR_RETURN(Socket socket, ConnectDataEndpoint(endpoint, knobs));
  const wire::RangeRequest request{segment, offset, bytes.size()};
  HS_RETURN_IF_ERROR(wire::SendFrame(socket, wire::FrameType::kWrite, wire::EncodeRange(request)));
  HS_RETURN_IF_ERROR(wire::RecvStatus(socket, nullptr));
  uint64_t sent = 0;
  while (sent < bytes.size()) {
    const uint32_t n =
        static_cast<uint32_t>(std::min<uint64_t>(knobs.chunk_bytes, bytes.size() - sent));
    uint8_t header[wire::kHeaderBytes];
    wire::EncodeHeader(wire::FrameHeader{wire::FrameType::kData, n}, header);
    HS_RETURN_IF_ERROR(SendAll2(socket, header, sizeof(header), bytes.data() + sent, n));
    sent += n;
  }
  uint64_t landed = 0;
  HS_RETURN_IF_ERROR(wire::RecvStatus(socket, &landed));
  if (landed != bytes.size()) {
    return absl::UnavailableError(
        absl::StrCat("store acknowledged ", landed, " of ", bytes.size(), " bytes"));
  }
  return absl::OkStatus();
}

HeatsinkClient::HeatsinkClient(MasterClient* master, HeatsinkClientOptions options)
    : HeatsinkClient(master, nullptr, std::move(options)) {}

HeatsinkClient::HeatsinkClient(MasterClient* master, ObjectDataPath* data_path,
                               HeatsinkClientOptions options)
    : master_(master),
      options_(std::move(options)),
      tcp_path_(options_.tcp),
      data_path_(data_path != nullptr ? data_path : &tcp_path_) {
  HS_CHECK_OK(options_.Validate());
  if (options_.lookup_batches_in_flight_max > 0) {
    lookups_ = std::make_unique<LookupCoalescer>(
        master_,
        LookupCoalescerOptions{.requester = options_.client_id,
                               .domain = options_.domain,
                               .batches_in_flight_max = options_.lookup_batches_in_flight_max,
                               .keys_max = options_.lookup_batch_keys_max});
  }
}

LookupCoalescerStats HeatsinkClient::lookup_stats() const {
  return lookups_ != nullptr ? lookups_->stats() : LookupCoalescerStats{};
}

ObjectName HeatsinkClient::Name(absl::string_view key) const {
  return ObjectName{options_.tenant, std::string(key)};
}

absl::Status HeatsinkClient::Put(absl::string_view key, absl::string_view bytes) {
  if (bytes.size() > options_.object_bytes_max) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "object of ", bytes.size(), " bytes above object_bytes_max=", options_.object_bytes_max));
  }
  PutStartRequest start;
  start.name = Name(key);
  start.size_bytes = bytes.size();
  start.replica_num = options_.replica_num;
  start.preferred_segments = options_.preferred_segments;
  Await<absl::StatusOr<PutStartResponse>> started;
  master_->PutStart(options_.client_id, start, started.Callback());
  HS_ASSIGN_OR_RETURN(PutStartResponse put, started.Wait());

  const absl::Status written = WriteReplicas(put, bytes);
  if (!written.ok()) {
    // Nothing of a failed put may become readable.
    Await<absl::Status> revoked;
    master_->PutRevoke(options_.client_id, PutRevokeRequest{start.name, put.version},
                       revoked.Callback());
    (void)revoked.Wait();
    return written;
  }
  Await<absl::Status> ended;
  master_->PutEnd(options_.client_id, PutEndRequest{start.name, put.version}, ended.Callback());
  return ended.Wait();
}

absl::Status HeatsinkClient::WriteReplicas(const PutStartResponse& put, absl::string_view bytes) {
  for (const ReplicaDescriptor& replica : put.replicas) {
    if (replica.location == nullptr || replica.size_bytes != bytes.size()) {
      return absl::InternalError("master returned an unusable replica descriptor");
    }
    HS_RETURN_IF_ERROR(
        data_path_->Write(*replica.location, replica.segment_id, replica.offset, bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<absl::Status>> HeatsinkClient::BatchPut(
    absl::Span<const std::string> keys, absl::Span<const absl::string_view> values) {
  if (keys.size() != values.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a batch put of ", keys.size(), " keys and ", values.size(), " values"));
  }
  std::vector<absl::Status> out(keys.size());
  std::vector<size_t> asked;  // indexes of the keys sent to BatchPutStart
  BatchPutStartRequest start;
  start.replica_num = options_.replica_num;
  start.preferred_segments = options_.preferred_segments;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (values[i].size() > options_.object_bytes_max) {
      out[i] = absl::ResourceExhaustedError(
          absl::StrCat("object of ", values[i].size(),
                       " bytes above object_bytes_max=", options_.object_bytes_max));
      continue;
    }
    asked.push_back(i);
    start.names.push_back(Name(keys[i]));
    start.sizes_bytes.push_back(values[i].size());
  }
  if (asked.empty()) return out;
  Await<absl::StatusOr<BatchPutStartResponse>> started;
  master_->BatchPutStart(options_.client_id, start, started.Callback());
  HS_ASSIGN_OR_RETURN(BatchPutStartResponse puts, started.Wait());
  if (puts.results.size() != asked.size()) {
    return absl::InternalError("master answered a batch put with the wrong number of results");
  }
  BatchPutEndRequest end;
  BatchPutRevokeRequest revoke;
  std::vector<size_t> ending;
  for (size_t j = 0; j < asked.size(); ++j) {
    const size_t i = asked[j];
    if (!puts.results[j].ok()) {
      out[i] = puts.results[j].status();
      continue;
    }
    const PutStartResponse& put = *puts.results[j];
    out[i] = WriteReplicas(put, values[i]);
    if (out[i].ok()) {
      end.puts.push_back(PutEndRequest{start.names[j], put.version});
      ending.push_back(i);
    } else {
      // Nothing of a failed put may become readable.
      revoke.puts.push_back(PutRevokeRequest{start.names[j], put.version});
    }
  }
  if (!revoke.puts.empty()) {
    Await<absl::StatusOr<BatchPutResponse>> revoked;
    master_->BatchPutRevoke(options_.client_id, revoke, revoked.Callback());
    (void)revoked.Wait();  // the write's error is what the caller needs
  }
  if (end.puts.empty()) return out;
  Await<absl::StatusOr<BatchPutResponse>> ended;
  master_->BatchPutEnd(options_.client_id, end, ended.Callback());
  absl::StatusOr<BatchPutResponse> ends = ended.Wait();
  if (ends.ok() && ends->results.size() != ending.size()) {
    ends = absl::InternalError("master answered a batch put end with the wrong number of results");
  }
  if (!ends.ok()) {
    // The ends may not have been applied: take the puts back (a put that did
    // end refuses the revoke and stays readable).
    BatchPutRevokeRequest back;
    back.puts.reserve(end.puts.size());
    for (const PutEndRequest& e : end.puts)
      back.puts.push_back(PutRevokeRequest{e.name, e.version});
    Await<absl::StatusOr<BatchPutResponse>> revoked;
    master_->BatchPutRevoke(options_.client_id, back, revoked.Callback());
    (void)revoked.Wait();
  }
  for (size_t j = 0; j < ending.size(); ++j) {
    out[ending[j]] = ends.ok() ? ends->results[j] : ends.status();
  }
  return out;
}

absl::StatusOr<GetReplicaListResponse> HeatsinkClient::Lookup(absl::string_view key) {
  GetReplicaListRequest req;
  req.name = Name(key);
  req.requester = options_.client_id;
  req.requester_domain = options_.domain;
  Await<absl::StatusOr<GetReplicaListResponse>> listed;
  if (lookups_ != nullptr) {
    lookups_->Lookup(std::move(req.name), listed.Callback());
  } else {
    master_->GetReplicaList(req, listed.Callback());
  }
  return listed.Wait();
}

absl::StatusOr<GetResult> HeatsinkClient::ReadOne(
    const ObjectName& name, const GetReplicaListResponse& list,
    absl::FunctionRef<absl::Span<uint8_t>(uint64_t)> buffer_for) {
  if (list.size_bytes > options_.object_bytes_max) {
    return absl::ResourceExhaustedError(
        absl::StrCat("object of ", list.size_bytes,
                     " bytes above object_bytes_max=", options_.object_bytes_max));
  }
  std::vector<ReadableReplica> readable;
  readable.reserve(list.replicas.size());
  for (const ReplicaDescriptor& r : list.replicas) {
    if (r.location == nullptr) return absl::InternalError("replica without a location");
    readable.push_back(ReadableReplica{r.segment_id, r.location->host, r.location->domain, true});
  }
  const std::optional<size_t> pick =
      SelectReplicaForRead(options_.replica_selection_policy,
                           ReaderIdentity{options_.client_id, options_.host, options_.domain}, name,
                           readable, options_.replica_selection_seed);
  if (!pick.has_value()) return absl::NotFoundError("object has no readable replica");
  const ReplicaDescriptor& chosen = list.replicas[*pick];
  const absl::Span<uint8_t> out = buffer_for(chosen.size_bytes);
  if (out.size() < chosen.size_bytes) {
    return absl::OutOfRangeError(absl::StrCat("object of ", chosen.size_bytes,
                                              " bytes does not fit a buffer of ", out.size()));
  }
  HS_RETURN_IF_ERROR(data_path_->ReadInto(*chosen.location, chosen.segment_id, chosen.offset,
                                          out.subspan(0, chosen.size_bytes)));
  GetResult result;
  result.size_bytes = chosen.size_bytes;
  result.version = list.version;
  result.segment = chosen.segment_id;
  result.replica_count = list.replicas.size();
  return result;
}

absl::StatusOr<GetResult> HeatsinkClient::ReadOneToString(const ObjectName& name,
                                                          const GetReplicaListResponse& list) {
  std::string bytes;
  HS_ASSIGN_OR_RETURN(GetResult result, ReadOne(name, list, [&bytes](uint64_t size) {
                        bytes.resize(size);
                        return absl::MakeSpan(reinterpret_cast<uint8_t*>(bytes.data()),
                                              bytes.size());
                      }));
  result.bytes = std::move(bytes);
  return result;
}

absl::StatusOr<GetResult> HeatsinkClient::Get(absl::string_view key) {
  HS_ASSIGN_OR_RETURN(GetReplicaListResponse list, Lookup(key));
  return ReadOneToString(Name(key), list);
}

absl::StatusOr<GetResult> HeatsinkClient::GetInto(absl::string_view key, absl::Span<uint8_t> out) {
  HS_ASSIGN_OR_RETURN(GetReplicaListResponse list, Lookup(key));
  return ReadOne(Name(key), list, [out](uint64_t) { return out; });
}

absl::StatusOr<GetResult> HeatsinkClient::GetInto(absl::string_view key,
                                                  std::vector<uint8_t>* buffer) {
  HS_CHECK(buffer != nullptr);
  HS_ASSIGN_OR_RETURN(GetReplicaListResponse list, Lookup(key));
  return ReadOne(Name(key), list, [buffer](uint64_t size) {
    if (buffer->size() < size) buffer->resize(size);
    return absl::MakeSpan(*buffer);
  });
}

absl::StatusOr<std::vector<absl::StatusOr<GetResult>>> HeatsinkClient::BatchGet(
    absl::Span<const std::string> keys) {
  BatchGetReplicaListRequest req;
  req.names.reserve(keys.size());
  for (const std::string& key : keys) req.names.push_back(Name(key));
  req.requester = options_.client_id;
  req.requester_domain = options_.domain;
  Await<absl::StatusOr<BatchGetReplicaListResponse>> listed;
  master_->BatchGetReplicaList(req, listed.Callback());
  HS_ASSIGN_OR_RETURN(BatchGetReplicaListResponse lists, listed.Wait());
  if (lists.results.size() != keys.size()) {
    return absl::InternalError("master answered a batch with the wrong number of results");
  }
  std::vector<absl::StatusOr<GetResult>> out;
  out.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!lists.results[i].ok()) {
      out.push_back(lists.results[i].status());
    } else {
      out.push_back(ReadOneToString(req.names[i], *lists.results[i]));
    }
  }
  return out;
}

absl::Status HeatsinkClient::Remove(absl::string_view key) {
  Await<absl::Status> removed;
  master_->Remove(RemoveRequest{Name(key)}, removed.Callback());
  return removed.Wait();
}

}  // namespace heatsink::runtime
