#include "core/worker/store_worker.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/mutex.h"

namespace heatsink {

absl::Status StoreWorkerOptions::Validate() const {
  if (!client_id.valid()) return absl::InvalidArgumentError("store worker: client_id 0 is invalid");
  const std::pair<const char*, int64_t> positives[] = {
      {"heartbeat_interval_ms", heartbeat_interval_ms},
      {"fetch_interval_ms", fetch_interval_ms},
      {"fetch_batch_max", fetch_batch_max},
      {"copies_in_flight_max", copies_in_flight_max},
      {"retry_interval_ms", retry_interval_ms},
      {"manifest_report_entries_max", manifest_report_entries_max},
  };
  for (const auto& [name, value] : positives) {
    if (value < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("store worker: ", name, " must be >= 1, got ", value));
    }
  }
  for (const MountSegmentRequest& s : segments) {
    if (!s.segment_id.valid()) {
      return absl::InvalidArgumentError("store worker: a segment has id 0");
    }
  }
  return absl::OkStatus();
}

class StoreWorker::Core : public std::enable_shared_from_this<StoreWorker::Core> {
 public:
  Core(Env* env, MasterClient* master, DataMover* mover, StoreWorkerOptions options)
      : env_(env), master_(master), mover_(mover), options_(std::move(options)) {}

  void Start() {
    {
      MutexLock lock(&mu_);
      if (started_) return;
      started_ = true;
    }
    BeginRegistration();
  }

  void Stop() {
    MutexLock lock(&mu_);
    started_ = false;
    state_ = StoreWorkerState::kStopped;
    ++epoch_;  // callbacks of the current registration chain become stale
    for (TimerId* t : {&heartbeat_timer_, &fetch_timer_, &retry_timer_}) {
      if (*t != kNoTimer) env_->executor->Cancel(*t);
      *t = kNoTimer;
    }
  }

  StoreWorkerState state() const {
    MutexLock lock(&mu_);
    return state_;
  }
  StoreWorkerStats stats() const {
    MutexLock lock(&mu_);
    return stats_;
  }
  int64_t copies_in_flight() const {
    MutexLock lock(&mu_);
    return in_flight_;
  }
  std::vector<ManifestEntry> Manifest() const {
    MutexLock lock(&mu_);
    std::vector<ManifestEntry> out;
    out.reserve(manifest_.size());
    for (const auto& [key, e] : manifest_) out.push_back(e);
    return out;
  }
  std::vector<ManifestEntry> ManifestOverlapping(SegmentId segment, uint64_t offset,
                                                 uint64_t size, size_t entries_max) const {
    MutexLock lock(&mu_);
    std::vector<ManifestEntry> out;
    auto it = manifest_.lower_bound({segment, offset});
    if (it != manifest_.begin()) {
      auto before = std::prev(it);
      if (before->first.first == segment &&
          before->first.second + before->second.size_bytes > offset) {
        it = before;
      }
    }
    const uint64_t end = offset + size;
    for (; it != manifest_.end() && it->first.first == segment && it->first.second < end &&
           out.size() < entries_max;
         ++it) {
      out.push_back(it->second);
    }
    return out;
  }
  void CallAfterNextFetch(absl::AnyInvocable<void() &&> done) {
    {
      MutexLock lock(&mu_);
      if (fetch_waiters_next_.size() + fetch_waiters_sent_.size() < kFetchWaitersMax) {
        fetch_waiters_next_.push_back(std::move(done));
        return;
      }
    }
    std::move(done)();  // at the limit: the caller looks again now
  }

 private:
  static constexpr size_t kFetchWaitersMax = 4'096;
  // A callback that runs `f(core, args...)` only while the worker exists.
  // With a captureless `f` it is one weak_ptr (16 bytes), which an
  // absl::AnyInvocable holds inline: the fetch and heartbeat timers and
  // their replies, many times a second per worker, allocate nothing for it.
  template <typename F>
  struct WeakCall {
    std::weak_ptr<Core> weak;
    [[no_unique_address]] F f;
    template <typename... A>
    void operator()(A&&... args) {
      if (std::shared_ptr<Core> self = weak.lock()) f(*self, std::forward<A>(args)...);
    }
  };
  template <typename F>
  WeakCall<F> Weak(F f) {
    static_assert(!std::is_empty_v<F> || sizeof(WeakCall<F>) == sizeof(std::weak_ptr<Core>),
                  "a captureless callback adds nothing to the weak pointer");
    return WeakCall<F>{weak_from_this(), std::move(f)};
  }

  // --- Registration and mounting ------------------------------------------

  void BeginRegistration() {
    uint64_t epoch = 0;
    {
      MutexLock lock(&mu_);
      if (!started_) return;
      state_ = StoreWorkerState::kRegistering;
      epoch = ++epoch_;
      // Sequence numbers belong to one master; the next one starts afresh.
      manifest_applied_seq_ = 0;
    }
    RegisterClientRequest req{options_.client_id, options_.host, options_.domain};
    master_->RegisterClient(req, Weak([epoch](Core& c, absl::Status s) {
                              c.OnRegistered(epoch, std::move(s));
                            }));
  }

  void OnRegistered(uint64_t epoch, absl::Status s) {
    {
      MutexLock lock(&mu_);
      if (!started_ || epoch != epoch_) return;
      if (!s.ok()) {
        ScheduleRetryLocked();
        return;
      }
      ++stats_.registrations;
      state_ = StoreWorkerState::kMounting;
      // Every registration reports, even an empty manifest, so a master
      // waiting for its stores (restart_expected_stores) counts this one.
      reporting_ = options_.report_manifest;
      report_.clear();
      if (reporting_) {
        report_.reserve(manifest_.size());
        for (const auto& [key, e] : manifest_) report_.push_back(e);
      }
    }
    MountNext(epoch, 0);
  }

  void MountNext(uint64_t epoch, size_t index) {
    if (index == options_.segments.size()) {
      ReportNext(epoch, 0);
      return;
    }
    MountSegmentRequest req = options_.segments[index];
    {
      MutexLock lock(&mu_);
      req.manifest_pending = reporting_;
    }
    master_->MountSegment(options_.client_id, req, Weak([epoch, index](Core& c, absl::Status s) {
                            c.OnMounted(epoch, index, std::move(s));
                          }));
  }

  // --- Manifest -------------------------------------------------------------

  void ReportNext(uint64_t epoch, size_t from) {
    ReportManifestRequest req;
    bool reporting = false;
    {
      MutexLock lock(&mu_);
      if (!started_ || epoch != epoch_) return;
      reporting = reporting_;
    }
    if (!reporting) {
      EnterRunning(epoch);
      return;
    }
    {
      MutexLock lock(&mu_);
      const size_t end = std::min(
          report_.size(), from + static_cast<size_t>(options_.manifest_report_entries_max));
      req.entries.assign(report_.begin() + static_cast<std::ptrdiff_t>(from),
                         report_.begin() + static_cast<std::ptrdiff_t>(end));
      req.last = end == report_.size();
    }
    const size_t next = from + req.entries.size();
    const bool last = req.last;
    master_->ReportManifest(
        options_.client_id, req,
        Weak([epoch, from, next, last](Core& c, absl::StatusOr<ReportManifestResponse> r) {
          c.OnReported(epoch, from, next, last, std::move(r));
        }));
  }

  void OnReported(uint64_t epoch, size_t from, size_t next, bool last,
                  absl::StatusOr<ReportManifestResponse> response) {
    {
      MutexLock lock(&mu_);
      if (!started_ || epoch != epoch_) return;
      if (!response.ok() || response->results.size() != next - from) {
        ScheduleRetryLocked();  // registers and reports again (entries are idempotent)
        return;
      }
      for (size_t i = from; i < next; ++i) {
        ++stats_.manifest_entries_reported;
        if (response->results[i - from].ok()) continue;
        // Rejected or discarded by the master: its bytes are no object's.
        const ManifestEntry& e = report_[i];
        auto it = manifest_.find({e.segment_id, e.offset});
        if (it != manifest_.end() && it->second.version == e.version &&
            it->second.name == e.name) {
          manifest_.erase(it);
          ++stats_.manifest_entries_dropped;
        }
      }
      if (last) {
        ++stats_.manifest_reports;
        reporting_ = false;
        report_.clear();
      }
    }
    if (last) {
      EnterRunning(epoch);
    } else {
      ReportNext(epoch, next);
    }
  }

  // Applies the master's changes in sequence order (REQUIRES: mu_ held).
  void ApplyManifestChangesLocked(const std::vector<ManifestChange>& changes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const ManifestChange& c : changes) {
      if (c.seq <= manifest_applied_seq_) continue;
      manifest_applied_seq_ = c.seq;
      // A worker that never reports only acknowledges (the simulator's, whose
      // master never restarts): a manifest nobody reads would cost memory.
      if (!options_.report_manifest) continue;
      const SegmentId segment = c.entry.segment_id;
      if (!c.present) {
        manifest_.erase({segment, c.entry.offset});
        continue;
      }
      // Whatever overlapped the new range is gone: the master reused it.
      // Entries never overlap each other, so only the one starting last
      // before `begin` can reach into the range from below.
      const uint64_t begin = c.entry.offset;
      const uint64_t end = begin + c.entry.size_bytes;
      auto it = manifest_.lower_bound({segment, begin});
      if (it != manifest_.begin()) {
        auto before = std::prev(it);
        if (before->first.first == segment &&
            before->first.second + before->second.size_bytes > begin) {
          // A b-tree's erase invalidates every iterator (a rebalance may free
          // the node `it` points into): look the range up again.
          manifest_.erase(before);
          it = manifest_.lower_bound({segment, begin});
        }
      }
      while (it != manifest_.end() && it->first.first == segment && it->first.second < end) {
        it = manifest_.erase(it);
      }
      manifest_[{segment, begin}] = c.entry;
    }
  }

  void OnMounted(uint64_t epoch, size_t index, absl::Status s) {
    {
      MutexLock lock(&mu_);
      if (!started_ || epoch != epoch_) return;
      if (!s.ok()) {
        ScheduleRetryLocked();
        return;
      }
    }
    MountNext(epoch, index + 1);
  }

  void EnterRunning(uint64_t epoch) {
    MutexLock lock(&mu_);
    if (!started_ || epoch != epoch_) return;
    state_ = StoreWorkerState::kRunning;
    if (heartbeat_timer_ == kNoTimer) ScheduleHeartbeatLocked();
    if (fetch_timer_ == kNoTimer) ScheduleFetchLocked();
  }

  void ScheduleRetryLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (retry_timer_ != kNoTimer) return;
    retry_timer_ = env_->executor->PostAfter(MsToNs(options_.retry_interval_ms),
                                             Weak([](Core& c) {
                                               {
                                                 MutexLock lock(&c.mu_);
                                                 c.retry_timer_ = kNoTimer;
                                               }
                                               c.BeginRegistration();
                                             }));
  }

  // --- Heartbeats -----------------------------------------------------------

  void ScheduleHeartbeatLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    heartbeat_timer_ = env_->executor->PostAfter(MsToNs(options_.heartbeat_interval_ms),
                                                 Weak([](Core& c) { c.OnHeartbeatTimer(); }));
  }

  void OnHeartbeatTimer() {
    uint64_t epoch = 0;
    {
      MutexLock lock(&mu_);
      heartbeat_timer_ = kNoTimer;
      if (state_ != StoreWorkerState::kRunning) return;
      ScheduleHeartbeatLocked();
      epoch = epoch_;
    }
    master_->Heartbeat(options_.client_id, Weak([epoch](Core& c, absl::Status s) {
                         c.OnHeartbeat(epoch, std::move(s));
                       }));
  }

  void OnHeartbeat(uint64_t epoch, absl::Status s) {
    {
      MutexLock lock(&mu_);
      if (s.ok()) return;
      ++stats_.heartbeats_failed;
      // NOT_FOUND: the master declared us dead and unmounted our segments;
      // anything else (a lost message) is retried by the next heartbeat.
      if (!absl::IsNotFound(s) || epoch != epoch_ || state_ != StoreWorkerState::kRunning) return;
    }
    BeginRegistration();
  }

  // --- Tasks ----------------------------------------------------------------

  void ScheduleFetchLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    fetch_timer_ = env_->executor->PostAfter(MsToNs(options_.fetch_interval_ms),
                                             Weak([](Core& c) { c.OnFetchTimer(); }));
  }

  void OnFetchTimer() {
    size_t batch = 0;
    {
      MutexLock lock(&mu_);
      fetch_timer_ = kNoTimer;
      if (state_ != StoreWorkerState::kRunning) return;
      ScheduleFetchLocked();
      if (fetch_outstanding_ || in_flight_ >= options_.copies_in_flight_max) return;
      batch = static_cast<size_t>(
          std::min(options_.fetch_batch_max, options_.copies_in_flight_max - in_flight_));
      fetch_outstanding_ = true;
      // Waiters registered before this fetch leaves are answered by it.
      for (auto& w : fetch_waiters_next_) fetch_waiters_sent_.push_back(std::move(w));
      fetch_waiters_next_.clear();
    }
    uint64_t ack = 0;
    uint64_t epoch = 0;
    {
      MutexLock lock(&mu_);
      ack = manifest_applied_seq_;
      epoch = epoch_;
    }
    master_->FetchTasks(options_.client_id, batch, ack,
                        Weak([epoch](Core& c, absl::StatusOr<FetchTasksResponse> r) {
                          c.OnFetched(epoch, std::move(r));
                        }));
  }

  void OnFetched(uint64_t epoch, absl::StatusOr<FetchTasksResponse> response) {
    // Whoever waited for this fetch looks again once its changes are applied
    // (or it failed).
    std::vector<absl::AnyInvocable<void() &&>> waiters;
    {
      MutexLock lock(&mu_);
      fetch_outstanding_ = false;
      waiters.swap(fetch_waiters_sent_);
      if (response.ok()) {
        // Changes from the master of an earlier registration are not this
        // master's sequence.
        if (epoch == epoch_) ApplyManifestChangesLocked(response->manifest_changes);
        stats_.tasks_fetched += static_cast<int64_t>(response->tasks.size());
        in_flight_ += static_cast<int64_t>(response->tasks.size());
      }
    }
    for (auto& w : waiters) std::move(w)();
    if (!response.ok()) return;  // the next fetch tick retries
    for (const Task& task : response->tasks) RunTask(task);
  }

  static CopyTaskFence FenceOf(const Task& task) {
    return CopyTaskFence{task.id, task.copy.version, task.copy.lease_id};
  }

  // The dispatch point between ordinary and dynamic (leased) copies.
  void StartCopyCall(const Task& task, MasterClient::Callback<CopyStartResponse> done) {
    if (task.copy.leased()) {
      master_->DynamicReplicaCopyStart(options_.client_id, FenceOf(task), std::move(done));
    } else {
      master_->CopyStart(options_.client_id, FenceOf(task), std::move(done));
    }
  }
  void EndCopyCall(const Task& task, MasterClient::StatusCallback done) {
    if (task.copy.leased()) {
      master_->DynamicReplicaCopyEnd(options_.client_id, FenceOf(task), std::move(done));
    } else {
      master_->CopyEnd(options_.client_id, FenceOf(task), std::move(done));
    }
  }
  void RevokeCopyCall(const Task& task, MasterClient::StatusCallback done) {
    if (task.copy.leased()) {
      master_->DynamicReplicaCopyRevoke(options_.client_id, FenceOf(task), std::move(done));
    } else {
      master_->CopyRevoke(options_.client_id, FenceOf(task), std::move(done));
    }
  }

  void RunTask(const Task& task) {
    if (task.type != TaskType::kReplicaCopy) {
      Report(task, false, absl::StrCat("unsupported task type ", TaskTypeName(task.type)));
      return;
    }
    if (task.copy.leased()) {
      MutexLock lock(&mu_);
      ++stats_.dynamic_tasks;
    }
    StartCopyCall(task, Weak([task](Core& c, absl::StatusOr<CopyStartResponse> r) {
                    c.OnCopyStarted(task, std::move(r));
                  }));
  }

  void OnCopyStarted(const Task& task, absl::StatusOr<CopyStartResponse> started) {
    if (!started.ok()) {
      {
        MutexLock lock(&mu_);
        ++stats_.copies_failed;
      }
      // Nothing was reserved: no revoke, just report.
      Report(task, false, absl::StrCat("CopyStart: ", started.status().ToString()));
      return;
    }
    {
      MutexLock lock(&mu_);
      ++stats_.copies_started;
    }
    mover_->StartCopy(started->range, Weak([task](Core& c, absl::Status s) {
                        c.OnTransferred(task, std::move(s));
                      }));
  }

  void OnTransferred(const Task& task, absl::Status transferred) {
    if (!transferred.ok()) {
      {
        MutexLock lock(&mu_);
        ++stats_.copies_failed;
      }
      Revoke(task, absl::StrCat("transfer: ", transferred.ToString()));
      return;
    }
    EndCopyCall(task, Weak([task](Core& c, absl::Status s) { c.OnEnded(task, std::move(s)); }));
  }

  void OnEnded(const Task& task, absl::Status ended) {
    if (!ended.ok()) {
      {
        MutexLock lock(&mu_);
        ++stats_.copies_failed;
      }
      // The target may still be reserved (for example a lost reply); revoking
      // a copy that is no longer in progress fails harmlessly.
      Revoke(task, absl::StrCat("CopyEnd: ", ended.ToString()));
      return;
    }
    {
      MutexLock lock(&mu_);
      ++stats_.copies_completed;
    }
    Report(task, true, "");
  }

  void Revoke(const Task& task, std::string reason) {
    RevokeCopyCall(task, Weak([task, reason = std::move(reason)](Core& c, absl::Status s) {
                     c.Report(task, false,
                              s.ok() ? reason : absl::StrCat(reason, "; CopyRevoke: ", s.ToString()));
                   }));
  }

  void Report(const Task& task, bool succeeded, std::string message) {
    MarkTaskCompleteRequest req{task.id, succeeded, std::move(message)};
    master_->MarkTaskComplete(options_.client_id, req, Weak([](Core& c, absl::Status) {
                                MutexLock lock(&c.mu_);
                                --c.in_flight_;
                                ++c.stats_.tasks_reported;
                              }));
  }

  Env* const env_;
  MasterClient* const master_;
  DataMover* const mover_;
  const StoreWorkerOptions options_;

  mutable Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  StoreWorkerState state_ ABSL_GUARDED_BY(mu_) = StoreWorkerState::kStopped;
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  TimerId heartbeat_timer_ ABSL_GUARDED_BY(mu_) = kNoTimer;
  TimerId fetch_timer_ ABSL_GUARDED_BY(mu_) = kNoTimer;
  TimerId retry_timer_ ABSL_GUARDED_BY(mu_) = kNoTimer;
  bool fetch_outstanding_ ABSL_GUARDED_BY(mu_) = false;
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  StoreWorkerStats stats_ ABSL_GUARDED_BY(mu_);
  // The manifest, by (segment, offset), and the last change applied.
  absl::btree_map<std::pair<SegmentId, uint64_t>, ManifestEntry> manifest_ ABSL_GUARDED_BY(mu_);
  uint64_t manifest_applied_seq_ ABSL_GUARDED_BY(mu_) = 0;
  // This registration reports a manifest: the snapshot being reported.
  bool reporting_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<ManifestEntry> report_ ABSL_GUARDED_BY(mu_);
  // CallAfterNextFetch: waiting for the next fetch to leave, and for the
  // fetch in flight to be answered.
  std::vector<absl::AnyInvocable<void() &&>> fetch_waiters_next_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::AnyInvocable<void() &&>> fetch_waiters_sent_ ABSL_GUARDED_BY(mu_);
};

StoreWorker::StoreWorker(Env* env, MasterClient* master, DataMover* mover,
                         StoreWorkerOptions options) {
  HS_CHECK(env != nullptr && master != nullptr && mover != nullptr);
  HS_CHECK_OK(options.Validate());
  core_ = std::make_shared<Core>(env, master, mover, std::move(options));
}

StoreWorker::~StoreWorker() { core_->Stop(); }

void StoreWorker::Start() { core_->Start(); }
void StoreWorker::Stop() { core_->Stop(); }
StoreWorkerState StoreWorker::state() const { return core_->state(); }
StoreWorkerStats StoreWorker::stats() const { return core_->stats(); }
int64_t StoreWorker::copies_in_flight() const { return core_->copies_in_flight(); }
std::vector<ManifestEntry> StoreWorker::Manifest() const { return core_->Manifest(); }
std::vector<ManifestEntry> StoreWorker::ManifestOverlapping(SegmentId segment, uint64_t offset,
                                                            uint64_t size,
                                                            size_t entries_max) const {
  return core_->ManifestOverlapping(segment, offset, size, entries_max);
}
void StoreWorker::CallAfterNextFetch(absl::AnyInvocable<void() &&> done) {
  core_->CallAfterNextFetch(std::move(done));
}

}  // namespace heatsink
