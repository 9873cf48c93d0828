#include "core/master/internal/task_manager.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink::master_internal {

TaskManager::TaskManager(const MasterKnobs& knobs) : knobs_(knobs) {}

void TaskManager::SetFirstId(uint64_t first) {
  HS_CHECK(first > 0);
  MutexLock lock(&mu_);
  HS_CHECK_MSG(next_id_ == 1 && tasks_.empty(), "SetFirstId after the first task");
  next_id_ = first;
}

absl::StatusOr<TaskId> TaskManager::Submit(ClientId client, const ReplicaCopyPayload& payload,
                                           std::shared_ptr<SegmentHandle> source,
                                           std::shared_ptr<SegmentHandle> target, TimeNs now) {
  HS_CHECK(client.valid());
  HS_CHECK(source != nullptr && target != nullptr);
  MutexLock lock(&mu_);
  if (static_cast<int64_t>(tasks_.size()) >= knobs_.tasks_max) {
    return absl::ResourceExhaustedError(
        absl::StrCat("tasks_max (", knobs_.tasks_max, ") tasks are queued or running"));
  }
  ClientQueues& q = queues_[client];
  if (static_cast<int64_t>(q.pending.size()) >= knobs_.pending_tasks_per_client_max) {
    return absl::ResourceExhaustedError(absl::StrCat("client ", client.value, " has ",
                                                     "pending_tasks_per_client_max (",
                                                     knobs_.pending_tasks_per_client_max,
                                                     ") pending tasks"));
  }
  const TaskId id(next_id_++);
  TaskRecord r;
  r.task.id = id;
  r.task.type = TaskType::kReplicaCopy;
  r.task.status = TaskStatus::kPending;
  r.task.assigned_client = client;
  r.task.copy = payload;
  r.task.created_ns = now;
  r.task.updated_ns = now;
  r.source = std::move(source);
  r.target = std::move(target);
  tasks_.emplace(id, std::move(r));
  q.pending.push_back(id);
  return id;
}

TaskManager::SourceKey TaskManager::SourceOf(const TaskRecord& r) {
  const SegmentLocation& source = r.source->location;
  if (!source.host.empty()) return SourceKey(source.host, 0);
  return SourceKey(HostId(), source.id.value);
}

std::optional<TaskManager::TrunkKey> TaskManager::TrunkOf(const TaskRecord& r) {
  const Domain& from = r.source->location.domain;
  const Domain& to = r.target->location.domain;
  if (from == to) return std::nullopt;
  return TrunkKey(from, to);
}

namespace {

// Whether `bytes` more fit `budget` with `in_flight` already out. Nothing in
// flight always fits, so an object larger than the budget goes alone.
bool FitsBudget(int64_t in_flight, int64_t bytes, int64_t budget) {
  return in_flight == 0 || in_flight <= budget - bytes;
}

template <typename Map>
int64_t InFlight(const Map& map, const typename Map::key_type& key) {
  auto it = map.find(key);
  return it == map.end() ? 0 : it->second;
}

template <typename Map>
void AddInFlight(Map& map, const typename Map::key_type& key, int64_t bytes) {
  int64_t& v = map[key];
  v += bytes;
  HS_CHECK_MSG(v >= 0, "copy budget released more bytes than it held");
  if (v == 0) map.erase(key);
}

}  // namespace

bool TaskManager::FitsSourceBudgetLocked(const TaskRecord& r) const {
  return FitsBudget(InFlight(source_bytes_in_flight_, SourceOf(r)),
                    static_cast<int64_t>(r.task.copy.size_bytes),
                    knobs_.copy_budget_per_source_bytes);
}

bool TaskManager::FitsTrunkBudgetLocked(const TaskRecord& r) const {
  const std::optional<TrunkKey> trunk = TrunkOf(r);
  return !trunk.has_value() || FitsBudget(InFlight(trunk_bytes_in_flight_, *trunk),
                                          static_cast<int64_t>(r.task.copy.size_bytes),
                                          knobs_.copy_budget_per_trunk_bytes);
}

void TaskManager::ChargeCopyBudgetsLocked(TaskRecord& r) {
  HS_CHECK(!r.holds_copy_budget);
  const int64_t bytes = static_cast<int64_t>(r.task.copy.size_bytes);
  AddInFlight(source_bytes_in_flight_, SourceOf(r), bytes);
  if (std::optional<TrunkKey> trunk = TrunkOf(r)) {
    AddInFlight(trunk_bytes_in_flight_, *trunk, bytes);
  }
  copy_bytes_in_flight_ += bytes;
  r.holds_copy_budget = true;
}

void TaskManager::ReleaseCopyBudgetsLocked(TaskRecord& r) {
  if (!r.holds_copy_budget) return;
  const int64_t bytes = static_cast<int64_t>(r.task.copy.size_bytes);
  AddInFlight(source_bytes_in_flight_, SourceOf(r), -bytes);
  if (std::optional<TrunkKey> trunk = TrunkOf(r)) {
    AddInFlight(trunk_bytes_in_flight_, *trunk, -bytes);
  }
  copy_bytes_in_flight_ -= bytes;
  HS_CHECK(copy_bytes_in_flight_ >= 0);
  r.holds_copy_budget = false;
}

std::vector<Task> TaskManager::Fetch(ClientId client, size_t max, TimeNs now) {
  MutexLock lock(&mu_);
  std::vector<Task> out;
  auto qit = queues_.find(client);
  if (qit == queues_.end()) return out;
  ClientQueues& q = qit->second;
  // Tasks held back by the budgets, in queue order; they go back in front.
  std::deque<TaskId> deferred;
  // A source or trunk on which a task was held back: later tasks of this
  // queue on it wait too (first in, first out per source and trunk).
  absl::btree_set<SourceKey> blocked_sources;
  absl::btree_set<TrunkKey> blocked_trunks;
  while (out.size() < max && !q.pending.empty() &&
         static_cast<int64_t>(q.processing.size()) < knobs_.processing_tasks_per_client_max) {
    const TaskId id = q.pending.front();
    q.pending.pop_front();
    TaskRecord& r = tasks_.at(id);
    const SourceKey source = SourceOf(r);
    const std::optional<TrunkKey> trunk = TrunkOf(r);
    const bool source_blocked = blocked_sources.contains(source) || !FitsSourceBudgetLocked(r);
    const bool trunk_blocked =
        trunk.has_value() && (blocked_trunks.contains(*trunk) || !FitsTrunkBudgetLocked(r));
    if (source_blocked || trunk_blocked) {
      deferred.push_back(id);
      r.held_back_ns = now;
      if (source_blocked) blocked_sources.insert(source);
      if (trunk_blocked) blocked_trunks.insert(*trunk);
      ++copy_fetches_deferred_total_;
      continue;
    }
    ChargeCopyBudgetsLocked(r);
    r.task.status = TaskStatus::kProcessing;
    r.task.updated_ns = now;
    r.fetched_ns = now;
    q.processing.insert(id);
    out.push_back(r.task);
  }
  q.pending.insert(q.pending.begin(), deferred.begin(), deferred.end());
  return out;
}

std::optional<TaskRecord> TaskManager::Find(TaskId id) const {
  MutexLock lock(&mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return std::nullopt;
  return it->second;
}

bool TaskManager::MarkStarted(TaskId id, ReplicaId target_replica, TimeNs now) {
  MutexLock lock(&mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end() || it->second.phase != CopyPhase::kNotStarted) return false;
  it->second.phase = CopyPhase::kStarted;
  it->second.target_replica = target_replica;
  it->second.task.updated_ns = now;
  return true;
}

bool TaskManager::SetPhase(TaskId id, CopyPhase from, CopyPhase to, TimeNs now) {
  MutexLock lock(&mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end() || it->second.phase != from) return false;
  it->second.phase = to;
  it->second.task.updated_ns = now;
  // The bytes stopped moving: the next copy of the source or trunk may go.
  if (to == CopyPhase::kEnded || to == CopyPhase::kRevoked) ReleaseCopyBudgetsLocked(it->second);
  return true;
}

std::optional<TaskRecord> TaskManager::Remove(TaskId id) {
  MutexLock lock(&mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return std::nullopt;
  ReleaseCopyBudgetsLocked(it->second);
  TaskRecord r = std::move(it->second);
  tasks_.erase(it);
  auto qit = queues_.find(r.task.assigned_client);
  HS_CHECK(qit != queues_.end());
  ClientQueues& q = qit->second;
  if (r.task.status == TaskStatus::kPending) {
    auto pos = std::find(q.pending.begin(), q.pending.end(), id);
    HS_CHECK(pos != q.pending.end());
    q.pending.erase(pos);
  } else {
    HS_CHECK(q.processing.erase(id) == 1);
  }
  if (q.pending.empty() && q.processing.empty()) queues_.erase(qit);
  return r;
}

bool TaskManager::IsTimedOut(const TaskRecord& r, TimeNs now) const {
  // A pending task's clock starts at creation, and again at each fetch that
  // held it back for the copy budgets: its client is alive and asking, so
  // only a client that stops fetching lets it expire. A processing task's
  // clock starts at fetch (copy phase changes do not restart it: the whole
  // copy must fit).
  if (r.task.status == TaskStatus::kPending) {
    return IsExpired(
        now, std::max(r.task.created_ns, r.held_back_ns) + knobs_.pending_task_timeout_ns());
  }
  return IsExpired(now, r.fetched_ns + knobs_.processing_task_timeout_ns());
}

std::vector<TaskId> TaskManager::TimedOut(TimeNs now) const {
  MutexLock lock(&mu_);
  std::vector<TaskId> out;
  for (const auto& [id, r] : tasks_) {
    if (IsTimedOut(r, now)) out.push_back(id);
  }
  return out;
}

TaskCounts TaskManager::Counts() const {
  MutexLock lock(&mu_);
  TaskCounts c;
  for (const auto& [client, q] : queues_) {
    c.pending += static_cast<int64_t>(q.pending.size());
    c.processing += static_cast<int64_t>(q.processing.size());
  }
  return c;
}

CopyPacingCounts TaskManager::PacingCounts() const {
  MutexLock lock(&mu_);
  return CopyPacingCounts{copy_bytes_in_flight_, copy_fetches_deferred_total_};
}

TaskCounts TaskManager::CountsFor(ClientId client) const {
  MutexLock lock(&mu_);
  TaskCounts c;
  auto it = queues_.find(client);
  if (it == queues_.end()) return c;
  c.pending = static_cast<int64_t>(it->second.pending.size());
  c.processing = static_cast<int64_t>(it->second.processing.size());
  return c;
}

std::vector<TaskRecord> TaskManager::All() const {
  MutexLock lock(&mu_);
  std::vector<TaskRecord> out;
  out.reserve(tasks_.size());
  for (const auto& [id, r] : tasks_) out.push_back(r);
  return out;
}

absl::Status TaskManager::CheckQueues() const {
  MutexLock lock(&mu_);
  size_t queued = 0;
  for (const auto& [client, q] : queues_) {
    if (static_cast<int64_t>(q.pending.size()) > knobs_.pending_tasks_per_client_max ||
        static_cast<int64_t>(q.processing.size()) > knobs_.processing_tasks_per_client_max) {
      return absl::InternalError(absl::StrCat("client ", client.value, " task queues over their limits"));
    }
    for (TaskId id : q.pending) {
      auto it = tasks_.find(id);
      if (it == tasks_.end() || it->second.task.status != TaskStatus::kPending ||
          it->second.task.assigned_client != client) {
        return absl::InternalError(absl::StrCat("pending task ", id.value, " inconsistent"));
      }
    }
    for (TaskId id : q.processing) {
      auto it = tasks_.find(id);
      if (it == tasks_.end() || it->second.task.status != TaskStatus::kProcessing ||
          it->second.task.assigned_client != client) {
        return absl::InternalError(absl::StrCat("processing task ", id.value, " inconsistent"));
      }
    }
    queued += q.pending.size() + q.processing.size();
  }
  if (queued != tasks_.size()) {
    return absl::InternalError(absl::StrCat(tasks_.size(), " tasks but ", queued, " queued"));
  }
  if (static_cast<int64_t>(tasks_.size()) > knobs_.tasks_max) {
    return absl::InternalError("task table over tasks_max");
  }
  return CheckCopyBudgetsLocked();
}

absl::Status TaskManager::CheckCopyBudgetsLocked() const {
  absl::btree_map<SourceKey, int64_t> sources;
  absl::btree_map<TrunkKey, int64_t> trunks;
  int64_t total = 0;
  for (const auto& [id, r] : tasks_) {
    if (!r.holds_copy_budget) continue;
    if (r.task.status != TaskStatus::kProcessing ||
        (r.phase != CopyPhase::kNotStarted && r.phase != CopyPhase::kStarted)) {
      return absl::InternalError(
          absl::StrCat("task ", id.value, " holds copy budget while not copying"));
    }
    const int64_t bytes = static_cast<int64_t>(r.task.copy.size_bytes);
    sources[SourceOf(r)] += bytes;
    if (std::optional<TrunkKey> trunk = TrunkOf(r)) trunks[*trunk] += bytes;
    total += bytes;
  }
  if (sources != source_bytes_in_flight_ || trunks != trunk_bytes_in_flight_ ||
      total != copy_bytes_in_flight_) {
    return absl::InternalError(absl::StrCat("copy bytes in flight ", copy_bytes_in_flight_,
                                            " differ from the fetched copies' ", total));
  }
  return absl::OkStatus();
}

}  // namespace heatsink::master_internal
