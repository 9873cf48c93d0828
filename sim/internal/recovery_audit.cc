// The recovery invariants of a run whose master crashes
// (sim/internal/recovery_audit.h): the bookkeeping across a crash and the
// checks once the restarted master has the stores' reports.
#include "sim/internal/recovery_audit.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"

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

uint64_t RecoveryAudit::CopyStarted(const CopyRange& range, bool track) {
  const uint64_t copy = next_copy_++;
  if (track) copies_in_flight_.emplace(copy, range);
  return copy;
}

void RecoveryAudit::OnMasterCrash() {
  copies_at_crash_.clear();
  for (const auto& [id, range] : copies_in_flight_) copies_at_crash_.push_back(range);
  workers_at_crash_.clear();
  for (const HostRt& h : cluster_->hosts()) {
    if (h.worker_up && !h.segments.empty()) workers_at_crash_[h.index] = h.worker_starts;
  }
  reports_.clear();
  removed_since_restart_.clear();
  removed_bytes_since_restart_.clear();
}

void RecoveryAudit::OnMasterRestart() {
  ++master_restarts_;
  recovery_checked_ = false;
}

void RecoveryAudit::OnReplicaRemoved(const ReplicaDescriptor& replica) {
  if (master_restarts_ == 0) return;
  removed_since_restart_.emplace(replica.segment_id, replica.offset);
  removed_bytes_since_restart_[replica.segment_id] += replica.size_bytes;
}

absl::Status RecoveryAudit::OnReportApplied(const MasterService& master, ClientId client,
                                            const ReportManifestRequest& req,
                                            const absl::StatusOr<ReportManifestResponse>& result) {
  const std::optional<int> host = cluster_->HostOfClient(client);
  if (!host.has_value() || !result.ok() || master_restarts_ == 0) return absl::OkStatus();
  // Only the first report of a worker that ran through the crash, up to its
  // last call: its segments were mounted afresh, manifest-pending, so
  // nothing but its entries can be on them until then.
  const auto ran = workers_at_crash_.find(*host);
  if (ran == workers_at_crash_.end() || ran->second != cluster_->host(*host).worker_starts) {
    return absl::OkStatus();
  }
  StoreReportRt& report = reports_[*host];
  if (report.applied) return absl::OkStatus();
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
  if (!req.last) return absl::OkStatus();
  report.applied = true;
  return CheckUsedBytes(master, client, *host, report);
}

absl::Status RecoveryAudit::CheckUsedBytes(const MasterService& master, ClientId client, int host,
                                           const StoreReportRt& report) const {
  std::map<SegmentId, uint64_t> claimed_bytes;
  for (const auto& [range, size] : report.claimed_ranges) claimed_bytes[range.first] += size;
  for (const SegmentView& v : master.ListSegments()) {
    if (cluster_->HostOfSegment(v.location.id) != host) continue;
    const uint64_t claimed = claimed_bytes[v.location.id];
    const auto removed_it = removed_bytes_since_restart_.find(v.location.id);
    const uint64_t removed =
        removed_it != removed_bytes_since_restart_.end() ? removed_it->second : 0;
    const uint64_t expected = claimed >= removed ? claimed - removed : 0;
    if (v.used_bytes != expected) {
      return Violation(
          "recovery.used_bytes",
          absl::StrCat("segment ", v.location.name, " of store ", client.value, " uses ",
                       v.used_bytes, " bytes after its manifest report, but its entries took ",
                       claimed, " bytes and ", removed, " were removed since the restart"));
    }
  }
  return absl::OkStatus();
}

void RecoveryAudit::OnReportAnswered(ClientId client,
                                     const absl::StatusOr<ReportManifestResponse>& result) {
  const std::optional<int> host = cluster_->HostOfClient(client);
  if (!host.has_value() || !result.ok() || master_restarts_ == 0) return;
  StoreReportRt& report = reports_[*host];
  report.answered = true;
  report.checked = false;
}

absl::Status RecoveryAudit::CheckStoreRecovered(const MasterService& master, int host_index) const {
  const HostRt& h = cluster_->host(host_index);
  if (!h.worker_up || h.worker == nullptr) return absl::OkStatus();
  for (const ManifestEntry& e : h.worker->Manifest()) {
    if (!e.complete || removed_since_restart_.contains({e.segment_id, e.offset})) continue;
    absl::StatusOr<ObjectView> object = master.GetObjectView(e.name);
    std::string why;
    if (!object.ok()) {
      why = "the master does not know the object";
    } else if (object->version != e.version) {
      why = absl::StrCat("the master's object has version ", object->version);
    } else if (!HasCompleteReplicaAt(*object, e.segment_id, e.offset)) {
      why = "the master has no complete replica there";
    }
    if (!why.empty()) {
      return Violation("recovery.objects_readable",
                       absl::StrCat(Describe(e.name), " version ", e.version, " is complete on ",
                                    cluster_->SegmentName(e.segment_id), " offset ", e.offset,
                                    " (store ", h.worker_id.value, "), but ", why));
    }
  }
  return absl::OkStatus();
}

absl::Status RecoveryAudit::CheckCopiesDiscarded(const MasterService& master) const {
  for (const CopyRange& c : copies_at_crash_) {
    absl::StatusOr<ObjectView> object = master.GetObjectView(c.object);
    if (object.ok() && HasCompleteReplicaAt(*object, c.target_segment, c.target_offset)) {
      return Violation(
          "recovery.copy_discarded",
          absl::StrCat("the copy of ", Describe(c.object), " to ",
                       cluster_->SegmentName(c.target_segment), " offset ", c.target_offset,
                       " was in flight at the crash, and is readable after it"));
    }
  }
  return absl::OkStatus();
}

absl::Status RecoveryAudit::Check(const MasterService& master) {
  if (master_restarts_ == 0) return absl::OkStatus();
  bool waiting = !recovery_checked_;
  for (const auto& [host, report] : reports_) {
    waiting = waiting || (report.answered && !report.checked);
  }
  if (!waiting || master.Recovering()) return absl::OkStatus();
  if (!recovery_checked_) {
    recovery_checked_ = true;
    HS_RETURN_IF_ERROR(CheckCopiesDiscarded(master));
    copies_at_crash_.clear();
  }
  for (auto& [host, report] : reports_) {
    if (!report.answered || report.checked) continue;
    report.checked = true;
    HS_RETURN_IF_ERROR(CheckStoreRecovered(master, host));
  }
  return absl::OkStatus();
}

bool RecoveryAudit::HeldCompleteByLiveStore(const ObjectName& name) const {
  for (const HostRt& h : cluster_->hosts()) {
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
