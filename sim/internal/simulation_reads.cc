// Simulation, reads: a read's lookups at the master, its retries (object
// still being put, master down), the replica it reads over the network, its
// completion and latency, and the puts in flight that reads wait for.
#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "core/replication/replica_selection.h"
#include "sim/internal/simulation.h"
#include "sim/limit_lines.h"

namespace heatsink::sim::runner_internal {

void Simulation::IssueRead(const SimOp& op, std::optional<size_t> request_row) {
  auto read = std::make_shared<ReadRt>();
  read->issued_ns = env_.NowNs();
  read->client = cluster_.ClientIndex(op.client);
  read->request_row = request_row;
  std::vector<ObjectName> names;
  names.reserve(op.keys.size());
  for (const std::string& k : op.keys) names.push_back(ObjectName{op.tenant, k});
  read->keys_outstanding = static_cast<int64_t>(names.size());
  // Keys whose put is still in flight are read once it has landed.
  int64_t in_flight = 0;
  for (const ObjectName& name : names) {
    if (puts_in_flight_.contains(name)) ++in_flight;
  }
  if (in_flight == 0) {
    ReadKeys(std::move(read), std::move(names), 0);
    return;
  }
  measurements_.CountMetric("sim_reads_waited_for_put_total");
  auto wait =
      std::make_shared<ReadWaitRt>(ReadWaitRt{std::move(read), in_flight, std::move(names)});
  for (const ObjectName& name : wait->names) {
    if (puts_in_flight_.contains(name)) reads_waiting_for_put_[name].push_back(wait);
  }
}

namespace {
constexpr size_t kPutsInFlightKeepMax = size_t{1} << 14;
}  // namespace

void Simulation::EndPut(const ObjectName& name) {
  const auto it = puts_in_flight_.find(name);
  if (it == puts_in_flight_.end()) return;
  puts_in_flight_.erase(it);
  // A bulk put leaves a table sized for all its keys: give it back once the
  // last put of a large burst ended.
  if (puts_in_flight_.empty() && puts_in_flight_.capacity() > kPutsInFlightKeepMax) {
    puts_in_flight_ = {};
  }
  const auto waiting = reads_waiting_for_put_.find(name);
  if (waiting == reads_waiting_for_put_.end()) return;
  const absl::InlinedVector<std::shared_ptr<ReadWaitRt>, 1> waiters = std::move(waiting->second);
  reads_waiting_for_put_.erase(waiting);
  for (const std::shared_ptr<ReadWaitRt>& wait : waiters) {
    if (--wait->waiting == 0) ReadKeys(wait->read, std::move(wait->names), 0);
  }
}

namespace {

// An answer that says the master cannot serve the key now (it is down, or
// it recovers after a restart): the reader retries with backoff.
bool MasterUnavailable(const absl::Status& st) {
  return st.code() == absl::StatusCode::kUnavailable &&
         (absl::StartsWith(st.message(), kMasterDownReason) ||
          absl::StartsWith(st.message(), "master_recovering"));
}

// Retry k (0-based) of a read the master could not serve waits
// read_retry_ms * 2^min(k, kMasterRetryDoublingsMax).
constexpr int64_t kMasterRetryDoublingsMax = 8;

}  // namespace

void Simulation::ReadKeys(ReadHandle read, std::vector<ObjectName> names, int64_t attempt) {
  const ClientRt& client = cluster_.client(read->client);
  SimMasterClient* mc = cluster_.host(client.host).master_client.get();
  // Keys still being written are read again after read_retry_ms; keys the
  // master could not serve (down or recovering) after a backoff that doubles
  // with each such retry of the read.
  auto retry_or_fail = [this, read, attempt](std::vector<ObjectName> again, bool backoff) {
    if (again.empty()) return;
    if (attempt >= knobs_.driver.read_retries_max) {
      for (size_t i = 0; i < again.size(); ++i) {
        measurements_.CountMetric("sim_reads_failed_total");
        if (backoff) measurements_.CountMetric("sim_reads_gave_up_master_unavailable_total");
        FinishKey(read, false, 0, Distance::kSameHost);
      }
      return;
    }
    measurements_.CountMetric("sim_read_retries_total", static_cast<int64_t>(again.size()));
    DurationNs delay = MsToNs(knobs_.driver.read_retry_ms);
    if (backoff) {
      measurements_.CountMetric("sim_read_retries_master_unavailable_total",
                                static_cast<int64_t>(again.size()));
      delay <<= std::min(read->master_retries, kMasterRetryDoublingsMax);
      ++read->master_retries;
    }
    env_.engine().ScheduleAfter(delay, [this, read, again = std::move(again), attempt]() mutable {
      ReadKeys(read, std::move(again), attempt + 1);
    });
  };
  // `again`: keys to read again; `backoff`: one of them met an unavailable
  // master.
  auto on_result = [this, read](const ObjectName& name,
                                const absl::StatusOr<GetReplicaListResponse>& r,
                                std::vector<ObjectName>* again, bool* backoff) {
    if (r.ok()) {
      ReadReplica(read, name, *r);
    } else if (r.status().code() == absl::StatusCode::kUnavailable) {
      again->push_back(name);
      if (MasterUnavailable(r.status())) *backoff = true;
    } else {
      const bool miss = r.status().code() == absl::StatusCode::kNotFound;
      measurements_.CountMetric(miss ? "sim_read_misses_total" : "sim_reads_failed_total");
      // After a master crash: a miss of an object a live store holds
      // complete is an object the restart lost.
      if (miss && recovery_.master_restarts() > 0 && recovery_.HeldCompleteByLiveStore(name)) {
        measurements_.CountMetric("sim_read_misses_of_stored_objects_total");
      }
      FinishKey(read, false, 0, Distance::kSameHost);
    }
  };
  if (names.size() == 1) {
    GetReplicaListRequest req;
    req.name = names.front();
    req.requester = client.id;
    req.requester_domain = client.domain;
    mc->GetReplicaList(req, [name = names.front(), on_result,
                             retry_or_fail](absl::StatusOr<GetReplicaListResponse> r) mutable {
      std::vector<ObjectName> again;
      bool backoff = false;
      on_result(name, r, &again, &backoff);
      retry_or_fail(std::move(again), backoff);
    });
    return;
  }
  BatchGetReplicaListRequest req;
  req.names = names;
  req.requester = client.id;
  req.requester_domain = client.domain;
  mc->BatchGetReplicaList(req, [this, read, names = std::move(names), on_result, retry_or_fail](
                                   absl::StatusOr<BatchGetReplicaListResponse> r) mutable {
    if (!r.ok()) {
      if (MasterUnavailable(r.status())) {
        retry_or_fail(std::move(names), /*backoff=*/true);
        return;
      }
      for (size_t i = 0; i < names.size(); ++i) {
        measurements_.CountMetric("sim_reads_failed_total");
        FinishKey(read, false, 0, Distance::kSameHost);
      }
      return;
    }
    std::vector<ObjectName> again;
    bool backoff = false;
    for (size_t i = 0; i < names.size(); ++i) on_result(names[i], r->results[i], &again, &backoff);
    retry_or_fail(std::move(again), backoff);
  });
}

void Simulation::ReadReplica(ReadHandle read, const ObjectName& name,
                             const GetReplicaListResponse& response) {
  const ClientRt& client = cluster_.client(read->client);
  const HostRt& reader_host = cluster_.host(client.host);
  absl::InlinedVector<ReadableReplica, 4> readable;  // one per key read: no allocation
  readable.reserve(response.replicas.size());
  for (const ReplicaDescriptor& r : response.replicas) {
    readable.push_back(ReadableReplica{r.segment_id, r.location->host, r.location->domain,
                                       r.kind == ReplicaKind::kMemory});
  }
  const std::optional<size_t> choice =
      SelectReplicaForRead(knobs_.replication.replica_selection_policy,
                           ReaderIdentity{client.id, reader_host.name, client.domain}, name,
                           readable, static_cast<uint64_t>(knobs_.driver.replica_selection_seed));
  const std::optional<int> source =
      choice.has_value() ? cluster_.HostOfSegment(response.replicas[*choice].segment_id)
                         : std::nullopt;
  if (!source.has_value() || !cluster_.host(*source).worker_up) {
    // The chosen replica's worker is down: its memory is gone.
    measurements_.CountMetric("sim_reads_failed_total");
    FinishKey(read, false, 0, Distance::kSameHost);
    return;
  }
  HostRt& serving = cluster_.host(*source);
  const uint64_t size = response.size_bytes;
  DurationNs memory_ns = 0;
  if (serving.numa != nullptr) {
    const NumaReadCost cost =
        serving.numa->Read(name, size, measurements_.IntervalIndex(env_.NowNs()));
    memory_ns = cost.memory_ns;
    measurements_.CountNumaRead(env_.NowNs(), cost);
  }
  const Distance distance = network_->DistanceBetween(*source, client.host);
  const int src = *source;
  // Limit lines (sim/limit_lines.h): was an ordinary replica in the reader's
  // domain?
  LimitReadTarget target;
  target.domain = client.domain_index;
  target.cross_domain = distance == Distance::kCrossDomain;
  target.base_cross_domain = true;
  for (const ReplicaDescriptor& r : response.replicas) {
    if (r.dynamic) continue;
    if (r.kind == ReplicaKind::kMemory) ++target.ordinary_replicas;
    if (r.location->domain == client.domain) target.base_cross_domain = false;
  }
  const uint32_t limit_pair = measurements_.limit_lines().PairFor(name, response.version, target);
  const bool base_cross = target.base_cross_domain;
  const TimeNs served_ns = env_.NowNs();
  FlowSpec flow;
  flow.src_host = src;
  flow.dst_host = client.host;
  flow.bytes = static_cast<int64_t>(size);
  // The serving host reads the heads out of its memory before they move.
  flow.source_delay_ns = std::min(memory_ns, FlowSpec::kSourceDelayMaxNs);
  auto landed = [this, read, size, served_ns, distance, src, limit_pair,
                 base_cross](absl::Status moved) {
    if (!moved.ok()) {
      measurements_.CountMetric("sim_reads_failed_total");
      FinishKey(read, false, 0, distance);
      return;
    }
    if (limit_pair != LimitLineRecorder::kNoPair) {
      measurements_.limit_lines().OnRead(limit_pair, served_ns, size,
                                         distance == Distance::kCrossDomain, base_cross);
    }
    measurements_.CountBytesServed(env_.NowNs(), src, size);
    FinishKey(read, true, size, distance);
  };
  absl::StatusOr<FlowId> id = network_->StartFlow(flow, std::move(landed));
  if (!id.ok()) {
    measurements_.CountMetric("sim_reads_failed_total");
    FinishKey(read, false, 0, distance);
  }
}

void Simulation::FinishKey(const ReadHandle& read, bool ok, uint64_t bytes, Distance distance) {
  const TimeNs now = env_.NowNs();
  if (ok) measurements_.CountKeyRead(now, read->issued_ns, bytes, distance, read->request_row);
  if (--read->keys_outstanding == 0) measurements_.FinishRequest(read->request_row, now);
}

}  // namespace heatsink::sim::runner_internal
