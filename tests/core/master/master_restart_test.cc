// Covers a master restart without lost objects (docs/runtime.md, "Master
// restart"): store workers keep manifests from the changes FetchTasks
// brings, a new master rebuilds objects, replicas, used bytes and its
// version counter from their reports, answers unknown keys UNAVAILABLE while
// it recovers, discards puts and copies that were in flight (their bytes are
// held for the release timeout, then freed), lets the highest complete
// version win when stores disagree, brings dynamic replicas back as dynamic
// without a lease, and rejects bad entries (overlap, beyond the segment,
// unknown tenant, a segment of another store) while applying the rest.
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/base/check.h"
#include "core/env/manual_env.h"
#include "core/master/master_service.h"
#include "core/replication/replicated_master.h"
#include "core/worker/local_master_client.h"
#include "core/worker/store_worker.h"
#include "gtest/gtest.h"
#include "tests/core/master/master_test_util.h"
#include "tests/core/replication/replicated_master_test_peer.h"
#include "tests/core/worker/forwarding_master_client.h"

namespace heatsink {
namespace {

using testing::Name;
using testing::TestKnobs;

constexpr uint64_t kSegmentBytes = 1 << 20;

// Holds every copy until the test completes it.
class HeldDataMover final : public DataMover {
 public:
  void StartCopy(const CopyRange&, absl::AnyInvocable<void(absl::Status) &&> done) override {
    pending.push_back(std::move(done));
  }
  std::deque<absl::AnyInvocable<void(absl::Status) &&>> pending;
};

// Forwards to whichever master is current: the "network address" of the
// master, which a restart points at a new process.
class SwitchableMasterClient final : public testing::ForwardingMasterClient {
 public:
  void Set(MasterClient* m) { set_inner(m); }
};

MountSegmentRequest Segment(uint64_t id) {
  MountSegmentRequest m;
  m.segment_id = SegmentId(id);
  m.name = absl::StrCat("seg", id);
  m.capacity_bytes = kSegmentBytes;
  return m;
}

StoreWorkerOptions WorkerOptions(uint64_t client, uint64_t segment) {
  StoreWorkerOptions o;
  o.client_id = ClientId(client);
  o.host = absl::StrCat("host", client);
  o.segments = {Segment(segment)};
  o.heartbeat_interval_ms = 200;
  o.fetch_interval_ms = 50;
  o.retry_interval_ms = 100;
  o.fetch_batch_max = 2;
  o.copies_in_flight_max = 2;
  return o;
}

absl::StatusOr<GetReplicaListResponse> Read(MasterService& m, const std::string& key) {
  GetReplicaListRequest r;
  r.name = Name(key);
  return m.GetReplicaList(r);
}

absl::Status PutComplete(MasterService& m, const std::string& key, uint64_t size,
                         std::vector<SegmentId> segments, Version* version = nullptr) {
  PutStartRequest p;
  p.name = Name(key);
  p.size_bytes = size;
  p.replica_num = static_cast<uint32_t>(segments.size());
  p.preferred_segments = std::move(segments);
  absl::StatusOr<PutStartResponse> started = m.PutStart(ClientId(9), p);
  if (!started.ok()) return started.status();
  if (version != nullptr) *version = started->version;
  return m.PutEnd(ClientId(9), PutEndRequest{Name(key), started->version});
}

uint64_t UsedBytes(MasterService& m, uint64_t segment) {
  std::optional<SegmentView> v = m.GetSegment(SegmentId(segment));
  return v.has_value() ? v->used_bytes : 0;
}

class MasterRestartTest : public ::testing::Test {
 protected:
  MasterRestartTest() {
    knobs_ = TestKnobs();
    first_rm_ = NewMaster(knobs_);
    first_ = &ReplicatedMasterTestPeer::master(*first_rm_);
    first_client_ = std::make_unique<LocalMasterClient>(first_rm_.get(), &env_.executor());
    link_.Set(first_client_.get());
    for (uint64_t c : {1, 2}) {
      workers_.push_back(
          std::make_unique<StoreWorker>(env_.env(), &link_, &mover_, WorkerOptions(c, 10 + c)));
      workers_.back()->Start();
    }
    env_.AdvanceBy(MsToNs(100));
    HS_CHECK(workers_[0]->state() == StoreWorkerState::kRunning);
    HS_CHECK(workers_[1]->state() == StoreWorkerState::kRunning);
    HS_CHECK_OK(first_->RegisterClient(RegisterClientRequest{ClientId(9), "w", ""}));
  }

  // kill -9 of the master: its memory is gone; a new one answers at the
  // same address and waits for both stores.
  void Restart() {
    MasterKnobs k = knobs_;
    k.restart_grace_ms = 5'000;
    k.restart_expected_stores = 2;
    second_rm_ = NewMaster(k);
    second_ = &ReplicatedMasterTestPeer::master(*second_rm_);
    second_client_ = std::make_unique<LocalMasterClient>(second_rm_.get(), &env_.executor());
    link_.Set(second_client_.get());
    // The old master stays allocated (calls already posted to it may still
    // run) but nothing reaches it any more.
  }

  // The stores reach the master through LocalMasterClient, so through a
  // ReplicatedMaster (dynamic replication off); the test reads and drives
  // its MasterService.
  std::unique_ptr<ReplicatedMaster> NewMaster(const MasterKnobs& knobs) {
    absl::StatusOr<std::unique_ptr<ReplicatedMaster>> m =
        ReplicatedMaster::Create(env_.env(), knobs, ReplicationKnobs(), nullptr);
    HS_CHECK_OK(m.status());
    return *std::move(m);
  }

  ManualEnv env_;
  MasterKnobs knobs_;
  HeldDataMover mover_;
  SwitchableMasterClient link_;
  std::unique_ptr<ReplicatedMaster> first_rm_;
  MasterService* first_ = nullptr;
  std::unique_ptr<LocalMasterClient> first_client_;
  std::unique_ptr<ReplicatedMaster> second_rm_;
  MasterService* second_ = nullptr;
  std::unique_ptr<LocalMasterClient> second_client_;
  std::vector<std::unique_ptr<StoreWorker>> workers_;
};

TEST_F(MasterRestartTest, StoresRebuildEveryCompleteObjectAndNothingInFlight) {
  Version va = 0, vb = 0, vc = 0;
  HS_ASSERT_OK(PutComplete(*first_, "a", 1000, {SegmentId(11), SegmentId(12)}, &va));
  HS_ASSERT_OK(PutComplete(*first_, "b", 3000, {SegmentId(11)}, &vb));
  HS_ASSERT_OK(PutComplete(*first_, "c", 500, {SegmentId(12)}, &vc));
  // A put in flight and a copy of "b" to segment 12 in flight.
  PutStartRequest p;
  p.name = Name("p");
  p.size_bytes = 700;
  p.preferred_segments = {SegmentId(12)};
  absl::StatusOr<PutStartResponse> in_flight_put = first_->PutStart(ClientId(9), p);
  HS_ASSERT_OK(in_flight_put);
  HS_ASSERT_OK(first_->CreateCopyTask(CopyTaskRequest{Name("b"), SegmentId(12), SegmentId()}));
  env_.AdvanceBy(MsToNs(200));  // fetched, CopyStart'ed, transfer held
  ASSERT_EQ(mover_.pending.size(), 1u);
  // The workers hold the master's view: segment 11 has a, b; segment 12
  // has a, c, p (incomplete) and b's copy target (incomplete).
  EXPECT_EQ(workers_[0]->Manifest().size(), 2u);
  const std::vector<ManifestEntry> m2 = workers_[1]->Manifest();
  ASSERT_EQ(m2.size(), 4u);
  int incomplete = 0;
  for (const ManifestEntry& e : m2) incomplete += e.complete ? 0 : 1;
  EXPECT_EQ(incomplete, 2);
  EXPECT_EQ(first_->Stats().manifest_changes_pending, 0);  // acknowledged

  Restart();
  // Before the stores noticed: not NOT_FOUND, but a retryable UNAVAILABLE.
  absl::StatusOr<GetReplicaListResponse> early = Read(*second_, "a");
  HS_EXPECT_CODE(early, kUnavailable);
  EXPECT_TRUE(absl::StrContains(early.status().message(), "master_recovering"));
  PutStartRequest q;
  q.name = Name("new");
  q.size_bytes = 10;
  HS_EXPECT_CODE(second_->PutStart(ClientId(9), q), kUnavailable);

  // Heartbeats find the new master does not know them: they register again
  // and report.
  env_.AdvanceBy(MsToNs(600));
  EXPECT_FALSE(second_->Recovering());
  EXPECT_EQ(second_->Stats().objects, 3);
  absl::StatusOr<GetReplicaListResponse> a = Read(*second_, "a");
  HS_ASSERT_OK(a);
  EXPECT_EQ(a->version, va);
  EXPECT_EQ(a->replicas.size(), 2u);
  absl::StatusOr<GetReplicaListResponse> b = Read(*second_, "b");
  HS_ASSERT_OK(b);
  EXPECT_EQ(b->version, vb);
  ASSERT_EQ(b->replicas.size(), 1u);  // the copy target in flight is gone
  EXPECT_EQ(b->replicas[0].segment_id, SegmentId(11));
  EXPECT_EQ(Read(*second_, "c")->version, vc);
  HS_EXPECT_CODE(Read(*second_, "p"), kNotFound);
  HS_EXPECT_OK(second_->CheckInvariants());
  const MasterStats stats = second_->Stats();
  EXPECT_EQ(stats.manifest_entries_accepted_total, 4);
  EXPECT_EQ(stats.manifest_entries_discarded_total, 2);
  // The discarded ranges are held (a writer may still write), then freed.
  EXPECT_EQ(UsedBytes(*second_, 11), 1000u + 3000u);
  EXPECT_EQ(UsedBytes(*second_, 12), 1000u + 500u + 700u + 3000u);
  env_.AdvanceBy(SecToNs(knobs_.put_start_release_timeout_sec) + MsToNs(1'200));
  EXPECT_EQ(UsedBytes(*second_, 12), 1000u + 500u);
  EXPECT_EQ(workers_[1]->Manifest().size(), 2u);  // dropped what was not taken back

  // The held copy lands late: its CopyEnd meets a master that never heard
  // of the task, so nothing becomes readable.
  std::move(mover_.pending.front())(absl::OkStatus());
  mover_.pending.pop_front();
  env_.AdvanceBy(MsToNs(100));
  EXPECT_EQ(Read(*second_, "b")->replicas.size(), 1u);
  // New puts get versions above every reported one, and reach the stores'
  // manifests.
  Version vn = 0;
  HS_ASSERT_OK(PutComplete(*second_, "new", 10, {SegmentId(11)}, &vn));
  EXPECT_GT(vn, std::max({va, vb, vc, in_flight_put->version}));
  env_.AdvanceBy(MsToNs(200));
  EXPECT_EQ(workers_[0]->Manifest().size(), 3u);
  HS_EXPECT_OK(second_->CheckInvariants());
}

// A copy that outlives the crash must not end a task of the new master. The
// first master's copy of "b" (its task 1) is held mid-transfer; the new
// master, restarted with id epoch 1, creates its own copy of "b" to the same
// segment. When the old copy lands, its CopyEnd names task 1, which the new
// master never handed out (its ids start above IdBase(1)), so only the new
// copy, once its own bytes land, makes a second readable replica. Without
// the epoch both masters' first task would be task 1 and the old copy's
// CopyEnd would mark the new target, never written, readable.
TEST_F(MasterRestartTest, ACopyFromTheCrashedMasterCannotEndTheNewMastersTask) {
  Version vb = 0;
  HS_ASSERT_OK(PutComplete(*first_, "b", 3000, {SegmentId(11)}, &vb));
  absl::StatusOr<CopyTaskResponse> old_task =
      first_->CreateCopyTask(CopyTaskRequest{Name("b"), SegmentId(12), SegmentId()});
  HS_ASSERT_OK(old_task);
  EXPECT_EQ(old_task->task_id, TaskId(1));
  env_.AdvanceBy(MsToNs(200));  // fetched, CopyStart'ed, transfer held
  ASSERT_EQ(mover_.pending.size(), 1u);

  Restart();
  second_->SetIdEpoch(1);
  env_.AdvanceBy(MsToNs(600));  // the stores report; the recovery ends
  ASSERT_FALSE(second_->Recovering());
  absl::StatusOr<CopyTaskResponse> new_task =
      second_->CreateCopyTask(CopyTaskRequest{Name("b"), SegmentId(12), SegmentId()});
  HS_ASSERT_OK(new_task);
  EXPECT_EQ(new_task->task_id, TaskId(MasterService::IdBase(1) + 1));
  env_.AdvanceBy(MsToNs(200));
  ASSERT_EQ(mover_.pending.size(), 2u);

  // The old copy lands first: refused, nothing becomes readable.
  std::move(mover_.pending.front())(absl::OkStatus());
  mover_.pending.pop_front();
  env_.AdvanceBy(MsToNs(100));
  absl::StatusOr<GetReplicaListResponse> b = Read(*second_, "b");
  HS_ASSERT_OK(b);
  ASSERT_EQ(b->replicas.size(), 1u);
  EXPECT_EQ(b->replicas[0].segment_id, SegmentId(11));
  // The new copy lands: a second readable replica, on segment 12.
  std::move(mover_.pending.front())(absl::OkStatus());
  mover_.pending.pop_front();
  env_.AdvanceBy(MsToNs(100));
  b = Read(*second_, "b");
  HS_ASSERT_OK(b);
  EXPECT_EQ(b->version, vb);
  ASSERT_EQ(b->replicas.size(), 2u);
  HS_EXPECT_OK(second_->CheckInvariants());
}

TEST(MasterIdEpoch, IdBasesOfDifferentEpochsNeverOverlapAndEpochZeroKeepsIdsFromOne) {
  EXPECT_EQ(MasterService::IdBase(0), 0u);
  EXPECT_EQ(MasterService::IdBase(1), uint64_t{1} << MasterService::kIdEpochShift);
  // Epochs wrap at 2^24: the etcd revision or a random epoch keeps its low bits.
  EXPECT_EQ(MasterService::IdBase(uint32_t{1} << 24), 0u);
  EXPECT_EQ(MasterService::IdBase((uint32_t{1} << 24) - 1),
            ~uint64_t{0} - ((uint64_t{1} << MasterService::kIdEpochShift) - 1));
}

// A master without workers: reports are fed by hand.
// A store's read rules map a range to the objects it lies in with the
// worker's manifest (StoreWorker::ManifestOverlapping), and a read that
// arrives before the manifest knows its object waits for the next fetch
// (CallAfterNextFetch), which is answered once its changes are applied.
TEST_F(MasterRestartTest, TheManifestMapsRangesToObjectsAndFetchesAnswerWaiters) {
  HS_ASSERT_OK(PutComplete(*first_, "a", 1000, {SegmentId(11)}));
  EXPECT_TRUE(workers_[0]->ManifestOverlapping(SegmentId(11), 0, kSegmentBytes, 16).empty());
  size_t seen_by_waiter = 0;
  workers_[0]->CallAfterNextFetch([&] {
    seen_by_waiter = workers_[0]->ManifestOverlapping(SegmentId(11), 0, kSegmentBytes, 16).size();
  });
  EXPECT_EQ(seen_by_waiter, 0u);
  env_.AdvanceBy(MsToNs(60));  // one fetch left and was answered
  EXPECT_EQ(seen_by_waiter, 1u);
  HS_ASSERT_OK(PutComplete(*first_, "b", 500, {SegmentId(11)}));
  env_.AdvanceBy(MsToNs(60));
  const std::vector<ManifestEntry> all =
      workers_[0]->ManifestOverlapping(SegmentId(11), 0, kSegmentBytes, 16);
  ASSERT_EQ(all.size(), 2u);
  ASSERT_LT(all[0].offset, all[1].offset);
  const ManifestEntry& first = all[0];
  const ManifestEntry& second = all[1];
  // Inside the first object; from inside it into the second; the limit.
  std::vector<ManifestEntry> inside =
      workers_[0]->ManifestOverlapping(SegmentId(11), first.offset + 10, 20, 16);
  ASSERT_EQ(inside.size(), 1u);
  EXPECT_EQ(inside[0].name, first.name);
  EXPECT_EQ(workers_[0]
                ->ManifestOverlapping(SegmentId(11), first.offset + first.size_bytes - 1,
                                      second.offset - first.offset - first.size_bytes + 2, 16)
                .size(),
            2u);
  EXPECT_EQ(workers_[0]->ManifestOverlapping(SegmentId(11), 0, kSegmentBytes, 1).size(), 1u);
  // Past the last object, and another store's segment.
  EXPECT_TRUE(workers_[0]
                  ->ManifestOverlapping(SegmentId(11), second.offset + second.size_bytes, 100, 16)
                  .empty());
  EXPECT_TRUE(workers_[0]->ManifestOverlapping(SegmentId(12), 0, kSegmentBytes, 16).empty());
}

class ManifestReportTest : public ::testing::Test {
 protected:
  ManifestReportTest() {
    MasterKnobs k = TestKnobs();
    k.restart_grace_ms = 10'000;
    k.restart_expected_stores = 2;
    k.manifest_entries_per_report_max = 8;
    master_ = std::make_unique<MasterService>(env_.env(), k);
    for (uint64_t c : {1, 2}) {
      HS_CHECK_OK(master_->RegisterClient(RegisterClientRequest{ClientId(c), "h", ""}));
      MountSegmentRequest m = Segment(10 + c);
      m.manifest_pending = true;
      HS_CHECK_OK(master_->MountSegment(ClientId(c), m));
    }
  }
  static ManifestEntry Entry(const std::string& key, Version v, uint64_t segment, uint64_t offset,
                             uint64_t size, bool complete = true, const std::string& tenant = "") {
    ManifestEntry e;
    e.name = Name(key, tenant);
    e.version = v;
    e.segment_id = SegmentId(segment);
    e.offset = offset;
    e.size_bytes = size;
    e.complete = complete;
    return e;
  }
  ReportManifestResponse Report(uint64_t client, std::vector<ManifestEntry> entries, bool last) {
    ReportManifestRequest r;
    r.entries = std::move(entries);
    r.last = last;
    absl::StatusOr<ReportManifestResponse> out = master_->ReportManifest(ClientId(client), r);
    HS_CHECK_OK(out.status());
    return *out;
  }
  ManualEnv env_;
  std::unique_ptr<MasterService> master_;
};

TEST_F(ManifestReportTest, TheHighestCompleteVersionWinsAndOlderReplicasAreFreed) {
  EXPECT_TRUE(Report(1, {Entry("k", 3, 11, 0, 100)}, true).results[0].ok());
  EXPECT_EQ(master_->GetSegment(SegmentId(11))->used_bytes, 100u);
  // Store 2 holds a newer complete version: it wins, store 1's replica goes.
  ReportManifestResponse r2 = Report(2,
                                     {Entry("k", 5, 12, 0, 200), Entry("j", 9, 12, 200, 10,
                                                                       /*complete=*/false)},
                                     true);
  EXPECT_TRUE(r2.results[0].ok()) << r2.results[0];
  HS_EXPECT_CODE(r2.results[1], kFailedPrecondition);
  EXPECT_FALSE(master_->Recovering());  // both expected stores reported
  absl::StatusOr<GetReplicaListResponse> k = Read(*master_, "k");
  HS_ASSERT_OK(k);
  EXPECT_EQ(k->version, 5u);
  EXPECT_EQ(k->size_bytes, 200u);
  ASSERT_EQ(k->replicas.size(), 1u);
  EXPECT_EQ(k->replicas[0].segment_id, SegmentId(12));
  EXPECT_EQ(master_->GetSegment(SegmentId(11))->used_bytes, 0u);
  // The counter restarts above every reported version, the incomplete one too.
  PutStartRequest p;
  p.name = Name("fresh");
  p.size_bytes = 1;
  p.preferred_segments = {SegmentId(11)};
  HS_ASSERT_OK(master_->RegisterClient(RegisterClientRequest{ClientId(9), "w", ""}));
  absl::StatusOr<PutStartResponse> fresh = master_->PutStart(ClientId(9), p);
  HS_ASSERT_OK(fresh);
  EXPECT_EQ(fresh->version, 10u);
  // After the recovery an older report loses to the master's object.
  ReportManifestResponse late = Report(1, {Entry("k", 4, 11, 512, 200)}, true);
  HS_EXPECT_CODE(late.results[0], kAborted);
  EXPECT_EQ(master_->GetSegment(SegmentId(11))->used_bytes, 1u);  // only "fresh"
  HS_EXPECT_OK(master_->CheckInvariants());
}

TEST_F(ManifestReportTest, BadEntriesAreRejectedNamingTheStoreAndTheRestIsApplied) {
  master_->SetKnownTenants({"default", "alpha"});
  ReportManifestResponse r =
      Report(1,
             {Entry("ok", 1, 11, 0, 100), Entry("overlap", 2, 11, 50, 100),
              Entry("beyond", 3, 11, kSegmentBytes - 10, 100),
              Entry("stranger", 4, 11, 4096, 10, true, "beta"), Entry("not-mine", 5, 12, 0, 10),
              Entry("zero", 0, 11, 8192, 10), Entry("ok2", 6, 11, 200, 100, true, "alpha")},
             false);
  ASSERT_EQ(r.results.size(), 7u);
  EXPECT_TRUE(r.results[0].ok());
  HS_EXPECT_CODE(r.results[1], kAlreadyExists);
  HS_EXPECT_CODE(r.results[2], kOutOfRange);
  HS_EXPECT_CODE(r.results[3], kInvalidArgument);
  HS_EXPECT_CODE(r.results[4], kPermissionDenied);
  HS_EXPECT_CODE(r.results[5], kInvalidArgument);
  EXPECT_TRUE(r.results[6].ok());
  for (size_t i = 1; i < 6; ++i) {
    EXPECT_TRUE(absl::StrContains(r.results[i].message(), "store 1")) << r.results[i];
  }
  EXPECT_EQ(master_->Stats().manifest_entries_rejected_total, 5);
  // A report above manifest_entries_per_report_max is refused whole.
  ReportManifestRequest big;
  big.entries.assign(9, Entry("many", 7, 11, 4096, 1));
  HS_EXPECT_CODE(master_->ReportManifest(ClientId(1), big), kResourceExhausted);
  EXPECT_EQ(master_->GetSegment(SegmentId(11))->used_bytes, 200u);
  HS_EXPECT_OK(master_->CheckInvariants());
}

TEST_F(ManifestReportTest, PendingSegmentsTakeNothingNewUntilTheLastReport) {
  master_->BeginRecovery(0, 0);  // not recovering: only the pending state holds puts back
  HS_ASSERT_OK(master_->RegisterClient(RegisterClientRequest{ClientId(9), "w", ""}));
  PutStartRequest p;
  p.name = Name("x");
  p.size_bytes = 10;
  HS_EXPECT_CODE(master_->PutStart(ClientId(9), p), kResourceExhausted);
  Report(1, {Entry("old", 1, 11, 0, 10)}, false);
  HS_EXPECT_CODE(master_->PutStart(ClientId(9), p), kResourceExhausted);
  Report(1, {}, true);
  absl::StatusOr<PutStartResponse> placed = master_->PutStart(ClientId(9), p);
  HS_ASSERT_OK(placed);
  ASSERT_EQ(placed->replicas.size(), 1u);
  EXPECT_EQ(placed->replicas[0].segment_id, SegmentId(11));
  EXPECT_GE(placed->replicas[0].offset, 10u);  // never over the reported range
  // Nothing was evicted for the refused puts (evicting could not make room
  // on a pending segment).
  HS_EXPECT_OK(Read(*master_, "old"));
  EXPECT_EQ(master_->Stats().evicted_objects_total, 0);
}

TEST_F(ManifestReportTest, DynamicReplicasComeBackDynamicWithoutALease) {
  ManifestEntry original = Entry("hot", 2, 11, 0, 64);
  ManifestEntry copy = Entry("hot", 2, 12, 0, 64);
  copy.origin = ReplicaOrigin::kCopy;
  copy.dynamic = true;
  copy.lease_id = LeaseId(77);
  Report(1, {original}, true);
  EXPECT_TRUE(Report(2, {copy}, true).results[0].ok());
  absl::StatusOr<ObjectView> view = master_->GetObjectView(Name("hot"));
  HS_ASSERT_OK(view);
  ASSERT_EQ(view->replicas.size(), 2u);
  EXPECT_FALSE(view->replicas[0].dynamic);
  EXPECT_TRUE(view->replicas[1].dynamic);
  EXPECT_FALSE(view->replicas[1].lease_id.valid());
  EXPECT_EQ(view->replicas[1].status, ReplicaStatus::kComplete);
  // Optional: eviction takes it before any object.
  EXPECT_GT(master_->Evict(1), 0u);
  EXPECT_EQ(master_->GetObjectView(Name("hot"))->replicas.size(), 1u);
}

// The dynamic replica cap holds for late reports (found by the swarm: a
// store that reports after the others brought an object back to its cap).
// With a cap of one: a reported dynamic replica beyond it is refused and
// freed; a reported ordinary replica beyond it is taken and the dynamic one
// goes instead (unique data never loses to an optional copy).
TEST_F(ManifestReportTest, LateReportsRespectTheDynamicReplicaCapAndOrdinaryDataWins) {
  master_->SetReportedDynamicReplicaCap(1, /*per_domain=*/false);
  ManifestEntry original = Entry("a", 2, 11, 0, 64);
  ManifestEntry copy = Entry("a", 2, 12, 0, 64);
  copy.origin = ReplicaOrigin::kCopy;
  copy.dynamic = true;
  EXPECT_TRUE(Report(1, {original}, false).results[0].ok());
  const absl::Status refused = Report(2, {copy}, false).results[0];
  HS_EXPECT_CODE(refused, kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(refused.message(), "dynamic_replication_max_memory_replicas"))
      << refused;
  absl::StatusOr<ObjectView> a = master_->GetObjectView(Name("a"));
  HS_ASSERT_OK(a);
  ASSERT_EQ(a->replicas.size(), 1u);
  EXPECT_EQ(a->replicas[0].segment_id, SegmentId(11));

  // The other order: the dynamic replica first, then the original.
  ManifestEntry copy_b = Entry("b", 2, 12, 64, 64);
  copy_b.origin = ReplicaOrigin::kCopy;
  copy_b.dynamic = true;
  EXPECT_TRUE(Report(2, {copy_b}, true).results[0].ok());
  EXPECT_TRUE(Report(1, {Entry("b", 2, 11, 64, 64)}, true).results[0].ok());
  absl::StatusOr<ObjectView> b = master_->GetObjectView(Name("b"));
  HS_ASSERT_OK(b);
  ASSERT_EQ(b->replicas.size(), 1u);
  EXPECT_EQ(b->replicas[0].segment_id, SegmentId(11));
  EXPECT_FALSE(b->replicas[0].dynamic);
  HS_EXPECT_OK(master_->CheckInvariants());
}

// A master without the manifest journal (the simulator's) carries no
// manifest changes to its stores; with it (the default), every replica
// change is pending for the store that owns the segment until fetched.
TEST(ManifestJournal, ADisabledJournalCarriesNoChanges) {
  ManualEnv env;
  for (const bool enabled : {true, false}) {
    MasterService m(env.env(), TestKnobs());
    if (!enabled) m.DisableManifestJournal();
    for (uint64_t c : {1, 9}) {
      HS_ASSERT_OK(m.RegisterClient(RegisterClientRequest{ClientId(c), "h", ""}));
    }
    HS_ASSERT_OK(m.MountSegment(ClientId(1), Segment(11)));
    HS_ASSERT_OK(PutComplete(m, "a", 1000, {SegmentId(11)}));
    EXPECT_EQ(m.Stats().manifest_changes_pending > 0, enabled);
    absl::StatusOr<FetchTasksResponse> fetched = m.FetchTasks(ClientId(1), 1, 0);
    HS_ASSERT_OK(fetched);
    EXPECT_EQ(fetched->manifest_changes.empty(), !enabled) << enabled;
  }
  // Only before the first segment: stores' manifests would be half kept.
  MasterService late(env.env(), TestKnobs());
  HS_ASSERT_OK(late.RegisterClient(RegisterClientRequest{ClientId(1), "h", ""}));
  HS_ASSERT_OK(late.MountSegment(ClientId(1), Segment(11)));
  EXPECT_DEATH(late.DisableManifestJournal(), "DisableManifestJournal after a segment");
}

}  // namespace
}  // namespace heatsink
