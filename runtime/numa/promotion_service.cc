#include "runtime/numa/promotion_service.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/base/check.h"
#include "core/env/time.h"
#include "core/tiering/promotion_pacing.h"
#include "runtime/env/wait_until.h"
#include "runtime/numa/mempolicy.h"

namespace heatsink::runtime {

absl::Status LinuxThreadBinder::BindCurrentThread(int node) {
  const NumaNode* n = topology_->FindNode(node);
  if (n == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("NUMA node ", node, " is not in the topology"));
  }
  if (!n->cpus.empty()) {
    if (absl::Status s = PinThreadToCpus(n->cpus); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("node ", node, ": ", s.message()));
    }
  }
  return SetThreadBindPolicy(node);
}

absl::Status LinuxThreadBinder::BindMemory(const void* addr, uint64_t bytes, int node) {
  if (topology_->FindNode(node) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("NUMA node ", node, " is not in the topology"));
  }
  // mbind changes the range's policy and pages, never its bytes.
  return MoveRangeToNode(const_cast<void*>(addr), static_cast<size_t>(bytes), node);
}

NumaPromotionService::NumaPromotionService(Env* env, TierManager* manager,
                                           PromotionServiceOptions options)
    : env_(env), manager_(manager), options_(std::move(options)) {}

NumaPromotionService::~NumaPromotionService() { Stop(); }

std::vector<int> NumaPromotionService::worker_nodes() const {
  std::vector<int> nodes;
  for (const auto& w : workers_) nodes.push_back(w->node);
  return nodes;
}

absl::Status NumaPromotionService::Start() {
  const int regions = static_cast<int>(manager_->regions().size());
  if (static_cast<int>(options_.region_nodes.size()) != regions) {
    return absl::InvalidArgumentError(
        absl::StrCat("promotion service: ", options_.region_nodes.size(),
                     " region nodes for a tier manager with ", regions, " regions"));
  }
  {
    MutexLock lock(&mu_);
    HS_CHECK_MSG(!started_, "promotion service started twice");
    started_ = true;
    stopping_ = false;
    workers_stopping_ = false;
    command_generation_ = 0;  // every worker starts having seen generation 0
    summaries_.assign(manager_->head_region_count(), RegionSummary{});
  }
  // One worker per node holding head regions, ascending node order.
  std::map<int, std::vector<int>> regions_by_node;
  for (int r = 0; r < manager_->head_region_count(); ++r) {
    regions_by_node[options_.region_nodes[r]].push_back(r);
  }
  for (auto& [node, list] : regions_by_node) {
    auto worker = std::make_unique<Worker>();
    worker->node = node;
    worker->regions = list;
    workers_.push_back(std::move(worker));
  }
  const int threads = static_cast<int>(workers_.size()) + 2;
  for (auto& w : workers_) {
    Worker* worker = w.get();
    worker->thread = std::thread([this, worker] { WorkerLoop(worker); });
  }
  coordinator_ = std::thread([this] { CoordinatorLoop(); });
  // Read here, not on the thread, so the schedule starts at Start.
  const TimeNs first_decay_due_ns = env_->NowNs() + MsToNs(manager_->knobs().decay_interval_ms);
  decay_thread_ = std::thread([this, first_decay_due_ns] { DecayLoop(first_decay_due_ns); });

  absl::Status status;
  {
    MutexLock lock(&mu_);
    while (bind_reports_ != threads) done_cv_.Wait(&mu_);
    status = bind_status_;
  }
  if (!status.ok()) Stop();
  return status;
}

bool NumaPromotionService::BindAndReport(int node, const std::string& who, const Worker* worker) {
  absl::Status status;
  if (options_.binder != nullptr) status = options_.binder->BindCurrentThread(node);
  if (status.ok() && options_.binder != nullptr && worker != nullptr) {
    // The worker scans and decays these arrays: their pages go to its node.
    for (int region : worker->regions) {
      const DenseScoreArray& scores = manager_->dense_scores(region);
      status = options_.binder->BindMemory(scores.storage(), scores.storage_bytes(), node);
      if (!status.ok()) {
        status = absl::Status(status.code(), absl::StrCat("dense score array of region ", region,
                                                          ": ", status.message()));
        break;
      }
    }
  }
  MutexLock lock(&mu_);
  if (!status.ok() && bind_status_.ok()) {
    bind_status_ = absl::Status(status.code(), absl::StrCat(who, ": ", status.message()));
  }
  ++bind_reports_;
  done_cv_.SignalAll();
  // Every thread waits for all reports, so none starts work that a failed
  // start-up would have to interrupt.
  const int threads = static_cast<int>(workers_.size()) + 2;
  while (bind_reports_ != threads) done_cv_.Wait(&mu_);
  return bind_status_.ok();
}

void NumaPromotionService::Stop() {
  {
    MutexLock lock(&mu_);
    if (!started_) return;
    stopping_ = true;
  }
  cv_.SignalAll();
  done_cv_.SignalAll();
  if (coordinator_.joinable()) coordinator_.join();
  if (decay_thread_.joinable()) decay_thread_.join();
  // Workers last: the coordinator and the decay thread may be waiting for a
  // command they dispatched, which the workers finish first.
  {
    MutexLock lock(&mu_);
    workers_stopping_ = true;
  }
  cv_.SignalAll();
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
  MutexLock lock(&mu_);
  workers_.clear();
  started_ = false;
  bind_reports_ = 0;
  bind_status_ = absl::OkStatus();
  workers_stopping_ = false;
}

void NumaPromotionService::RequestDecay() {
  {
    MutexLock lock(&mu_);
    decay_requested_ = true;
  }
  cv_.SignalAll();
}

PromotionServiceStats NumaPromotionService::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

void NumaPromotionService::WorkerLoop(Worker* worker) {
  if (!BindAndReport(worker->node, absl::StrCat("promotion worker of node ", worker->node),
                     worker)) {
    return;
  }
  uint64_t seen = 0;
  while (true) {
    CommandKind kind;
    PromotionRound* round = nullptr;
    DecayPass* pass = nullptr;
    {
      MutexLock lock(&mu_);
      while (!workers_stopping_ && command_generation_ == seen) cv_.Wait(&mu_);
      // Stop sets workers_stopping_ only once nobody can dispatch any more.
      if (command_generation_ == seen) return;
      seen = command_generation_;
      kind = command_kind_;
      round = command_round_;
      pass = command_pass_;
    }
    std::vector<RegionSummary> local;
    for (int region : worker->regions) {
      if (kind == CommandKind::kScan) {
        local.push_back(round->ScanRegion(region));
      } else {
        pass->DecayRegion(region);
      }
    }
    MutexLock lock(&mu_);
    for (const RegionSummary& s : local) summaries_[s.region] = s;
    auto& counter = kind == CommandKind::kScan ? stats_.region_scans_by_node[worker->node]
                                               : stats_.region_decays_by_node[worker->node];
    counter += static_cast<int64_t>(worker->regions.size());
    if (--command_pending_ == 0) done_cv_.SignalAll();
  }
}

void NumaPromotionService::RunOnWorkers(CommandKind kind, PromotionRound* round,
                                        DecayPass* pass) {
  MutexLock dispatch(&dispatch_mu_);
  MutexLock lock(&mu_);
  command_kind_ = kind;
  command_round_ = round;
  command_pass_ = pass;
  command_pending_ = static_cast<int>(workers_.size());
  ++command_generation_;
  cv_.SignalAll();
  // Workers finish a command even while stopping, so this wait always ends.
  while (command_pending_ != 0) done_cv_.Wait(&mu_);
  command_round_ = nullptr;
  command_pass_ = nullptr;
}

void NumaPromotionService::CoordinatorLoop() {
  if (!BindAndReport(options_.serving_node, "promotion coordinator")) return;
  while (true) {
    uint64_t decays_seen = 0;
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
      decays_seen = decays_finished_;
    }
    PacingInput input;
    absl::StatusOr<PromotionRound> round = manager_->TryBeginPromotion();
    if (round.ok()) {
      const PromotionResult result = RunRound(*round);
      input.outcome = result.outcome;
      input.retry_at_ns = result.retry_at_ns;
    } else {
      input.outcome = PromotionOutcomeOfBegin(round.status());
    }
    input.decay_pending = manager_->decay_pending();
    input.now_ns = env_->NowNs();
    const PromotionPacing next = DecidePromotionPacing(input, manager_->knobs());
    if (options_.pacing_observer) options_.pacing_observer(input.outcome, next);
    MutexLock lock(&mu_);
    switch (next.action) {
      case PacingAction::kRoundNow:
        break;
      case PacingAction::kWait: {
        // A real pause: the decision (wait_ns) was taken on Env time above.
        const auto deadline =
            std::chrono::steady_clock::now() + std::chrono::nanoseconds(next.wait_ns);
        while (!stopping_ && WaitUntil(&cv_, &mu_, deadline)) {
        }
        break;
      }
      case PacingAction::kWaitForDecay:
        // The decay thread signals when its pass ends; a pass that ended
        // since this attempt began has already moved decays_finished_.
        while (!stopping_ && decays_finished_ == decays_seen) cv_.Wait(&mu_);
        break;
      case PacingAction::kStop:
        stats_.promotion_disabled = true;  // decay keeps its own schedule
        return;
    }
  }
}

PromotionResult NumaPromotionService::RunRound(PromotionRound& round) {
  RunOnWorkers(CommandKind::kScan, &round, nullptr);
  std::vector<RegionSummary> summaries;
  {
    MutexLock lock(&mu_);
    summaries = summaries_;
  }
  PromotionResult result = round.Exchange(round.Reduce(summaries));
  round.Finish();
  {
    MutexLock lock(&mu_);
    ++rounds_finished_;
    ++stats_.rounds;
    switch (result.outcome) {
      case PromotionOutcome::kExchanged:
        ++stats_.exchanges;
        break;
      case PromotionOutcome::kStale:
        ++stats_.stale;
        break;
      case PromotionOutcome::kPreempted:
      case PromotionOutcome::kBusy:
        ++stats_.preempted;
        break;
      case PromotionOutcome::kRateLimited:
        ++stats_.rate_limited;
        break;
      case PromotionOutcome::kFailed:
        ++stats_.failed;
        break;
      case PromotionOutcome::kNoInversion:
      case PromotionOutcome::kDisabled:
        ++stats_.no_inversion;
        break;
    }
  }
  cv_.SignalAll();  // a decay waiting for the gate may take it now
  return result;
}

void NumaPromotionService::RunDecayPass() {
  manager_->MarkDecayPending();
  absl::StatusOr<DecayPass> pass = manager_->TryBeginDecay();
  while (!pass.ok()) {
    HS_CHECK_MSG(absl::IsUnavailable(pass.status()), pass.status().ToString());
    {
      // The coordinator's round holds the gate; it signals when it ends. The
      // timeout covers a round that ended between the attempt and the wait.
      MutexLock lock(&mu_);
      const uint64_t seen = rounds_finished_;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(10);
      while (rounds_finished_ == seen && WaitUntil(&cv_, &mu_, deadline)) {
      }
    }
    pass = manager_->TryBeginDecay();
  }
  RunOnWorkers(CommandKind::kDecay, nullptr, &*pass);
  // The index lives with the serving node: its shards are decayed here.
  for (int shard = 0; shard < pass->shard_count(); ++shard) pass->DecayIndexShard(shard);
  pass->Finish();
  {
    MutexLock lock(&mu_);
    ++decays_finished_;
    ++stats_.decay_passes;
  }
  cv_.SignalAll();
}

void NumaPromotionService::DecayLoop(TimeNs first_due_ns) {
  if (!BindAndReport(options_.serving_node, "decay thread")) return;
  const DurationNs interval_ns = MsToNs(manager_->knobs().decay_interval_ms);
  TimeNs next_ns = first_due_ns;
  while (true) {
    {
      MutexLock lock(&mu_);
      while (!stopping_ && !decay_requested_) {
        // Real waiting for Env time: wait what the Env clock says is left,
        // then read it again (a manual clock may not have moved).
        const DurationNs left_ns = next_ns - env_->NowNs();
        if (left_ns <= 0) break;
        cv_.WaitWithTimeout(&mu_, absl::Nanoseconds(left_ns));
      }
      if (stopping_) return;
      decay_requested_ = false;
    }
    RunDecayPass();
    const TimeNs now_ns = env_->NowNs();
    if (now_ns >= next_ns) next_ns += interval_ns * ((now_ns - next_ns) / interval_ns + 1);
  }
}

}  // namespace heatsink::runtime
