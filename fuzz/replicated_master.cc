// Fuzz target: dynamic hot replication's proposal and copy paths
// (core/replication/replicated_master.h) on a ManualEnv.
//
// The input picks the mode (off, observe, enforce), domain-aware placement
// and warmup, then decodes into at most kOpsMax operations over the small
// universe of fuzz/fuzz_util.h with TestMin knobs: clients, segments, puts,
// reads (the heat path), removes, SubmitReplicaActionProposal with the
// object's current version and size or perturbed ones, the dynamic copy
// lifecycle (DynamicReplicaCopyStart/End/Revoke, on leases from proposals,
// the heat path and warmup) with the issued fence or a stale one, task
// fetches, warmup requests, admission passes and clock advances (which run
// lease expiry, cooldowns and the master's sweep).
//
// After every operation:
// - ReplicatedMaster::CheckInvariants() is OK (the master's segment
//   accounting and version checks, then dynamic replication's pending,
//   lease and replica records);
// - every pending action's lease is still live (expiry in the future);
// - no object holds more dynamic replicas than
//   dynamic_replication_max_memory_replicas (per domain when domain-aware),
//   and every dynamic replica is of its object's version;
// - every decision record sent to the sink has a reason exactly when it is
//   rejected, and its JSON line parses back (sim/decision_log.h) to the same
//   line.
// Per operation, what replica_action.h promises:
// - an accepted proposal's lease binds the proposal's version and size, ends
//   after now and no later than the proposal's expiration, and (enforce)
//   carries a lease and a task;
// - a rejected proposal carries its reason word, with RejectionCode(reason)
//   as its status code;
// - a dynamic copy call with a stale version or lease id never succeeds.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/env/manual_env.h"
#include "core/env/time.h"
#include "core/master/master_knobs.h"
#include "core/master/master_service.h"
#include "core/master/master_types.h"
#include "core/replication/decision.h"
#include "core/replication/replica_action.h"
#include "core/replication/replicated_master.h"
#include "core/replication/replication_knobs.h"
#include "fuzz/fuzz_util.h"
#include "sim/decision_log.h"

namespace heatsink {
namespace {

constexpr int kOpsMax = 256;
using fuzz::DomainOf;
using fuzz::HostOf;
using fuzz::kClients;
using fuzz::kNames;
using fuzz::kSegments;
using fuzz::NameOf;
using fuzz::Normal;
using fuzz::Pick;

// Checks every record as it arrives.
class CheckingSink final : public DecisionSink {
 public:
  void Record(const DecisionRecord& record) override {
    HS_CHECK_MSG(record.reason.has_value() == (record.outcome == DecisionOutcome::kRejected),
                 "reason set on a non-rejected decision or missing on a rejected one");
    const std::string line = FormatDecisionJson(record);
    const absl::StatusOr<std::vector<sim::LoggedDecision>> parsed =
        sim::ParseDecisionLog(line, "decisions.jsonl");
    HS_CHECK_MSG(parsed.ok() && parsed->size() == 1,
                 absl::StrCat(parsed.status().ToString(), " for ", line));
    HS_CHECK_MSG(FormatDecisionJson((*parsed)[0].record) == line, line);
    ++records;
  }
  int64_t records = 0;
};

class Harness {
 public:
  Harness(const MasterKnobs& master_knobs, const ReplicationKnobs& knobs, uint64_t seed)
      : env_(seed), knobs_(knobs) {
    absl::StatusOr<std::unique_ptr<ReplicatedMaster>> m =
        ReplicatedMaster::Create(env_.env(), master_knobs, knobs, &sink_);
    HS_CHECK_OK(m.status());
    m_ = *std::move(m);
  }

  void Step(FuzzedDataProvider& in) {
    const uint64_t client = in.ConsumeIntegralInRange<uint64_t>(1, kClients);
    const uint64_t segment = in.ConsumeIntegralInRange<uint64_t>(1, kSegments);
    const int key = in.ConsumeIntegralInRange<int>(0, kNames - 1);
    ReplicatedMaster& master = *m_;
    switch (in.ConsumeIntegralInRange<int>(0, 15)) {
      case 0:
        (void)master.RegisterClient(
            RegisterClientRequest{ClientId(client), HostOf(client), DomainOf(client)});
        break;
      case 1: {
        MountSegmentRequest req;
        req.segment_id = SegmentId(segment);
        req.name = absl::StrCat("s", segment);
        req.host = HostOf(client);
        req.domain = DomainOf(client);
        static constexpr uint64_t kCapacities[] = {64, 256, 1000, 4096};
        req.capacity_bytes = kCapacities[Pick(in, 4)];
        req.transport_endpoint = absl::StrCat("tcp://", HostOf(client));
        req.allocatable = Pick(in, 4) != 0;
        (void)master.MountSegment(ClientId(client), req);
        break;
      }
      case 2: (void)master.UnmountSegment(ClientId(client), SegmentId(segment)); break;
      case 3: {
        // A whole put (start and end), the common case of the heat path.
        PutStartRequest req;
        req.name = NameOf(key);
        static constexpr uint64_t kSizes[] = {1, 16, 64, 200};
        req.size_bytes = kSizes[Pick(in, 4)];
        req.replica_num = 1 + static_cast<uint32_t>(Pick(in, 2));
        const absl::StatusOr<PutStartResponse> r = master.PutStart(ClientId(client), req);
        if (r.ok() && Pick(in, 4) != 0) {
          (void)master.PutEnd(ClientId(client), PutEndRequest{req.name, r->version});
        }
        break;
      }
      case 4:
      case 5: {
        // Reads feed the heat window; repeated reads of a key admit it.
        const int reads = 1 + static_cast<int>(Pick(in, 3));
        for (int i = 0; i < reads; ++i) {
          (void)master.GetReplicaList(
              GetReplicaListRequest{NameOf(key), ClientId(client), DomainOf(client)});
        }
        break;
      }
      case 6: (void)master.Remove(RemoveRequest{NameOf(key)}); break;
      case 7: Propose(in, key); break;
      case 8:
      case 9: CopyCall(in, client); break;
      case 10: {
        const absl::StatusOr<FetchTasksResponse> r = master.FetchTasks(ClientId(client), 2, 0);
        if (r.ok()) {
          for (const Task& t : r->tasks) HS_CHECK(t.assigned_client == ClientId(client));
        }
        break;
      }
      case 11: {
        static const char* const kDomains[] = {"d1", "default", "", "no such"};
        (void)m_->RequestWarmup(kDomains[Pick(in, 4)]);
        break;
      }
      case 12: (void)m_->replication().RunAdmission(); break;
      case 13: (void)master.Evict(Pick(in, 4) * 100); break;
      default: {
        static constexpr DurationNs kSteps[] = {1, MsToNs(100), MsToNs(300), MsToNs(600),
                                               SecToNs(2), SecToNs(5)};
        DurationNs d = kSteps[Pick(in, 6)];
        const bool heartbeats = Pick(in, 2) == 0;
        while (d > 0) {
          const DurationNs s = std::min<DurationNs>(d, MsToNs(250));
          env_.AdvanceBy(s);
          d -= s;
          if (!heartbeats) continue;
          for (uint64_t c = 1; c <= kClients; ++c) (void)master.Heartbeat(ClientId(c));
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

  void Propose(FuzzedDataProvider& in, int key) {
    static const char* const kDomains[] = {"", "d1", "default", "bad domain"};
    ReplicaActionProposal p;
    p.proposal_id = ProposalId(Pick(in, 4));
    p.name = NameOf(key);
    p.requester_domain = kDomains[Pick(in, 4)];
    p.target_domain = kDomains[Pick(in, 4)];
    const absl::StatusOr<ObjectView> view = m_->master().GetObjectView(p.name);
    if (view.ok()) {
      p.observed_version = view->version;
      p.expected_size_bytes = view->size_bytes;
    }
    switch (Pick(in, 6)) {
      case 0: p.observed_version += 1; break;
      case 1: p.expected_size_bytes += 1; break;
      default: break;
    }
    if (Pick(in, 4) == 0) p.preferred_target_segment = SegmentId(1 + Pick(in, kSegments));
    static constexpr DurationNs kDeadlines[] = {0, 1, MsToNs(200), SecToNs(60)};
    p.expiration_ns = env_.NowNs() + kDeadlines[Pick(in, 4)];

    const absl::StatusOr<ReplicaActionLease> r = m_->SubmitReplicaActionProposal(p);
    if (!r.ok()) {
      const std::optional<RejectReason> reason = RejectReasonOf(r.status());
      HS_CHECK_MSG(reason.has_value(), "a rejected proposal without a reason: " +
                                           r.status().ToString());
      HS_CHECK_MSG(r.status().code() == RejectionCode(*reason),
                   absl::StrCat(r.status().ToString(), " does not use the code of ",
                                RejectReasonName(*reason)));
      return;
    }
    HS_CHECK(r->proposal_id == p.proposal_id);
    HS_CHECK(Normal(r->name) == Normal(p.name));
    HS_CHECK_MSG(r->version == p.observed_version, "lease version differs from the proposal's");
    HS_CHECK_MSG(r->size_bytes == p.expected_size_bytes, "lease size differs from the proposal's");
    if (r->would_propose) {
      HS_CHECK(!r->lease_id.valid() && !r->task_id.valid());
      return;
    }
    HS_CHECK_MSG(r->expiration_ns > env_.NowNs() && r->expiration_ns <= p.expiration_ns,
                 absl::StrCat("lease expiry ", r->expiration_ns, " outside (now ", env_.NowNs(),
                              ", proposal expiry ", p.expiration_ns, "]"));
    HS_CHECK(r->lease_id.valid() && r->task_id.valid());
    Remember(*r);
  }

  void CopyCall(FuzzedDataProvider& in, uint64_t client) {
    if (leases_.empty()) return;
    const Issued& t = leases_[Pick(in, leases_.size())];
    CopyTaskFence fence = t.fence;
    ClientId caller = t.client;
    bool stale = false;
    switch (Pick(in, 6)) {
      case 0: fence.version += 1; stale = true; break;
      case 1: fence.lease_id = LeaseId(fence.lease_id.value + 1); stale = true; break;
      case 2: caller = ClientId(client); break;
      default: break;
    }
    absl::Status s;
    switch (Pick(in, 4)) {
      case 0:
      case 1:
        // As a store worker does: fetch its tasks, then start the copy.
        (void)m_->FetchTasks(caller, 2, 0);
        s = m_->DynamicReplicaCopyStart(caller, fence).status();
        break;
      case 2: s = m_->DynamicReplicaCopyEnd(caller, fence); break;
      default: s = m_->DynamicReplicaCopyRevoke(caller, fence); break;
    }
    HS_CHECK_MSG(!stale || !s.ok(), "a dynamic copy call with a stale fence succeeded");
  }

  void Remember(const ReplicaActionLease& lease) {
    for (const Issued& t : leases_) {
      if (t.fence.lease_id == lease.lease_id) return;
    }
    if (leases_.size() >= 8) leases_.erase(leases_.begin());
    leases_.push_back(
        Issued{CopyTaskFence{lease.task_id, lease.version, lease.lease_id}, lease.source_client});
  }

  void CheckState() {
    const absl::Status inv = m_->CheckInvariants();
    HS_CHECK_MSG(inv.ok(), inv.ToString());
    const TimeNs now = env_.NowNs();
    for (const PendingActionView& p : m_->replication().PendingActions()) {
      Remember(p.lease);  // leases granted from the heat path and by warmup too
      HS_CHECK_MSG(p.lease.expiration_ns > now,
                   absl::StrCat("pending action of lease ", p.lease.lease_id.value,
                                " outlived its lease (expiry ", p.lease.expiration_ns, ", now ",
                                now, ")"));
    }
    // Dynamic replicas per object (and domain when domain-aware).
    std::map<std::pair<ObjectName, Domain>, int64_t> dynamic;
    for (int key = 0; key < kNames; ++key) {
      const absl::StatusOr<ObjectView> v = m_->master().GetObjectView(NameOf(key));
      if (!v.ok()) continue;
      for (const ReplicaDescriptor& d : v->replicas) {
        if (!d.dynamic || d.status != ReplicaStatus::kComplete) continue;
        HS_CHECK_MSG(d.version == v->version, "dynamic replica with a stale version");
        const Domain domain = knobs_.dynamic_replication_domain_aware ? d.location->domain : "";
        ++dynamic[{Normal(v->name), domain}];
      }
    }
    for (const auto& [where, count] : dynamic) {
      HS_CHECK_MSG(count <= knobs_.dynamic_replication_max_memory_replicas,
                   absl::StrCat(where.first.tenant, "/", where.first.key, " has ", count,
                                " dynamic replicas in domain '", where.second, "'"));
    }
  }

  ManualEnv env_;
  const ReplicationKnobs knobs_;
  CheckingSink sink_;
  std::unique_ptr<ReplicatedMaster> m_;
  std::vector<Issued> leases_;
};

}  // namespace
}  // namespace heatsink

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const uint8_t setup = in.ConsumeIntegral<uint8_t>();
  heatsink::ReplicationKnobs knobs = heatsink::ReplicationKnobs::TestMin();
  static constexpr heatsink::DynamicReplicationMode kModes[] = {
      heatsink::DynamicReplicationMode::kEnforce, heatsink::DynamicReplicationMode::kEnforce,
      heatsink::DynamicReplicationMode::kObserve, heatsink::DynamicReplicationMode::kOff};
  knobs.dynamic_replication_mode = kModes[setup & 3];
  knobs.dynamic_replication_domain_aware = (setup & 4) != 0;
  // Warmup needs domain-aware placement (ReplicationKnobs::Validate).
  knobs.dynamic_replication_warmup_enabled = (setup & 12) == 12;
  if ((setup & 16) != 0) knobs.dynamic_replication_admission_cooldown_ms = 0;
  heatsink::MasterKnobs master_knobs = heatsink::MasterKnobs::TestMin();
  master_knobs.allocation_strategy = (setup & 32) != 0
                                         ? heatsink::AllocationStrategy::kFreeRatioFirst
                                         : heatsink::AllocationStrategy::kRandom;
  heatsink::Harness harness(master_knobs, knobs, /*seed=*/setup);
  for (int i = 0; i < heatsink::kOpsMax && in.remaining_bytes() > 0; ++i) harness.Step(in);
  return 0;
}
