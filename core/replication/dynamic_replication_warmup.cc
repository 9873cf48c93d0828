// DynamicReplication, warmup (RFC stage 2): a domain seen for the first time,
// or named by RequestWarmup, gets copies of the hottest objects, admitted one
// by one as decisions of kind `warmup`, within the copies-in-flight and byte
// budgets. Part one is dynamic_replication.cc.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "core/replication/dynamic_replication.h"

namespace heatsink {

void DynamicReplication::ScheduleDomainPoll() {
  MutexLock lock(&timer_mu_);
  if (stopping_ || domain_poll_timer_ != kNoTimer) return;
  domain_poll_timer_ =
      env_->executor->PostAfter(MsToNs(knobs_.dynamic_replication_warmup_domain_poll_ms), [this]() {
        if (!TimerFired(&DynamicReplication::domain_poll_timer_)) return;
        // Mode off stops the poll; SetMode starts it again.
        if (!enabled()) return;
        PollDomains();
        ScheduleDomainPoll();
      });
}

void DynamicReplication::PollDomains() {
  MutexLock control(&control_mu_);
  std::set<Domain> seen;
  for (const SegmentView& s : master_->ListSegments()) {
    if (!s.unmounting) seen.insert(NormalizeDomain(s.location.domain));
  }
  bool started = false;
  for (const Domain& d : seen) {
    if (known_domains_.insert(d).second) {
      StartWarmup(d);
      started = true;
    }
  }
  if (started || !warmup_jobs_.empty()) RunWarmup();
}

absl::StatusOr<WarmupRequestResult> DynamicReplication::RequestWarmup(absl::string_view domain) {
  if (!knobs_.dynamic_replication_warmup_enabled) {
    return absl::FailedPreconditionError("warmup needs dynamic_replication_warmup_enabled");
  }
  if (!enabled()) return absl::FailedPreconditionError("dynamic_replication_mode is off");
  if (domain.size() > 256) return absl::InvalidArgumentError("domain name too long");
  // The candidates' heat includes every read made before the request.
  DrainReads();
  MutexLock control(&control_mu_);
  const Domain d = NormalizeDomain(domain);
  known_domains_.insert(d);
  StartWarmup(d);
  WarmupRequestResult result;
  result.domain = d;
  for (const WarmupJob& job : warmup_jobs_) {
    if (job.domain == d) result.candidates = static_cast<int64_t>(job.queue.size() - job.next);
  }
  RunWarmup();
  return result;
}

void DynamicReplication::StartWarmup(const Domain& domain) {
  const TimeNs now = Now();
  // Recent heat, summed over requester domains, plus the objects that hold
  // dynamic replicas: a capped object records no heat (DESIGN 2), yet it is
  // exactly what a new domain will read.
  std::map<ObjectName, int64_t> heat;
  for (const HotKey& h : window_.HotKeys(
           now, 1, static_cast<size_t>(knobs_.dynamic_replication_heat_window_entries_max))) {
    heat[h.key.object()] += h.count_in_window;
  }
  {
    MutexLock lock(&mu_);
    for (const auto& [name, replicas] : dynamic_) heat.emplace(name, 0);
  }
  std::vector<std::pair<int64_t, ObjectName>> ranked;
  ranked.reserve(heat.size());
  for (auto& [name, count] : heat) ranked.emplace_back(count, name);
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return std::tie(b.first, a.second) < std::tie(a.first, b.second);
  });
  if (static_cast<int64_t>(ranked.size()) > knobs_.dynamic_replication_warmup_objects_max) {
    ranked.resize(static_cast<size_t>(knobs_.dynamic_replication_warmup_objects_max));
  }
  WarmupJob job;
  job.domain = domain;
  for (auto& [count, name] : ranked) job.queue.push_back(std::move(name));
  // A new request for a domain replaces its unfinished job.
  warmup_jobs_.erase(std::remove_if(warmup_jobs_.begin(), warmup_jobs_.end(),
                                    [&](const WarmupJob& j) { return j.domain == domain; }),
                     warmup_jobs_.end());
  if (!job.queue.empty()) warmup_jobs_.push_back(std::move(job));
}

int64_t DynamicReplication::WarmupInFlight() const {
  MutexLock lock(&mu_);
  int64_t n = 0;
  for (const auto& [key, p] : leases_.actions()) n += p.lease.warmup ? 1 : 0;
  return n;
}

void DynamicReplication::RunWarmup() {
  if (!enabled()) {  // SetMode(off) dropped the jobs; none start while off
    warmup_jobs_.clear();
    return;
  }
  while (!warmup_jobs_.empty()) {
    WarmupJob& job = warmup_jobs_.front();
    while (job.next < job.queue.size()) {
      if (WarmupInFlight() >= knobs_.dynamic_replication_warmup_copies_in_flight_max) {
        // Resumed when a warmup copy ends (ResumeWarmupIfWaiting) or by the
        // poll timer.
        return;
      }
      const ObjectName& name = job.queue[job.next];
      AdmissionInput input;
      input.kind = DecisionKind::kWarmup;
      input.heat_key = HeatKey(name.tenant, name.key, "");
      input.target_domain = job.domain;
      AdmissionResult result = Admit(input);
      if (result.deferred) {
        // Byte budget spent: try again when the next budget window opens.
        ScheduleWarmupResume(warmup_budget_window_start_ns_ + kWarmupBudgetWindowNs - Now());
        return;
      }
      Emit(result.record);
      ++job.next;
    }
    warmup_jobs_.erase(warmup_jobs_.begin());
  }
}

void DynamicReplication::ResumeWarmupIfWaiting() {
  if (!warmup_jobs_.empty()) RunWarmup();
}

void DynamicReplication::ScheduleWarmupResume(DurationNs delay) {
  MutexLock lock(&timer_mu_);
  if (stopping_ || warmup_timer_ != kNoTimer) return;
  warmup_timer_ = env_->executor->PostAfter(std::max<DurationNs>(1, delay), [this]() {
    if (!TimerFired(&DynamicReplication::warmup_timer_)) return;
    MutexLock control(&control_mu_);
    RunWarmup();
  });
}

}  // namespace heatsink
