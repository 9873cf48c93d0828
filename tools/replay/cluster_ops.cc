#include "tools/replay/cluster_ops.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "core/replication/replication_knobs.h"

namespace heatsink::replay {
namespace {

void Describe(StoreOpOutcome outcome, bool kill, ClusterOpSample* sample) {
  sample->outcome = std::string(StoreOpOutcomeName(outcome, kill));
  sample->changed = outcome == StoreOpOutcome::kDone;
  sample->no_store = outcome == StoreOpOutcome::kNoStore;
}

}  // namespace

bool ClusterOps::Handles(sim::SimOpKind kind) {
  return kind == sim::SimOpKind::kKillWorker || kind == sim::SimOpKind::kRestartWorker ||
         kind == sim::SimOpKind::kSetKnob;
}

absl::StatusOr<std::function<void()>> ClusterOps::Begin(const sim::SimOp& op, int64_t due_ns) {
  HS_CHECK_MSG(Handles(op.kind), sim::SimOpKindName(op.kind));
  const int64_t start = SteadyNs();
  ClusterOpSample sample;
  sample.t_ns = op.t_ns;
  sample.kind = op.kind;
  sample.lag_ns = std::max<int64_t>(0, start - due_ns);
  recorder_->RecordLag(sample.lag_ns);
  switch (op.kind) {
    case sim::SimOpKind::kKillWorker:
      sample.target = op.host;
      Describe(cluster_->KillStore(op.host), /*kill=*/true, &sample);
      recorder_->RecordClusterOp(sample);
      return std::function<void()>();
    case sim::SimOpKind::kRestartWorker: {
      StoreLaunch launch;
      HS_ASSIGN_OR_RETURN(const StoreOpOutcome outcome, cluster_->RestartStore(op.host, &launch));
      sample.target = op.host;
      Describe(outcome, /*kill=*/false, &sample);
      const int64_t index = recorder_->RecordClusterOp(sample);
      if (outcome != StoreOpOutcome::kDone) return std::function<void()>();
      return std::function<void()>([this, launch, index, start] {
        Settle(index, start, cluster_->WaitStoreServing(launch));
      });
    }
    default: {
      // set_knob: MakeReplayPlan let only dynamic_replication_mode through,
      // with a value the replication knobs accept.
      const std::optional<DynamicReplicationMode> mode = ParseDynamicReplicationMode(op.knob_value);
      HS_CHECK_MSG(op.knob_name == "dynamic_replication_mode" && mode.has_value(),
                   absl::StrCat(op.where, ": ", op.knob_name, "=", op.knob_value));
      HS_ASSIGN_OR_RETURN(const int64_t change, cluster_->SetMode(*mode));
      sample.target = absl::StrCat(op.knob_name, "=", op.knob_value);
      sample.outcome = "set";
      sample.changed = true;
      const int64_t index = recorder_->RecordClusterOp(sample);
      return std::function<void()>([this, mode = *mode, change, index, start] {
        Settle(index, start, cluster_->WaitModeApplied(mode, change));
      });
    }
  }
}

absl::Status ClusterOps::error() {
  absl::MutexLock lock(&mu_);
  return error_;
}

void ClusterOps::Settle(int64_t index, int64_t start_ns, const absl::Status& status) {
  recorder_->SettleClusterOp(index, SteadyNs() - start_ns, status);
  // CANCELLED: the replay is being stopped, which says so itself.
  if (status.ok() || status.code() == absl::StatusCode::kCancelled) return;
  absl::MutexLock lock(&mu_);
  if (error_.ok()) error_ = status;
}

}  // namespace heatsink::replay
