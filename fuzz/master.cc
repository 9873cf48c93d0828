// Fuzz target: request sequences against MasterService on a ManualEnv.
//
// The input decodes into at most kOpsMax operations over a small universe (4
// clients, 6 segment ids, 6 keys, 2 tenants) with TestMin knobs, so limits,
// timeouts, eviction and the sweep are all reached: register, heartbeat,
// mount, unmount, PutStart/End/Revoke, Get, BatchGet, Remove, CreateCopyTask,
// CreateCopyTaskForPlan, FetchTasks, (Leased)CopyStart/End/Revoke,
// MarkTaskComplete, CancelCopyTask, Evict, Sweep and clock advances (which run
// the master's timers; optionally with every client heartbeating). Fences are
// presented either as the master issued them or perturbed (stale version,
// wrong lease id, wrong client).
//
// After every operation:
// - MasterService::CheckInvariants() is OK (segment used + reserved equals
//   its replicas, discarded puts and reservations; no replica with a stale
//   version; task and replica tables agree);
// - every segment view satisfies free = capacity - used - reserved and
//   used + reserved <= capacity, and the stats total the views;
// - every tracked object's view has only replicas of its own version, on
//   mounted segments, at most one per segment.
// Per operation, what master_service.h promises:
// - PutStart versions strictly increase across the whole run;
// - GetReplicaList returns only COMPLETE replicas of the returned version,
//   and a lease expiry in the future;
// - a read-leased object is never removed by Remove or eviction before its
//   lease expires (the removal observer sees every removal);
// - a copy call with a stale fence (wrong version or lease id) never
//   succeeds.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/env/manual_env.h"
#include "core/env/time.h"
#include "core/master/master_knobs.h"
#include "core/master/master_observers.h"
#include "core/master/master_service.h"
#include "core/master/master_types.h"
#include "fuzz/fuzz_util.h"

namespace heatsink {
namespace {

constexpr int kOpsMax = 256;
using fuzz::kClients;
using fuzz::kNames;
using fuzz::kSegments;
using fuzz::NameOf;
using fuzz::Normal;
using fuzz::Pick;

class Harness final : public ReplicaRemovalObserver {
 public:
  explicit Harness(const MasterKnobs& knobs, uint64_t seed) : env_(seed) {
    master_ = std::make_unique<MasterService>(env_.env(), knobs);
    master_->SetReplicaRemovalObserver(this);
  }
  ~Harness() override { master_->SetReplicaRemovalObserver(nullptr); }

  void OnReplicaRemoved(const ReplicaRemoval& r) override {
    auto it = lease_expiry_.find(Normal(r.name));
    if (it == lease_expiry_.end()) return;
    if (r.cause == RemovalCause::kEviction || r.cause == RemovalCause::kRemove) {
      HS_CHECK_MSG(IsExpired(r.t_ns, it->second),
                   absl::StrCat("read-leased object ", r.name.tenant, "/", r.name.key,
                                " removed (", RemovalCauseName(r.cause), ") at ", r.t_ns,
                                " before its lease expiry ", it->second));
    }
    if (r.object_deleted) lease_expiry_.erase(it);
  }

  void Step(FuzzedDataProvider& in) {
    const uint64_t client = in.ConsumeIntegralInRange<uint64_t>(1, kClients);
    const uint64_t segment = in.ConsumeIntegralInRange<uint64_t>(1, kSegments);
    const int key = in.ConsumeIntegralInRange<int>(0, kNames - 1);
    switch (in.ConsumeIntegralInRange<int>(0, 22)) {
      case 0: {
        (void)master_->RegisterClient(RegisterClientRequest{
            ClientId(client), fuzz::HostOf(client), fuzz::DomainOf(client)});
        break;
      }
      case 1: (void)master_->Heartbeat(ClientId(client)); break;
      case 2: {
        MountSegmentRequest req;
        req.segment_id = SegmentId(segment);
        req.name = absl::StrCat("s", segment);
        req.host = fuzz::HostOf(client);
        req.domain = fuzz::DomainOf(client);
        static constexpr uint64_t kCapacities[] = {0, 64, 100, 256, 1000, 4096};
        req.capacity_bytes = kCapacities[in.ConsumeIntegralInRange<size_t>(0, 5)];
        req.transport_endpoint = absl::StrCat("tcp://h", client);
        req.allocatable = in.ConsumeIntegralInRange<int>(0, 3) != 0;
        (void)master_->MountSegment(ClientId(client), req);
        break;
      }
      case 3: (void)master_->UnmountSegment(ClientId(client), SegmentId(segment)); break;
      case 4: {
        PutStartRequest req;
        req.name = NameOf(key);
        static constexpr uint64_t kSizes[] = {0, 1, 16, 64, 100, 1000};
        req.size_bytes = kSizes[in.ConsumeIntegralInRange<size_t>(0, 5)];
        req.replica_num = in.ConsumeIntegralInRange<uint32_t>(0, 4);
        const size_t preferred = in.ConsumeIntegralInRange<size_t>(0, 3);
        for (size_t i = 0; i < preferred; ++i) {
          req.preferred_segments.push_back(
              SegmentId(in.ConsumeIntegralInRange<uint64_t>(0, kSegments)));
        }
        const absl::StatusOr<PutStartResponse> r = master_->PutStart(ClientId(client), req);
        if (r.ok()) {
          HS_CHECK_MSG(r->version > last_version_, "PutStart version did not increase");
          last_version_ = r->version;
          puts_[Normal(req.name)] = {ClientId(client), r->version};
          lease_expiry_.erase(Normal(req.name));  // a new object: no read lease yet
          HS_CHECK(r->replicas.size() == req.replica_num);
          for (const ReplicaDescriptor& d : r->replicas) {
            HS_CHECK(d.version == r->version && d.status == ReplicaStatus::kProcessing);
          }
        }
        break;
      }
      case 5:
      case 6: {
        const ObjectName name = NameOf(key);
        auto it = puts_.find(Normal(name));
        ClientId writer(client);
        Version version = in.ConsumeIntegralInRange<Version>(0, last_version_ + 1);
        if (it != puts_.end() && in.ConsumeBool()) {
          writer = it->second.first;
          version = it->second.second;
        }
        if (in.ConsumeBool()) {
          (void)master_->PutEnd(writer, PutEndRequest{name, version});
        } else {
          (void)master_->PutRevoke(writer, PutRevokeRequest{name, version});
        }
        break;
      }
      case 7: {
        GetReplicaListRequest req{NameOf(key), ClientId(client), fuzz::DomainOf(client)};
        const absl::StatusOr<GetReplicaListResponse> r = master_->GetReplicaList(req);
        if (r.ok()) CheckRead(req.name, *r);
        break;
      }
      case 8: {
        BatchGetReplicaListRequest req;
        req.requester = ClientId(client);
        const size_t n = in.ConsumeIntegralInRange<size_t>(0, 5);
        for (size_t i = 0; i < n; ++i) {
          req.names.push_back(NameOf(in.ConsumeIntegralInRange<int>(0, kNames - 1)));
        }
        const absl::StatusOr<BatchGetReplicaListResponse> r = master_->BatchGetReplicaList(req);
        if (r.ok()) {
          HS_CHECK(r->results.size() == req.names.size());
          for (size_t i = 0; i < n; ++i) {
            if (r->results[i].ok()) CheckRead(req.names[i], *r->results[i]);
          }
        }
        break;
      }
      case 9: {
        const ObjectName name = NameOf(key);
        const absl::Status s = master_->Remove(RemoveRequest{name});
        if (s.ok()) {
          auto it = lease_expiry_.find(Normal(name));
          HS_CHECK_MSG(it == lease_expiry_.end() || IsExpired(env_.NowNs(), it->second),
                       "Remove succeeded on a read-leased object");
        }
        break;
      }
      case 10: {
        CopyTaskRequest req{NameOf(key), SegmentId(segment),
                            SegmentId(in.ConsumeIntegralInRange<uint64_t>(0, kSegments))};
        Remember(master_->CreateCopyTask(req));
        break;
      }
      case 11: {
        // A leased plan built from the object's current view, possibly stale.
        const absl::StatusOr<ObjectView> view = master_->GetObjectView(NameOf(key));
        CopyPlan plan;
        plan.name = NameOf(key);
        plan.target_segment = SegmentId(segment);
        plan.lease_id = LeaseId(in.ConsumeIntegralInRange<uint64_t>(0, 3));
        if (view.ok() && !view->replicas.empty()) {
          plan.version = view->version;
          plan.source_replica =
              view->replicas[Pick(in, view->replicas.size())]
                  .replica_id;
        }
        if (in.ConsumeBool()) plan.version = Pick(in, last_version_ + 1);
        Remember(master_->CreateCopyTaskForPlan(plan));
        break;
      }
      case 12: {
        const absl::StatusOr<FetchTasksResponse> r =
            master_->FetchTasks(ClientId(client), in.ConsumeIntegralInRange<size_t>(0, 3));
        if (r.ok()) {
          for (const Task& t : r->tasks) {
            HS_CHECK(t.assigned_client == ClientId(client));
            HS_CHECK(t.status == TaskStatus::kProcessing);
          }
        }
        break;
      }
      case 13:
      case 14:
      case 15: {
        if (tasks_.empty()) break;
        const Issued& t = tasks_[Pick(in, tasks_.size())];
        CopyTaskFence fence = t.fence;
        ClientId caller = t.client;
        bool stale = false;
        switch (in.ConsumeIntegralInRange<int>(0, 5)) {
          case 0: fence.version += 1; stale = true; break;
          case 1: fence.lease_id = LeaseId(fence.lease_id.value + 1); stale = true; break;
          case 2: caller = ClientId(client); break;
          default: break;
        }
        const bool leased = t.fence.lease_id.valid();
        const bool use_leased = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? !leased : leased;
        absl::Status s;
        const int call = in.ConsumeIntegralInRange<int>(0, 2);
        if (call == 0) {
          s = use_leased ? master_->LeasedCopyStart(caller, fence).status()
                         : master_->CopyStart(caller, fence).status();
        } else if (call == 1) {
          s = use_leased ? master_->LeasedCopyEnd(caller, fence)
                         : master_->CopyEnd(caller, fence);
        } else {
          s = use_leased ? master_->LeasedCopyRevoke(caller, fence)
                         : master_->CopyRevoke(caller, fence);
        }
        HS_CHECK_MSG(!stale || !s.ok(), "a copy call with a stale fence succeeded");
        break;
      }
      case 16: {
        if (tasks_.empty()) break;
        const Issued& t = tasks_[Pick(in, tasks_.size())];
        const ClientId caller = in.ConsumeBool() ? t.client : ClientId(client);
        (void)master_->MarkTaskComplete(
            caller, MarkTaskCompleteRequest{t.fence.task_id, in.ConsumeBool(), "fuzz"});
        break;
      }
      case 17: {
        if (tasks_.empty()) break;
        const Issued& t = tasks_[Pick(in, tasks_.size())];
        (void)master_->CancelCopyTask(t.fence.task_id);
        break;
      }
      case 18: (void)master_->Evict(in.ConsumeIntegralInRange<uint64_t>(0, 2000)); break;
      case 19: master_->Sweep(); break;
      default: {
        static constexpr DurationNs kSteps[] = {1, MsToNs(50), MsToNs(250), MsToNs(1'000),
                                               SecToNs(3), SecToNs(10)};
        DurationNs d = kSteps[in.ConsumeIntegralInRange<size_t>(0, 5)];
        if (in.ConsumeBool()) {
          env_.AdvanceBy(d);
          break;
        }
        // Live clients: heartbeat every 250 ms, as a store worker does, so
        // long copies reach their timeouts instead of dying with the client.
        while (d > 0) {
          const DurationNs s = std::min<DurationNs>(d, MsToNs(250));
          env_.AdvanceBy(s);
          d -= s;
          for (uint64_t c = 1; c <= kClients; ++c) (void)master_->Heartbeat(ClientId(c));
        }
        break;
      }
    }
    CheckState();
  }

 private:
  struct Issued {
    CopyTaskFence fence;
    ClientId client;
  };

  void Remember(const absl::StatusOr<CopyTaskResponse>& r) {
    if (!r.ok()) return;
    HS_CHECK(r->task_id.valid());
    if (tasks_.size() >= 16) tasks_.erase(tasks_.begin());
    tasks_.push_back(
        Issued{CopyTaskFence{r->task_id, r->payload.version, r->payload.lease_id},
               r->source_client});
  }

  void CheckRead(const ObjectName& name, const GetReplicaListResponse& r) {
    HS_CHECK(!r.replicas.empty());
    HS_CHECK_MSG(r.lease_expiry_ns > env_.NowNs(), "read lease already expired");
    std::vector<SegmentId> segments;
    for (const ReplicaDescriptor& d : r.replicas) {
      HS_CHECK_MSG(d.status == ReplicaStatus::kComplete, "unreadable replica handed out");
      HS_CHECK_MSG(d.version == r.version, "replica with a stale version handed out");
      HS_CHECK(d.size_bytes == r.size_bytes);
      HS_CHECK(d.location != nullptr && d.location->id == d.segment_id);
      HS_CHECK(master_->GetSegment(d.segment_id).has_value());
      segments.push_back(d.segment_id);
    }
    std::sort(segments.begin(), segments.end());
    HS_CHECK(std::adjacent_find(segments.begin(), segments.end()) == segments.end());
    TimeNs& expiry = lease_expiry_[Normal(name)];
    expiry = std::max(expiry, r.lease_expiry_ns);
  }

  void CheckState() {
    const absl::Status inv = master_->CheckInvariants();
    HS_CHECK_MSG(inv.ok(), inv.ToString());
    uint64_t used = 0;
    uint64_t reserved = 0;
    uint64_t capacity = 0;
    const std::vector<SegmentView> segments = master_->ListSegments();
    for (const SegmentView& s : segments) {
      HS_CHECK(s.used_bytes + s.reserved_bytes <= s.capacity_bytes);
      HS_CHECK(s.free_bytes == s.capacity_bytes - s.used_bytes - s.reserved_bytes);
      used += s.used_bytes;
      reserved += s.reserved_bytes;
      capacity += s.capacity_bytes;
    }
    const MasterStats stats = master_->Stats();
    HS_CHECK(stats.segments == static_cast<int64_t>(segments.size()));
    HS_CHECK(stats.used_bytes == used && stats.reserved_bytes == reserved &&
             stats.capacity_bytes == capacity);
    for (int key = 0; key < kNames; ++key) {
      const absl::StatusOr<ObjectView> v = master_->GetObjectView(NameOf(key));
      if (!v.ok()) {
        HS_CHECK_MSG(v.status().code() == absl::StatusCode::kNotFound, v.status().ToString());
        lease_expiry_.erase(Normal(NameOf(key)));
        continue;
      }
      std::vector<SegmentId> on;
      for (const ReplicaDescriptor& d : v->replicas) {
        HS_CHECK_MSG(d.version == v->version, "replica with a stale version");
        HS_CHECK(master_->GetSegment(d.segment_id).has_value());
        on.push_back(d.segment_id);
      }
      std::sort(on.begin(), on.end());
      HS_CHECK(std::adjacent_find(on.begin(), on.end()) == on.end());
    }
  }

  ManualEnv env_;
  std::unique_ptr<MasterService> master_;
  Version last_version_ = 0;
  std::map<ObjectName, std::pair<ClientId, Version>> puts_;
  std::map<ObjectName, TimeNs> lease_expiry_;
  std::vector<Issued> tasks_;
};

}  // namespace
}  // namespace heatsink

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  heatsink::MasterKnobs knobs = heatsink::MasterKnobs::TestMin();
  const uint8_t setup = in.ConsumeIntegral<uint8_t>();
  knobs.allocation_strategy = (setup & 1) != 0 ? heatsink::AllocationStrategy::kFreeRatioFirst
                                               : heatsink::AllocationStrategy::kRandom;
  knobs.metadata_shards = 1 + ((setup >> 1) & 3);
  knobs.eviction_high_watermark_ratio = (setup & 8) != 0 ? 0.5 : 0.9;
  heatsink::Harness harness(knobs, /*seed=*/setup);
  for (int i = 0; i < heatsink::kOpsMax && in.remaining_bytes() > 0; ++i) harness.Step(in);
  return 0;
}
