// Multi-threaded stress of MasterService: threads put, read, remove, copy and
// unmount/remount concurrently on a small cluster (so eviction and allocation
// failures happen often), while another thread runs the sweep and checks
// invariants. At the end every segment's used + reserved bytes equal the
// bytes of the replicas on it, and CheckInvariants passes. Meant to run under
// ThreadSanitizer (label slow).
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/env/manual_env.h"
#include "core/env/rng.h"
#include "core/master/master_service.h"
#include "gtest/gtest.h"

namespace heatsink {
namespace {

constexpr int kThreads = 4;
constexpr int kOpsPerThread = 3'000;
constexpr int kKeys = 64;
constexpr uint64_t kSegments = 4;

MasterKnobs StressKnobs() {
  MasterKnobs k = MasterKnobs::Production();
  k.metadata_shards = 8;
  k.default_kv_lease_ttl_ms = 1;
  k.client_live_ttl_sec = 1'000'000;
  k.eviction_ratio = 0.2;
  return k;
}

ObjectName Key(uint64_t i) { return ObjectName{i % 2 == 0 ? "" : "t1", "key" + std::to_string(i)}; }

void Worker(MasterService* master, ManualClock* clock, int thread, std::atomic<int64_t>* ok_ops) {
  Rng rng(1000 + static_cast<uint64_t>(thread));
  const ClientId writer(100 + static_cast<uint64_t>(thread));
  for (int op = 0; op < kOpsPerThread; ++op) {
    const ObjectName name = Key(rng.Uniform(kKeys));
    const uint64_t dice = rng.Uniform(100);
    if (dice < 35) {
      PutStartRequest req{name, 64 + rng.Uniform(512), 1 + static_cast<uint32_t>(rng.Uniform(2)),
                          {}};
      if (rng.Bernoulli(1, 4)) req.preferred_segments.push_back(SegmentId(1 + rng.Uniform(kSegments)));
      absl::StatusOr<PutStartResponse> s = master->PutStart(writer, req);
      if (!s.ok()) continue;
      if (rng.Bernoulli(1, 8)) {
        (void)master->PutRevoke(writer, PutRevokeRequest{name, s->version});
      } else {
        (void)master->PutEnd(writer, PutEndRequest{name, s->version});
      }
      ok_ops->fetch_add(1, std::memory_order_relaxed);
    } else if (dice < 70) {
      if (master->GetReplicaList(GetReplicaListRequest{name, writer, "d"}).ok()) {
        ok_ops->fetch_add(1, std::memory_order_relaxed);
      }
    } else if (dice < 78) {
      BatchGetReplicaListRequest req;
      req.names = {name, Key(rng.Uniform(kKeys))};
      (void)master->BatchGetReplicaList(req);
    } else if (dice < 88) {
      if (master->Remove(RemoveRequest{name}).ok()) ok_ops->fetch_add(1, std::memory_order_relaxed);
    } else if (dice < 96) {
      // A full copy run by whichever thread happens to own the source.
      absl::StatusOr<CopyTaskResponse> t = master->CreateCopyTask(
          CopyTaskRequest{name, SegmentId(1 + rng.Uniform(kSegments)), {}});
      if (!t.ok()) continue;
      absl::StatusOr<FetchTasksResponse> f = master->FetchTasks(t->source_client, 4);
      if (!f.ok()) continue;
      for (const Task& task : f->tasks) {
        const CopyTaskFence fence{task.id, task.copy.version, task.copy.lease_id};
        const bool started = master->CopyStart(task.assigned_client, fence).ok();
        bool ended = false;
        if (started) {
          ended = rng.Bernoulli(3, 4) ? master->CopyEnd(task.assigned_client, fence).ok()
                                      : !master->CopyRevoke(task.assigned_client, fence).ok();
        }
        (void)master->MarkTaskComplete(task.assigned_client, {task.id, ended, ""});
      }
    } else if (dice < 98) {
      (void)master->Evict();
    } else {
      // Unmount and remount one segment (its owner is client == segment id).
      const uint64_t s = 1 + rng.Uniform(kSegments);
      (void)master->UnmountSegment(ClientId(s), SegmentId(s));
      MountSegmentRequest m{SegmentId(s), "s", "h" + std::to_string(s), "", 16 * 1024, "e", true, ""};
      (void)master->MountSegment(ClientId(s), m);
    }
    if (thread == 0 && op % 64 == 0) clock->AdvanceBy(MsToNs(1));
  }
}

TEST(MasterStress, ConcurrentPutGetRemoveKeepsAccountingExact) {
  ManualEnv env(5);
  MasterService master(env.env(), StressKnobs());
  for (uint64_t s = 1; s <= kSegments; ++s) {
    ASSERT_TRUE(master.RegisterClient(RegisterClientRequest{ClientId(s), "h", ""}).ok());
    MountSegmentRequest m{SegmentId(s), "s", "h" + std::to_string(s), "", 16 * 1024, "e", true, ""};
    ASSERT_TRUE(master.MountSegment(ClientId(s), m).ok());
  }
  std::atomic<int64_t> ok_ops{0};
  std::atomic<bool> done{false};
  std::atomic<int64_t> checks{0};
  std::thread checker([&] {
    while (!done.load()) {
      master.Sweep();
      const absl::Status s = master.CheckInvariants();
      EXPECT_TRUE(s.ok()) << s;
      if (!s.ok()) break;
      checks.fetch_add(1);
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back(Worker, &master, &env.clock(), t, &ok_ops);
  }
  for (std::thread& t : threads) t.join();
  done.store(true);
  checker.join();
  env.RunUntilIdle();  // posted eviction passes

  const absl::Status final_check = master.CheckInvariants();
  ASSERT_TRUE(final_check.ok()) << final_check;
  EXPECT_GT(ok_ops.load(), kThreads * kOpsPerThread / 10);
  EXPECT_GT(checks.load(), 0);

  // used + reserved on every segment == bytes of the replicas on it (plus
  // discarded puts, none here: nothing was left stuck).
  std::map<SegmentId, uint64_t> replica_bytes;
  for (uint64_t i = 0; i < kKeys; ++i) {
    absl::StatusOr<ObjectView> v = master.GetObjectView(Key(i));
    if (!v.ok()) continue;
    for (const ReplicaDescriptor& r : v->replicas) replica_bytes[r.segment_id] += r.size_bytes;
  }
  uint64_t total = 0;
  for (const SegmentView& s : master.ListSegments()) {
    EXPECT_EQ(s.used_bytes + s.reserved_bytes, replica_bytes[s.location.id])
        << "segment " << s.location.id.value;
    total += s.used_bytes + s.reserved_bytes;
  }
  EXPECT_EQ(master.Stats().used_bytes + master.Stats().reserved_bytes, total);
  EXPECT_GT(master.Stats().eviction_passes_total, 0);
}

}  // namespace
}  // namespace heatsink
