#include "sim/estimate.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "core/env/rng.h"
#include "nlohmann/json.hpp"
#include "sim/report_format.h"
#include "sim/sim_env.h"
#include "sim/trace.h"
#include "sim/workloads.h"

namespace heatsink::sim {
namespace {

constexpr char kNullDomain[] = "-";

std::string ObjectName(const std::string& tenant, const std::string& key) {
  std::string out = tenant;
  out.push_back('\0');
  out += key;
  return out;
}

// An extra `size_bytes` key after the documented ones (a later log version
// may carry the object size); absent in version 1 logs.
std::optional<uint64_t> LoggedSize(const LoggedDecision& d) {
  if (d.text.find("\"size_bytes\"") == std::string::npos) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(d.text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  auto it = j.find("size_bytes");
  if (it == j.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<uint64_t>();
}

// The would-be replicas of one object (+ target domain).
struct HeldReplicas {
  std::optional<Version> version;
  int64_t count = 0;
  uint64_t bytes = 0;
  std::string group;  // the group the bytes were charged to (last copy's)
};

struct GroupState {
  EstimateGroup totals;
  uint64_t extra_memory_bytes = 0;
};

class Estimator {
 public:
  explicit Estimator(const EstimateOptions& options) : options_(options) {}

  void OnObjectEvent(const ObjectEvent& e) {
    const std::string name = ObjectName(e.tenant, e.key);
    sizes_[name] = e.removed ? std::optional<uint64_t>() : std::optional<uint64_t>(e.size_bytes);
    // A remove drops every replica; a put of an existing key is a new
    // version, and replicas of the old one are dropped with it.
    ReleaseObject(name, e.t_ns);
  }

  void OnDecision(const LoggedDecision& d) {
    const DecisionRecord& r = d.record;
    // A drop (evict / release) is not an admission decision.
    if (r.outcome == DecisionOutcome::kDropped) return;
    ++est_.decisions;
    switch (r.outcome) {
      case DecisionOutcome::kAccepted: ++est_.accepted; return;
      case DecisionOutcome::kRejected: ++est_.rejected; return;
      case DecisionOutcome::kDropped: return;
      case DecisionOutcome::kWouldPropose: break;
    }
    ++est_.would_propose;
    const std::string requester = r.requester_domain.value_or(kNullDomain);
    const std::string target = r.target_domain.value_or(kNullDomain);
    const std::string group_name = ObjectName(requester, target);
    GroupState& group = Group(requester, target, group_name);
    ++group.totals.would_propose;

    const std::string object = ObjectName(r.tenant, r.key);
    const std::string held_name = ObjectName(object, r.target_domain.value_or(""));
    HeldReplicas& held = held_[held_name];
    objects_with_held_[object].insert(held_name);
    if (held.version.has_value() && r.version.has_value() && *held.version != *r.version) {
      Release(&held, r.t_ns);
    }
    if (r.version.has_value()) held.version = r.version;
    // The cap counts originals in stage 1; a domain-aware log does not say
    // in which domain the originals are, so only would-be copies count there.
    const int64_t originals = r.target_domain.has_value() ? 0 : options_.original_replicas;
    if (originals + held.count >= options_.max_memory_replicas) {
      ++est_.capped;
      ++group.totals.capped;
      return;
    }
    uint64_t size = options_.default_object_bytes;
    if (std::optional<uint64_t> logged = LoggedSize(d); logged.has_value()) {
      size = *logged;
    } else if (auto it = sizes_.find(object); it != sizes_.end() && it->second.has_value()) {
      size = *it->second;
    } else {
      ++est_.sizes_unknown;
    }
    ++held.count;
    held.bytes += size;
    held.group = group_name;
    ++est_.copies;
    est_.bytes += size;
    ++group.totals.copies;
    group.totals.bytes += size;
    group.extra_memory_bytes += size;
    group.totals.extra_memory_peak_bytes =
        std::max(group.totals.extra_memory_peak_bytes, group.extra_memory_bytes);
    Interval(r.t_ns).copies += 1;
    Interval(r.t_ns).bytes += size;
    AddMemory(r.t_ns, static_cast<int64_t>(size));
  }

  Estimate Finish(TimeNs last_t_ns) {
    const DurationNs step = options_.time_step_ns;
    est_.time_step_ns = step;
    est_.duration_ns = options_.duration_ns > 0 ? options_.duration_ns
                                                : (last_t_ns / step + 1) * step;
    const int64_t intervals = (est_.duration_ns + step - 1) / step;
    // Intervals without events carry the memory of the one before.
    uint64_t memory = 0;
    for (int64_t i = 0; i < intervals; ++i) {
      EstimateInterval row;
      row.t_start_ns = i * step;
      if (auto it = intervals_.find(i); it != intervals_.end()) {
        row.copies = it->second.copies;
        row.bytes = it->second.bytes;
        memory = it->second.extra_memory_bytes;
      }
      row.extra_memory_bytes = memory;
      if (row.copies > est_.copies_interval_peak) {
        est_.copies_interval_peak = row.copies;
        est_.copies_interval_peak_t_ns = row.t_start_ns;
      }
      est_.intervals.push_back(row);
    }
    // Records past the duration (a log longer than the period given) still
    // count in the totals; their intervals are kept too.
    for (auto it = intervals_.lower_bound(intervals); it != intervals_.end(); ++it) {
      EstimateInterval row;
      row.t_start_ns = it->first * step;
      row.copies = it->second.copies;
      row.bytes = it->second.bytes;
      row.extra_memory_bytes = it->second.extra_memory_bytes;
      if (row.copies > est_.copies_interval_peak) {
        est_.copies_interval_peak = row.copies;
        est_.copies_interval_peak_t_ns = row.t_start_ns;
      }
      est_.intervals.push_back(row);
    }
    est_.extra_memory_final_bytes = memory_;
    for (auto& [name, g] : groups_) est_.groups.push_back(g.totals);
    return std::move(est_);
  }

 private:
  struct IntervalState {
    int64_t copies = 0;
    uint64_t bytes = 0;
    uint64_t extra_memory_bytes = 0;  // after the last change in the interval
  };

  GroupState& Group(const std::string& requester, const std::string& target,
                    const std::string& name) {
    auto [it, inserted] = groups_.try_emplace(name);
    if (inserted) {
      it->second.totals.requester_domain = requester;
      it->second.totals.target_domain = target;
    }
    return it->second;
  }

  IntervalState& Interval(TimeNs t_ns) {
    const int64_t index = t_ns / options_.time_step_ns;
    auto [it, inserted] = intervals_.try_emplace(index);
    if (inserted) {
      // Start from the memory held when the interval begins.
      it->second.extra_memory_bytes = memory_;
    }
    return it->second;
  }

  void AddMemory(TimeNs t_ns, int64_t delta) {
    memory_ = static_cast<uint64_t>(static_cast<int64_t>(memory_) + delta);
    Interval(t_ns).extra_memory_bytes = memory_;
    if (memory_ > est_.extra_memory_peak_bytes) {
      est_.extra_memory_peak_bytes = memory_;
      est_.extra_memory_peak_t_ns = t_ns;
    }
  }

  void Release(HeldReplicas* held, TimeNs t_ns) {
    if (held->bytes > 0) {
      auto g = groups_.find(held->group);
      HS_CHECK(g != groups_.end());
      g->second.extra_memory_bytes -= held->bytes;
      AddMemory(t_ns, -static_cast<int64_t>(held->bytes));
    }
    held->count = 0;
    held->bytes = 0;
  }

  void ReleaseObject(const std::string& object, TimeNs t_ns) {
    auto it = objects_with_held_.find(object);
    if (it == objects_with_held_.end()) return;
    for (const std::string& held_name : it->second) {
      HeldReplicas& held = held_[held_name];
      Release(&held, t_ns);
      held.version.reset();
    }
  }

  const EstimateOptions options_;
  Estimate est_;
  uint64_t memory_ = 0;
  std::map<std::string, std::optional<uint64_t>> sizes_;  // object -> current size
  std::map<std::string, HeldReplicas> held_;              // object + target domain
  std::map<std::string, std::set<std::string>> objects_with_held_;
  std::map<std::string, GroupState> groups_;              // requester + target
  std::map<int64_t, IntervalState> intervals_;
};

}  // namespace

double Estimate::copies_per_second_mean() const {
  if (duration_ns <= 0) return 0;
  return static_cast<double>(copies) * static_cast<double>(kNsPerSec) /
         static_cast<double>(duration_ns);
}

double Estimate::copies_per_second_peak() const {
  if (time_step_ns <= 0) return 0;
  return static_cast<double>(copies_interval_peak) * static_cast<double>(kNsPerSec) /
         static_cast<double>(time_step_ns);
}

absl::StatusOr<Estimate> EstimateFromDecisions(const std::vector<LoggedDecision>& decisions,
                                               const std::vector<ObjectEvent>& objects,
                                               const EstimateOptions& options) {
  if (options.max_memory_replicas < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_memory_replicas must be at least 1, got ", options.max_memory_replicas));
  }
  if (options.original_replicas < 0) {
    return absl::InvalidArgumentError("original_replicas must not be negative");
  }
  if (options.time_step_ns <= 0) {
    return absl::InvalidArgumentError("the time step must be positive");
  }
  if (options.duration_ns < 0) {
    return absl::InvalidArgumentError("the duration must not be negative");
  }
  Estimator estimator(options);
  // Merge by time; at equal time the object event (a put or remove) comes
  // first: the master applies it before it serves the reads that follow.
  size_t oi = 0;
  TimeNs last_t_ns = 0;
  for (const LoggedDecision& d : decisions) {
    while (oi < objects.size() && objects[oi].t_ns <= d.record.t_ns) {
      estimator.OnObjectEvent(objects[oi++]);
    }
    estimator.OnDecision(d);
    last_t_ns = std::max(last_t_ns, d.record.t_ns);
  }
  // Later removals still release memory within the period.
  const TimeNs end = options.duration_ns > 0 ? options.duration_ns : last_t_ns + 1;
  while (oi < objects.size() && objects[oi].t_ns < end) estimator.OnObjectEvent(objects[oi++]);
  return estimator.Finish(last_t_ns);
}

absl::StatusOr<std::vector<ObjectEvent>> ScenarioObjectEvents(
    const Scenario& scenario, uint64_t seed, const std::vector<std::string>& keys) {
  const std::set<std::string> wanted(keys.begin(), keys.end());
  const Rng workload_rng = Rng(seed).Fork(kWorkloadSubsystem);
  HS_ASSIGN_OR_RETURN(std::unique_ptr<OpStream> ops,
                      MakeScenarioOpStream(scenario, workload_rng));
  std::vector<ObjectEvent> out;
  SimOp op;
  while (true) {
    HS_ASSIGN_OR_RETURN(bool more, ops->Next(&op));
    if (!more) break;
    if (op.kind != SimOpKind::kPut && op.kind != SimOpKind::kBatchPut &&
        op.kind != SimOpKind::kRemove) {
      continue;
    }
    for (const std::string& key : op.keys) {
      const std::string tenant = op.tenant.empty() ? "default" : op.tenant;
      if (!wanted.empty() && wanted.count(ObjectName(tenant, key)) == 0) continue;
      ObjectEvent e;
      e.t_ns = op.t_ns;
      e.tenant = tenant;
      e.key = key;
      e.removed = op.kind == SimOpKind::kRemove;
      e.size_bytes = e.removed ? 0 : static_cast<uint64_t>(op.size_bytes);
      out.push_back(std::move(e));
    }
  }
  return out;
}

namespace {

std::optional<std::string> KnobValue(const RunResult& run, const std::string& name) {
  for (const auto& [k, v] : run.knobs) {
    if (k == name) return v;
  }
  return std::nullopt;
}

// The observe run's limit lines, and the avoidable bytes the would-be
// replicas remove (EstimateLimits). The first would_propose of each
// (object, version, target domain) counts; later ones place nothing new.
EstimateLimits EstimateLimitsOf(const RunResult& run,
                                const std::vector<LoggedDecision>& decisions) {
  HS_CHECK(run.limit_recorder != nullptr);
  EstimateLimits out;
  out.avoidable_bytes = run.limits.avoidable_bytes;
  out.online_removed_bytes = run.limits.online.removed_bytes;
  out.clairvoyant_removed_bytes = run.limits.clairvoyant.removed_bytes;
  out.clairvoyant_memory_mean_bytes = run.limits.clairvoyant.memory_mean_bytes;
  std::map<std::string, int32_t> domain_index;
  for (size_t i = 0; i < run.domains.size(); ++i) {
    domain_index[run.domains[i]] = static_cast<int32_t>(i);
  }
  std::set<std::tuple<std::string, std::string, Version, int32_t>> placed;
  uint64_t removed = 0;
  // A domain-aware run names the target domain of every would_propose.
  bool any_target = KnobValue(run, "dynamic_replication_domain_aware") == "true";
  for (const LoggedDecision& d : decisions) {
    const DecisionRecord& r = d.record;
    if (r.outcome != DecisionOutcome::kWouldPropose || !r.target_domain.has_value() ||
        !r.version.has_value()) {
      continue;
    }
    any_target = true;
    const auto domain = domain_index.find(*r.target_domain);
    if (domain == domain_index.end()) continue;
    if (!placed.emplace(r.tenant, r.key, *r.version, domain->second).second) continue;
    removed += run.limit_recorder->AvoidableBytesAfter(heatsink::ObjectName{r.tenant, r.key}, *r.version,
                                                       domain->second, r.t_ns);
  }
  if (any_target) out.removed_bytes = removed;
  return out;
}

}  // namespace

absl::StatusOr<ScenarioEstimate> EstimateScenario(const Scenario& scenario,
                                                  RunOptions run_options) {
  if (run_options.out_dir.empty()) {
    return absl::InvalidArgumentError("an estimate needs an output directory for its run");
  }
  // The estimate is what observe saw; a scripted switch of the mode would
  // let the run create (or stop counting) replicas part of the way.
  for (const Workload& w : scenario.workloads) {
    for (const ScriptOp& op : w.scripted.ops) {
      if (op.kind == ScriptOpKind::kSetKnob && op.knob_name == "dynamic_replication_mode") {
        return absl::InvalidArgumentError(
            absl::StrCat(op.where,
                         ": an estimate runs in observe mode throughout; remove this "
                         "set_knob of dynamic_replication_mode"));
      }
    }
  }
  run_options.overrides.push_back(KnobOverride{"dynamic_replication_mode", "observe"});
  const uint64_t seed = run_options.seed.value_or(scenario.seed);
  run_options.seed = seed;
  run_options.keep_limit_reads = true;
  HS_ASSIGN_OR_RETURN(RunResult run, RunScenario(scenario, run_options));
  HS_ASSIGN_OR_RETURN(std::vector<LoggedDecision> decisions,
                      ReadDecisionLogFile(JoinPath(run_options.out_dir, "decisions.jsonl")));

  EstimateOptions options;
  if (std::optional<std::string> v = KnobValue(run, "dynamic_replication_max_memory_replicas")) {
    if (!absl::SimpleAtoi(*v, &options.max_memory_replicas)) {
      return absl::InternalError(absl::StrCat("unreadable max_memory_replicas value ", *v));
    }
  }
  options.time_step_ns = run.time_step_ns > 0 ? run.time_step_ns : kNsPerSec;
  options.duration_ns = run.duration_ns;

  std::vector<std::string> keys;
  for (const LoggedDecision& d : decisions) {
    if (d.record.outcome == DecisionOutcome::kWouldPropose) {
      keys.push_back(ObjectName(d.record.tenant, d.record.key));
    }
  }
  std::vector<ObjectEvent> objects;
  if (!keys.empty()) {
    HS_ASSIGN_OR_RETURN(objects, ScenarioObjectEvents(scenario, seed, keys));
  }
  HS_ASSIGN_OR_RETURN(Estimate estimate, EstimateFromDecisions(decisions, objects, options));
  estimate.limits = EstimateLimitsOf(run, decisions);
  run.limit_recorder.reset();  // the avoidable reads are not needed any more
  return ScenarioEstimate{std::move(run), std::move(estimate)};
}

absl::StatusOr<Scenario> TraceScenario(const std::string& trace_path,
                                       const TraceScenarioOptions& options) {
  if (!(options.replay_speed > 0)) {
    return absl::InvalidArgumentError("--replay-speed must be positive");
  }
  int64_t duration_s = options.duration_s;
  if (duration_s <= 0) {
    TraceLimits limits;
    if (options.request_limit > 0) {
      limits.request_limit = static_cast<size_t>(options.request_limit);
    }
    HS_ASSIGN_OR_RETURN(std::vector<TraceRequest> requests, ReadTraceFile(trace_path, limits));
    int64_t last_ms = 0;
    for (const TraceRequest& r : requests) last_ms = std::max(last_ms, r.timestamp_ms);
    duration_s = static_cast<int64_t>(static_cast<double>(last_ms) / 1000.0 /
                                      options.replay_speed) + 10;
  }
  auto domain = [](const std::string& name, const std::string& host,
                   const std::string& role) {
    return nlohmann::ordered_json{
        {"name", name},
        {"hosts",
         {{{"name", host},
           {"count", 2},
           {"segments", {{{"name", "mem"}, {"capacity_bytes", "16GiB"}}}},
           {"clients", {{{"name", "c"}}}},
           {role, {{{"name", "i0"}}}}}}}};
  };
  nlohmann::ordered_json workload = {
      {"type", "trace"},
      {"name", "trace"},
      {"path", trace_path},
      {"replay_speed", options.replay_speed},
      {"prefill", {{"policy", "hash"}}},
      {"decode", {{"policy", "round_robin"}}},
  };
  if (options.request_limit > 0) workload["request_limit"] = options.request_limit;
  nlohmann::ordered_json j = {
      {"name", "trace-estimate"},
      {"description", "Trace replay on the default estimate topology (sim/estimate.h)."},
      {"seed", options.seed},
      {"duration_s", duration_s},
      {"topology",
       {{"domains",
         {domain("prefill-a", "pa", "prefill_instances"),
          domain("prefill-b", "pb", "prefill_instances"),
          domain("decode-a", "da", "decode_instances"),
          domain("decode-b", "db", "decode_instances")}}}},
      {"knobs", {{"dynamic_replication_mode", "observe"},
                 {"dynamic_replication_domain_aware", true}}},
      {"workloads", {workload}},
  };
  return ParseScenario(j.dump(), trace_path, "", SimulatorLoadOptions());
}

std::string FormatEstimate(const Estimate& e, const std::string& source) {
  std::string out = absl::StrCat("estimate of enforce from observe decisions: ", source, "\n");
  absl::StrAppend(&out, "  decisions ", e.decisions, ": would_propose ", e.would_propose,
                  ", rejected ", e.rejected, ", accepted ", e.accepted, "\n");
  absl::StrAppend(&out, "  copies ", e.copies, " (", e.capped,
                  " more would hit the replica limit), bytes ", e.bytes, " (",
                  FormatBytesIec(e.bytes), ")\n");
  absl::StrAppend(&out, "  copies/s mean ", FormatFixed(e.copies_per_second_mean(), 3),
                  ", peak ", FormatFixed(e.copies_per_second_peak(), 3), " (interval at ",
                  FormatNsAsSeconds(e.copies_interval_peak_t_ns, 3), " s, step ",
                  FormatNsAsSeconds(e.time_step_ns, 3), " s) over ",
                  FormatNsAsSeconds(e.duration_ns, 3), " s\n");
  absl::StrAppend(&out, "  extra memory peak ", e.extra_memory_peak_bytes, " (",
                  FormatBytesIec(e.extra_memory_peak_bytes), ") at ",
                  FormatNsAsSeconds(e.extra_memory_peak_t_ns, 3), " s, final ",
                  FormatBytesIec(e.extra_memory_final_bytes), "\n");
  if (e.limits.has_value()) {
    const EstimateLimits& l = *e.limits;
    auto share = [](uint64_t part, uint64_t whole) {
      return whole == 0 ? std::string("n/a")
                        : FormatFixed(static_cast<double>(part) / static_cast<double>(whole), 4);
    };
    absl::StrAppend(&out, "  avoidable cross-domain bytes ", FormatBytesIec(l.avoidable_bytes),
                    ": online line removes ", FormatBytesIec(l.online_removed_bytes),
                    ", clairvoyant line ", FormatBytesIec(l.clairvoyant_removed_bytes), "\n");
    if (l.removed_bytes.has_value()) {
      absl::StrAppend(&out, "  the copies would remove ", FormatBytesIec(*l.removed_bytes), " (",
                      share(*l.removed_bytes, l.online_removed_bytes), " of the online line, ",
                      share(*l.removed_bytes, l.clairvoyant_removed_bytes),
                      " of the clairvoyant line)\n");
    } else {
      out += "  the decisions name no target domain: removal not estimated\n";
    }
  }
  if (e.sizes_unknown > 0) {
    absl::StrAppend(&out, "  note: ", e.sizes_unknown,
                    " copies of objects of unknown size counted with --object-bytes\n");
  }
  if (!e.groups.empty()) {
    TextTable table({"requester -> target", "would-propose", "copies", "capped", "bytes",
                     "extra memory peak"});
    for (const EstimateGroup& g : e.groups) {
      table.AddRow({absl::StrCat(g.requester_domain, " -> ", g.target_domain),
                    absl::StrCat(g.would_propose), absl::StrCat(g.copies),
                    absl::StrCat(g.capped), FormatBytesIec(g.bytes),
                    FormatBytesIec(g.extra_memory_peak_bytes)});
    }
    absl::StrAppend(&out, "\n", table.Render());
  }
  return out;
}

std::string EstimateToJson(const Estimate& e, const std::string& source) {
  JsonWriter w;
  w.BeginObject();
  w.Key("format_version").Int(1);
  w.Key("source").String(source);
  w.Key("decisions").Int(e.decisions);
  w.Key("would_propose").Int(e.would_propose);
  w.Key("accepted").Int(e.accepted);
  w.Key("rejected").Int(e.rejected);
  w.Key("copies").Int(e.copies);
  w.Key("capped").Int(e.capped);
  w.Key("bytes").Uint(e.bytes);
  w.Key("sizes_unknown").Int(e.sizes_unknown);
  w.Key("duration_ns").Int(e.duration_ns);
  w.Key("time_step_ns").Int(e.time_step_ns);
  w.Key("copies_per_second_mean").Double(e.copies_per_second_mean(), 6);
  w.Key("copies_per_second_peak").Double(e.copies_per_second_peak(), 6);
  w.Key("copies_interval_peak_t_ns").Int(e.copies_interval_peak_t_ns);
  w.Key("extra_memory_peak_bytes").Uint(e.extra_memory_peak_bytes);
  w.Key("extra_memory_peak_t_ns").Int(e.extra_memory_peak_t_ns);
  w.Key("extra_memory_final_bytes").Uint(e.extra_memory_final_bytes);
  w.Key("limits");
  if (e.limits.has_value()) {
    w.BeginObject()
        .Key("avoidable_bytes").Uint(e.limits->avoidable_bytes)
        .Key("online_removed_bytes").Uint(e.limits->online_removed_bytes)
        .Key("clairvoyant_removed_bytes").Uint(e.limits->clairvoyant_removed_bytes)
        .Key("clairvoyant_memory_mean_bytes").Uint(e.limits->clairvoyant_memory_mean_bytes)
        .Key("removed_bytes");
    if (e.limits->removed_bytes.has_value()) {
      w.Uint(*e.limits->removed_bytes);
    } else {
      w.Null();
    }
    w.EndObject();
  } else {
    w.Null();
  }
  w.Key("groups").BeginArray();
  for (const EstimateGroup& g : e.groups) {
    w.BeginObject();
    w.Key("requester_domain").String(g.requester_domain);
    w.Key("target_domain").String(g.target_domain);
    w.Key("would_propose").Int(g.would_propose);
    w.Key("copies").Int(g.copies);
    w.Key("capped").Int(g.capped);
    w.Key("bytes").Uint(g.bytes);
    w.Key("extra_memory_peak_bytes").Uint(g.extra_memory_peak_bytes);
    w.EndObject();
  }
  w.EndArray();
  w.Key("intervals").BeginArray();
  for (const EstimateInterval& i : e.intervals) {
    w.BeginObject();
    w.Key("t_ns").Int(i.t_start_ns);
    w.Key("copies").Int(i.copies);
    w.Key("bytes").Uint(i.bytes);
    w.Key("extra_memory_bytes").Uint(i.extra_memory_bytes);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Finish();
}

EstimateTotals TotalsOf(const Estimate& e) {
  EstimateTotals t;
  t.would_propose = e.would_propose;
  t.copies = e.copies;
  t.capped = e.capped;
  t.bytes = e.bytes;
  t.copies_per_second_mean = e.copies_per_second_mean();
  t.copies_per_second_peak = e.copies_per_second_peak();
  t.extra_memory_peak_bytes = e.extra_memory_peak_bytes;
  t.limits = e.limits;
  return t;
}

absl::StatusOr<EstimateTotals> ParseEstimateTotals(const std::string& json_text) {
  const nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  if (!j.is_object()) return absl::InvalidArgumentError("estimate result is not a JSON object");
  EstimateTotals t;
  auto int_field = [&](const char* name, auto* out) -> absl::Status {
    auto it = j.find(name);
    if (it == j.end() || !it->is_number_integer()) {
      return absl::InvalidArgumentError(absl::StrCat("estimate result lacks integer ", name));
    }
    *out = it->get<std::remove_pointer_t<decltype(out)>>();
    return absl::OkStatus();
  };
  auto double_field = [&](const char* name, double* out) -> absl::Status {
    auto it = j.find(name);
    if (it == j.end() || !it->is_number()) {
      return absl::InvalidArgumentError(absl::StrCat("estimate result lacks number ", name));
    }
    *out = it->get<double>();
    return absl::OkStatus();
  };
  HS_RETURN_IF_ERROR(int_field("would_propose", &t.would_propose));
  HS_RETURN_IF_ERROR(int_field("copies", &t.copies));
  HS_RETURN_IF_ERROR(int_field("capped", &t.capped));
  HS_RETURN_IF_ERROR(int_field("bytes", &t.bytes));
  HS_RETURN_IF_ERROR(double_field("copies_per_second_mean", &t.copies_per_second_mean));
  HS_RETURN_IF_ERROR(double_field("copies_per_second_peak", &t.copies_per_second_peak));
  HS_RETURN_IF_ERROR(int_field("extra_memory_peak_bytes", &t.extra_memory_peak_bytes));
  if (auto it = j.find("limits"); it != j.end() && it->is_object()) {
    EstimateLimits l;
    auto limit_field = [&](const char* name, uint64_t* out) -> absl::Status {
      auto f = it->find(name);
      if (f == it->end() || !f->is_number_unsigned()) {
        return absl::InvalidArgumentError(absl::StrCat("estimate result lacks limits.", name));
      }
      *out = f->get<uint64_t>();
      return absl::OkStatus();
    };
    HS_RETURN_IF_ERROR(limit_field("avoidable_bytes", &l.avoidable_bytes));
    HS_RETURN_IF_ERROR(limit_field("online_removed_bytes", &l.online_removed_bytes));
    HS_RETURN_IF_ERROR(limit_field("clairvoyant_removed_bytes", &l.clairvoyant_removed_bytes));
    HS_RETURN_IF_ERROR(
        limit_field("clairvoyant_memory_mean_bytes", &l.clairvoyant_memory_mean_bytes));
    if (auto r = it->find("removed_bytes"); r != it->end() && !r->is_null()) {
      uint64_t removed = 0;
      HS_RETURN_IF_ERROR(limit_field("removed_bytes", &removed));
      l.removed_bytes = removed;
    }
    t.limits = l;
  }
  return t;
}

}  // namespace heatsink::sim
