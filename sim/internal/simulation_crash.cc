// Simulation, master crashes (the scenario's faults.master_crashes): the
// master loses its memory, comes back empty, and rebuilds from the manifests
// its store workers report once their heartbeat finds it does not know them
// (docs/master-crash.md). This file crashes and restarts it and checks the
// recovery invariants:
//
//   recovery.objects_readable   once the master no longer recovers, every
//                               complete entry in the manifest of a live
//                               store that has reported is readable: the
//                               master's object has that version and a
//                               COMPLETE replica at that segment and offset
//                               (unless the replica was removed since the
//                               restart: evicted, removed, superseded by a
//                               newer version another store reported)
//   recovery.used_bytes         right after a store's last report is applied,
//                               each of its segments' used bytes equal the
//                               ranges its reported entries took there (the
//                               complete ones, and the incomplete ones whose
//                               bytes stay taken until the put release
//                               timeout), less what was removed since
//   recovery.copy_discarded     a copy in flight at the crash leaves no
//                               readable replica at its target when the
//                               recovery ends
//
// The swarm checker adds recovery.no_lease_outlives_crash (the new master
// starts with no lease, pending action or task).
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "sim/internal/simulation.h"

namespace heatsink::sim::runner_internal {
namespace {

std::string Describe(const ObjectName& name) { return absl::StrCat(name.tenant, "/", name.key); }

absl::Status Violation(absl::string_view invariant, absl::string_view message) {
  return absl::InternalError(absl::StrCat("recovery invariant ", invariant, ": ", message));
}

// Whether `object` has a COMPLETE replica of its version at (segment, offset).
bool HasCompleteReplicaAt(const ObjectView& object, SegmentId segment, uint64_t offset) {
  for (const ReplicaDescriptor& r : object.replicas) {
    if (r.segment_id == segment && r.offset == offset && r.status == ReplicaStatus::kComplete &&
        r.version == object.version) {
      return true;
    }
  }
  return false;
}

}  // namespace

void Simulation::ScheduleMasterCrashes() {
  for (const MasterCrash& c : scenario_.faults.master_crashes) {
    env_.engine().ScheduleAt(c.at_ns, [this] { CrashMaster(); });
    env_.engine().ScheduleAt(c.restart_at_ns, [this] { RestartMaster(); });
  }
  endpoint_.report_answered = [this](ClientId client,
                                     const absl::StatusOr<ReportManifestResponse>& result) {
    OnReportAnswered(client, result);
  };
}

void Simulation::CrashMaster() {
  HS_CHECK(master_up());
  CountMetric("sim_master_crashes_total");
  CountMetric("sim_master_crash_copies_in_flight_total",
              static_cast<int64_t>(copies_in_flight_.size()));
  Note(absl::StrCat("master crashed (", copies_in_flight_.size(), " copies in flight)"));
  if (options_.observer != nullptr) options_.observer->OnMasterCrash(env_.NowNs());
  endpoint_.Down();
  // Its timers and posted work never run; then it goes, with everything it
  // kept in memory. The observer that watched it goes too.
  master_executor_->Kill();
  replicated_.reset();
  call_observer_.reset();
  copies_at_crash_.clear();
  for (const auto& [id, range] : copies_in_flight_) copies_at_crash_.push_back(range);
  workers_at_crash_.clear();
  for (const HostRt& h : hosts_) {
    if (h.worker_up && !h.segments.empty()) workers_at_crash_[h.index] = h.worker_starts;
  }
  reports_.clear();
  removed_since_restart_.clear();
  removed_bytes_since_restart_.clear();
}

void Simulation::RestartMaster() {
  HS_CHECK(!master_up());
  if (absl::Status st = StartMaster(/*restarted=*/true); !st.ok()) {
    Fail(st);
    return;
  }
  ++master_restarts_;
  CountMetric("sim_master_restarts_total");
  recovery_checked_ = false;
  Note("master restarted");
  if (options_.observer != nullptr) options_.observer->OnMasterRestart(env_.NowNs());
}

void Simulation::OnReportApplied(ClientId client, const ReportManifestRequest& req,
                                 const absl::StatusOr<ReportManifestResponse>& result) {
  const std::optional<int> host = HostOfClient(client);
  if (!host.has_value() || !result.ok() || master_restarts_ == 0) return;
  // Only the first report of a worker that ran through the crash, up to its
  // last call: its segments were mounted afresh, manifest-pending, so
  // nothing but its entries can be on them until then.
  const auto ran = workers_at_crash_.find(*host);
  const HostRt& h = hosts_[static_cast<size_t>(*host)];
  if (ran == workers_at_crash_.end() || ran->second != h.worker_starts) return;
  StoreReportRt& report = reports_[*host];
  if (report.applied) return;
  HS_CHECK(result->results.size() == req.entries.size());
  for (size_t i = 0; i < req.entries.size(); ++i) {
    const absl::Status& s = result->results[i];
    // Accepted, or incomplete: discarded, its bytes taken until the put
    // release timeout (its writer may still be writing).
    if (s.ok() || absl::IsFailedPrecondition(s)) {
      const ManifestEntry& e = req.entries[i];
      report.claimed_ranges[{e.segment_id, e.offset}] = e.size_bytes;
    }
  }
  if (!req.last) return;
  report.applied = true;
  std::map<SegmentId, uint64_t> claimed_bytes;
  for (const auto& [range, size] : report.claimed_ranges) claimed_bytes[range.first] += size;
  for (const SegmentView& v : master().ListSegments()) {
    if (HostOfSegment(v.location.id) != *host) continue;
    const uint64_t claimed = claimed_bytes[v.location.id];
    const uint64_t removed = removed_bytes_since_restart_[v.location.id];
    const uint64_t expected = claimed >= removed ? claimed - removed : 0;
    if (v.used_bytes != expected) {
      Fail(Violation("recovery.used_bytes",
                     absl::StrCat("segment ", v.location.name, " of store ", client.value,
                                  " uses ", v.used_bytes, " bytes after its manifest report, but ",
                                  "its entries took ", claimed, " bytes and ", removed,
                                  " were removed since the restart")));
      return;
    }
  }
}

void Simulation::OnReportAnswered(ClientId client,
                                  const absl::StatusOr<ReportManifestResponse>& result) {
  const std::optional<int> host = HostOfClient(client);
  if (!host.has_value() || !result.ok() || master_restarts_ == 0) return;
  StoreReportRt& report = reports_[*host];
  report.answered = true;
  report.checked = false;
}

absl::Status Simulation::CheckStoreRecovered(int host_index) {
  const HostRt& h = hosts_[static_cast<size_t>(host_index)];
  if (!h.worker_up || h.worker == nullptr) return absl::OkStatus();
  for (const ManifestEntry& e : h.worker->Manifest()) {
    if (!e.complete || removed_since_restart_.contains({e.segment_id, e.offset})) continue;
    absl::StatusOr<ObjectView> object = master().GetObjectView(e.name);
    std::string why;
    if (!object.ok()) {
      why = "the master does not know the object";
    } else if (object->version != e.version) {
      why = absl::StrCat("the master's object has version ", object->version);
    } else if (!HasCompleteReplicaAt(*object, e.segment_id, e.offset)) {
      why = "the master has no complete replica there";
    }
    if (!why.empty()) {
      const auto seg = segments_.find(e.segment_id);
      return Violation("recovery.objects_readable",
                       absl::StrCat(Describe(e.name), " version ", e.version, " is complete on ",
                                    seg != segments_.end() ? seg->second.full_name : "?",
                                    " offset ", e.offset, " (store ", h.worker_id.value,
                                    "), but ", why));
    }
  }
  return absl::OkStatus();
}

absl::Status Simulation::CheckRecovery() {
  if (!master_up() || master_restarts_ == 0) return absl::OkStatus();
  bool waiting = !recovery_checked_;
  for (const auto& [host, report] : reports_) {
    waiting = waiting || (report.answered && !report.checked);
  }
  if (!waiting || master().Recovering()) return absl::OkStatus();
  if (!recovery_checked_) {
    recovery_checked_ = true;
    for (const CopyRange& c : copies_at_crash_) {
      absl::StatusOr<ObjectView> object = master().GetObjectView(c.object);
      if (object.ok() && HasCompleteReplicaAt(*object, c.target_segment, c.target_offset)) {
        const auto seg = segments_.find(c.target_segment);
        return Violation("recovery.copy_discarded",
                         absl::StrCat("the copy of ", Describe(c.object), " to ",
                                      seg != segments_.end() ? seg->second.full_name : "?",
                                      " offset ", c.target_offset,
                                      " was in flight at the crash, and is readable after it"));
      }
    }
    copies_at_crash_.clear();
  }
  for (auto& [host, report] : reports_) {
    if (!report.answered || report.checked) continue;
    report.checked = true;
    HS_RETURN_IF_ERROR(CheckStoreRecovered(host));
  }
  return absl::OkStatus();
}

bool Simulation::HeldCompleteByLiveStore(const ObjectName& name) const {
  for (const HostRt& h : hosts_) {
    if (!h.worker_up || h.worker == nullptr) continue;
    for (const ManifestEntry& e : h.worker->Manifest()) {
      if (e.complete && e.name == name &&
          !removed_since_restart_.contains({e.segment_id, e.offset})) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace heatsink::sim::runner_internal
