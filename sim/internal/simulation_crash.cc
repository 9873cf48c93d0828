// Simulation, master crashes (the scenario's faults.master_crashes): the
// master loses its memory, comes back empty, and rebuilds from the manifests
// its store workers report once their heartbeat finds it does not know them
// (docs/master-crash.md). This file crashes and restarts it; the recovery
// invariants (recovery.objects_readable, recovery.used_bytes,
// recovery.copy_discarded) are RecoveryAudit's
// (sim/internal/recovery_audit.h), which the simulation feeds the crashes,
// restarts, copies, removals and manifest reports.
//
// The swarm checker adds recovery.no_lease_outlives_crash (the new master
// starts with no lease, pending action or task).
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "sim/internal/simulation.h"

namespace heatsink::sim::runner_internal {

void Simulation::ScheduleMasterCrashes() {
  for (const MasterCrash& c : scenario_.faults.master_crashes) {
    env_.engine().ScheduleAt(c.at_ns, [this] { CrashMaster(); });
    env_.engine().ScheduleAt(c.restart_at_ns, [this] { RestartMaster(); });
  }
  endpoint_.report_answered = [this](ClientId client,
                                     const absl::StatusOr<ReportManifestResponse>& result) {
    recovery_.OnReportAnswered(client, result);
  };
}

void Simulation::CrashMaster() {
  HS_CHECK(master_up());
  measurements_.CountMetric("sim_master_crashes_total");
  measurements_.CountMetric("sim_master_crash_copies_in_flight_total",
                            static_cast<int64_t>(recovery_.copies_in_flight()));
  Note(absl::StrCat("master crashed (", recovery_.copies_in_flight(), " copies in flight)"));
  if (options_.observer != nullptr) options_.observer->OnMasterCrash(env_.NowNs());
  endpoint_.Down();
  // Its timers and posted work never run; then it goes, with everything it
  // kept in memory. The observer that watched it goes too.
  master_executor_->Kill();
  replicated_.reset();
  call_observer_.reset();
  recovery_.OnMasterCrash();
}

void Simulation::RestartMaster() {
  HS_CHECK(!master_up());
  if (absl::Status st = StartMaster(/*restarted=*/true); !st.ok()) {
    Fail(st);
    return;
  }
  recovery_.OnMasterRestart();
  measurements_.CountMetric("sim_master_restarts_total");
  Note("master restarted");
  if (options_.observer != nullptr) options_.observer->OnMasterRestart(env_.NowNs());
}

void Simulation::OnReportApplied(ClientId client, const ReportManifestRequest& req,
                                 const absl::StatusOr<ReportManifestResponse>& result) {
  if (absl::Status st = recovery_.OnReportApplied(master(), client, req, result); !st.ok()) {
    Fail(st);
  }
}

}  // namespace heatsink::sim::runner_internal
