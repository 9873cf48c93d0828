// Shared helpers for the dynamic replication tests: a ReplicatedMaster on a
// ManualEnv with small knobs, a decision collector, store/put/read helpers
// and a driver for the source worker's side of a dynamic copy.
#ifndef HEATSINK_TESTS_CORE_REPLICATION_REPLICATION_TEST_UTIL_H_
#define HEATSINK_TESTS_CORE_REPLICATION_REPLICATION_TEST_UTIL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/check.h"
#include "core/base/mutex.h"
#include "core/base/status_macros.h"
#include "core/env/manual_env.h"
#include "core/replication/decision.h"
#include "core/replication/replicated_master.h"
#include "gtest/gtest.h"
#include "tests/core/replication/replicated_master_test_peer.h"

namespace heatsink::testing {

inline absl::Status ToStatus(const absl::Status& s) { return s; }
template <typename T>
absl::Status ToStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

#define HS_EXPECT_OK(expr)                                            \
  do {                                                                \
    const ::absl::Status hs_s_ = ::heatsink::testing::ToStatus(expr); \
    EXPECT_TRUE(hs_s_.ok()) << hs_s_;                                 \
  } while (false)
#define HS_ASSERT_OK(expr)                                            \
  do {                                                                \
    const ::absl::Status hs_s_ = ::heatsink::testing::ToStatus(expr); \
    ASSERT_TRUE(hs_s_.ok()) << hs_s_;                                 \
  } while (false)
#define HS_EXPECT_CODE(expr, code_name)                               \
  do {                                                                \
    const ::absl::Status hs_s_ = ::heatsink::testing::ToStatus(expr); \
    EXPECT_EQ(hs_s_.code(), ::absl::StatusCode::code_name) << hs_s_;  \
  } while (false)
#define HS_EXPECT_REASON(expr, reason)                                         \
  do {                                                                         \
    const ::absl::Status hs_s_ = ::heatsink::testing::ToStatus(expr);          \
    EXPECT_EQ(::heatsink::RejectReasonOf(hs_s_), ::heatsink::reason) << hs_s_; \
  } while (false)

// Collects decisions (thread-safe).
class DecisionCollector final : public DecisionSink {
 public:
  void Record(const DecisionRecord& record) override {
    MutexLock lock(&mu_);
    records_.push_back(record);
  }
  std::vector<DecisionRecord> records() const {
    MutexLock lock(&mu_);
    return records_;
  }
  size_t size() const {
    MutexLock lock(&mu_);
    return records_.size();
  }
  DecisionRecord last() const {
    MutexLock lock(&mu_);
    return records_.empty() ? DecisionRecord{} : records_.back();
  }
  std::string Jsonl() const {
    MutexLock lock(&mu_);
    std::string out;
    for (const DecisionRecord& r : records_) out += FormatDecisionJson(r) + "\n";
    return out;
  }

 private:
  mutable Mutex mu_;
  std::vector<DecisionRecord> records_;
};

// Master knobs with room for the scenarios here and no liveness pressure
// (tests advance minutes without heartbeats).
inline MasterKnobs ReplicationTestMasterKnobs() {
  MasterKnobs k = MasterKnobs::TestMin();
  k.client_live_ttl_sec = 3'600;
  k.objects_max = 4'096;
  k.segments_max = 16;
  k.clients_max = 16;
  k.segments_per_client_max = 4;
  k.key_bytes_max = 64;
  k.batch_keys_max = 16;
  k.replicas_per_object_max = 8;
  k.preferred_segments_max = 4;
  k.tasks_max = 64;
  k.pending_tasks_per_client_max = 16;
  k.processing_tasks_per_client_max = 16;
  k.fetch_tasks_batch_max = 16;
  return k;
}

// Enforce, a 1 s window and hit count 3, cooldowns of 5 s (admission) and
// 10 s (recreate), leases of 2 s.
inline constexpr uint64_t kMiB = 1024 * 1024;

inline ReplicationKnobs ReplicationTestKnobs() {
  ReplicationKnobs k;
  k.dynamic_replication_mode = DynamicReplicationMode::kEnforce;
  k.dynamic_replication_heat_window_seconds = 1;
  k.dynamic_replication_heat_window_sub_buckets = 4;
  k.dynamic_replication_admission_qps_threshold = 3.0;
  k.dynamic_replication_heat_window_entries_max = 64;
  k.dynamic_replication_admission_cooldown_ms = 5'000;
  k.dynamic_replication_recreate_cooldown_ms = 10'000;
  k.dynamic_replication_lease_ttl_ms = 2'000;
  k.dynamic_replication_trigger_queue_max = 64;
  k.dynamic_replication_pending_actions_max = 16;
  k.dynamic_replication_proposals_max = 16;
  k.dynamic_replication_cooldown_entries_max = 64;
  return k;
}

// The same, in `mode`.
inline ReplicationKnobs ReplicationTestKnobs(DynamicReplicationMode mode) {
  ReplicationKnobs k = ReplicationTestKnobs();
  k.dynamic_replication_mode = mode;
  return k;
}

class ReplicationHarness {
 public:
  explicit ReplicationHarness(const ReplicationKnobs& knobs = ReplicationTestKnobs(),
                              const MasterKnobs& master_knobs = ReplicationTestMasterKnobs(),
                              uint64_t seed = 7)
      : env_(seed) {
    absl::StatusOr<std::unique_ptr<ReplicatedMaster>> m =
        ReplicatedMaster::Create(env_.env(), master_knobs, knobs, &sink_);
    HS_CHECK_OK(m.status());
    rm_ = *std::move(m);
  }

  ManualEnv& env() { return env_; }
  ReplicatedMaster& rm() { return *rm_; }
  MasterService& master() { return ReplicatedMasterTestPeer::master(*rm_); }
  DynamicReplication& dr() { return rm_->replication(); }
  DecisionCollector& sink() { return sink_; }
  const MetricsRegistry& SyncMetrics() { return rm_->SyncMetrics(); }
  TimeNs now() const { return env_.NowNs(); }

  // A client with one segment of its own (client id == segment id).
  // Stores 1 and 2 (1 MiB each) on hosts h1 and h2.
  absl::Status AddTwoStores() {
    HS_RETURN_IF_ERROR(AddStore(1, kMiB, "h1"));
    return AddStore(2, kMiB, "h2");
  }
  absl::Status AddStore(uint64_t id, uint64_t capacity, const std::string& host,
                        const std::string& domain = "") {
    absl::Status s = master().RegisterClient(RegisterClientRequest{ClientId(id), host, domain});
    if (!s.ok()) return s;
    MountSegmentRequest req;
    req.segment_id = SegmentId(id);
    req.name = "seg" + std::to_string(id);
    req.host = host;
    req.domain = domain;
    req.capacity_bytes = capacity;
    req.transport_endpoint = "tcp://" + host + ":" + std::to_string(id);
    return master().MountSegment(ClientId(id), req);
  }

  // PutStart + PutEnd on the given segments (in order); returns the version.
  absl::StatusOr<Version> Put(const std::string& key, uint64_t size,
                              std::vector<SegmentId> segments, const std::string& tenant = "") {
    PutStartRequest req;
    req.name = ObjectName{tenant, key};
    req.size_bytes = size;
    req.replica_num = static_cast<uint32_t>(segments.size());
    req.preferred_segments = std::move(segments);
    absl::StatusOr<PutStartResponse> started = master().PutStart(ClientId(100), req);
    if (!started.ok()) return started.status();
    absl::Status ended = master().PutEnd(ClientId(100), PutEndRequest{req.name, started->version});
    if (!ended.ok()) return ended;
    return started->version;
  }

  absl::StatusOr<GetReplicaListResponse> Read(const std::string& key,
                                              const std::string& domain = "",
                                              uint64_t reader = 200) {
    return master().GetReplicaList(
        GetReplicaListRequest{ObjectName{"", key}, ClientId(reader), domain});
  }

  // `n` reads of `key` from `domain`, all at the current time.
  void ReadTimes(const std::string& key, int n, const std::string& domain = "") {
    for (int i = 0; i < n; ++i) {
      absl::StatusOr<GetReplicaListResponse> r = Read(key, domain);
      HS_CHECK_OK(r.status());
    }
  }

  // Applies the buffered reads (as the drain timer would, up to
  // dynamic_replication_heat_drain_interval_ms later) and runs what is due
  // now: the admission worker, when a read crossed.
  void Settle() {
    dr().DrainReads();
    env_.RunUntilIdle();
  }

  // Reads `key` up to the hit count and runs the admission worker.
  void MakeHot(const std::string& key, const std::string& domain = "") {
    ReadTimes(key, static_cast<int>(dr().knobs().AdmissionHitCount()), domain);
    Settle();
  }

  // The client's tasks (they become PROCESSING).
  std::vector<Task> Fetch(uint64_t client) {
    absl::StatusOr<FetchTasksResponse> r = master().FetchTasks(ClientId(client), 16);
    HS_CHECK_OK(r.status());
    return r->tasks;
  }

  static CopyTaskFence FenceOf(const Task& task) {
    return CopyTaskFence{task.id, task.copy.version, task.copy.lease_id};
  }

  // Fetch, DynamicReplicaCopyStart, DynamicReplicaCopyEnd, MarkTaskComplete
  // for the one task of `client`.
  absl::Status RunDynamicCopy(uint64_t client) {
    std::vector<Task> tasks = Fetch(client);
    if (tasks.size() != 1) return absl::InternalError("expected exactly one task");
    const CopyTaskFence fence = FenceOf(tasks[0]);
    absl::StatusOr<CopyStartResponse> started =
        rm().DynamicReplicaCopyStart(ClientId(client), fence);
    if (!started.ok()) return started.status();
    if (absl::Status s = rm().DynamicReplicaCopyEnd(ClientId(client), fence); !s.ok()) return s;
    return master().MarkTaskComplete(ClientId(client),
                                     MarkTaskCompleteRequest{fence.task_id, true, ""});
  }

  ReplicaActionProposal Proposal(uint64_t id, const std::string& key, Version version,
                                 uint64_t size) {
    ReplicaActionProposal p;
    p.proposal_id = ProposalId(id);
    p.name = ObjectName{"", key};
    p.observed_version = version;
    p.expected_size_bytes = size;
    p.expiration_ns = now() + SecToNs(60);
    return p;
  }

  std::vector<SegmentId> Segments(const GetReplicaListResponse& r) {
    std::vector<SegmentId> out;
    for (const ReplicaDescriptor& d : r.replicas) out.push_back(d.segment_id);
    return out;
  }

  int64_t Rejected(RejectReason reason) {
    return SyncMetrics().Value("dynamic_replication_admissions_rejected_total",
                               {{"reason", std::string(RejectReasonName(reason))}});
  }

 private:
  ManualEnv env_;
  DecisionCollector sink_;
  std::unique_ptr<ReplicatedMaster> rm_;
};

// Two stores on two hosts, object "k" (1000 bytes) on segment 1; the core's
// invariants are checked after every test.
class OneObjectTwoStores : public ::testing::Test {
 protected:
  void SetUp() override {
    HS_ASSERT_OK(h_.AddTwoStores());
    absl::StatusOr<Version> v = h_.Put("k", 1000, {SegmentId(1)});
    HS_ASSERT_OK(v);
    version_ = *v;
  }
  void TearDown() override { HS_EXPECT_OK(h_.rm().CheckInvariants()); }

  // Heats "k" until admission grants a lease, and returns it.
  ReplicaActionLease Granted() {
    h_.MakeHot("k");
    const std::optional<PendingActionView> p = h_.dr().FindPending(ObjectName{"", "k"});
    HS_CHECK(p.has_value());
    return p->lease;
  }

  ReplicationHarness h_;
  Version version_ = 0;
};

}  // namespace heatsink::testing

#endif  // HEATSINK_TESTS_CORE_REPLICATION_REPLICATION_TEST_UTIL_H_
