// The scenario loader's `faults` section: timed worker crashes, segment
// unmounts and trunk faults, plus the probabilistic copy and control-message
// faults. Overlapping intervals for one host, segment or trunk are rejected,
// because "crash a worker that is already down" has no meaning to replay.
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "sim/json_fields.h"
#include "sim/scenario.h"
#include "sim/scenario_parse.h"

namespace heatsink::sim::scenario_internal {
namespace {

// One down interval [at, until) of something named `subject`, with the field
// to blame when it overlaps another.
struct Interval {
  std::string subject;
  TimeNs at_ns = 0;
  std::optional<TimeNs> until_ns;  // nullopt: never comes back
  JsonField field;
};

absl::Status CheckNoOverlap(std::vector<Interval> intervals, absl::string_view what) {
  std::stable_sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
    return std::tie(a.subject, a.at_ns) < std::tie(b.subject, b.at_ns);
  });
  for (size_t i = 1; i < intervals.size(); ++i) {
    const Interval& prev = intervals[i - 1];
    const Interval& cur = intervals[i];
    if (prev.subject != cur.subject) continue;
    if (!prev.until_ns.has_value() || *prev.until_ns > cur.at_ns) {
      return cur.field.Error(absl::StrCat(what, " \"", cur.subject, "\" is already down at ",
                                          cur.at_ns, " ns (an earlier fault overlaps)"));
    }
  }
  return absl::OkStatus();
}

// `<key>` (required) and `<until_key>` (optional, strictly later) as run times.
absl::Status ReadWindow(const ParseContext& ctx, ObjectReader& r, absl::string_view key,
                        absl::string_view until_key, TimeNs* at, std::optional<TimeNs>* until) {
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> at_field, r.Field(key, Need::kRequired));
  HS_ASSIGN_OR_RETURN(*at, ReadRunTime(ctx, *at_field, kNsPerSec));
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> until_field, r.Field(until_key, Need::kOptional));
  if (until_field.has_value()) {
    HS_ASSIGN_OR_RETURN(TimeNs t, ReadRunTime(ctx, *until_field, kNsPerSec));
    if (t <= *at) {
      return until_field->Error(absl::StrCat("must be later than ", key));
    }
    *until = t;
  }
  return absl::OkStatus();
}

absl::Status ParseWorkerCrashes(const ParseContext& ctx, const JsonField& f,
                                std::vector<WorkerCrash>* out) {
  HS_ASSIGN_OR_RETURN(std::vector<JsonField> items, ReadArray(f, ctx.options->limits.faults_max));
  std::vector<Interval> intervals;
  for (const JsonField& item : items) {
    HS_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Make(item.source, *item.value, item.path));
    WorkerCrash crash;
    HS_ASSIGN_OR_RETURN(std::optional<JsonField> host, r.Field("host", Need::kRequired));
    HS_ASSIGN_OR_RETURN(crash.host, ReadHostRef(ctx, *host));
    HS_RETURN_IF_ERROR(ReadWindow(ctx, r, "at_s", "restart_at_s", &crash.at_ns,
                                  &crash.restart_at_ns));
    HS_RETURN_IF_ERROR(r.Finish());
    intervals.push_back(Interval{crash.host, crash.at_ns, crash.restart_at_ns, item});
    out->push_back(std::move(crash));
  }
  return CheckNoOverlap(std::move(intervals), "the worker on host");
}

// The master's crashes: a restart defaults to kMasterRestartDelayDefaultNs
// after the crash and must come before the end of the run (a run ends with a
// master, whose state the outputs and checks read).
absl::Status ParseMasterCrashes(const ParseContext& ctx, const JsonField& f,
                                std::vector<MasterCrash>* out) {
  HS_ASSIGN_OR_RETURN(std::vector<JsonField> items, ReadArray(f, ctx.options->limits.faults_max));
  std::vector<std::pair<MasterCrash, JsonField>> crashes;
  for (const JsonField& item : items) {
    HS_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Make(item.source, *item.value, item.path));
    MasterCrash crash;
    std::optional<TimeNs> restart;
    HS_RETURN_IF_ERROR(ReadWindow(ctx, r, "at_s", "restart_at_s", &crash.at_ns, &restart));
    crash.restart_at_ns = restart.value_or(crash.at_ns + kMasterRestartDelayDefaultNs);
    if (crash.restart_at_ns >= ctx.scenario->duration_ns) {
      return r.ErrorAt(
          restart.has_value() ? "restart_at_s" : "at_s",
          absl::StrCat("the master must restart before the end of the run (",
                       ctx.scenario->duration_ns, " ns)",
                       restart.has_value() ? "" : "; without restart_at_s it restarts 1 s later"));
    }
    HS_RETURN_IF_ERROR(r.Finish());
    crashes.emplace_back(crash, item);
  }
  std::stable_sort(crashes.begin(), crashes.end(), [](const auto& a, const auto& b) {
    return a.first.at_ns < b.first.at_ns;
  });
  for (size_t i = 0; i < crashes.size(); ++i) {
    if (i > 0 && crashes[i - 1].first.restart_at_ns > crashes[i].first.at_ns) {
      return crashes[i].second.Error(absl::StrCat("the master is already down at ",
                                                  crashes[i].first.at_ns,
                                                  " ns (an earlier crash overlaps)"));
    }
    out->push_back(crashes[i].first);
  }
  return absl::OkStatus();
}

absl::Status ParseSegmentUnmounts(const ParseContext& ctx, const JsonField& f,
                                  std::vector<SegmentUnmount>* out) {
  HS_ASSIGN_OR_RETURN(std::vector<JsonField> items, ReadArray(f, ctx.options->limits.faults_max));
  std::vector<Interval> intervals;
  for (const JsonField& item : items) {
    HS_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Make(item.source, *item.value, item.path));
    SegmentUnmount unmount;
    HS_ASSIGN_OR_RETURN(std::optional<JsonField> seg, r.Field("segment", Need::kRequired));
    HS_ASSIGN_OR_RETURN(unmount.segment, ReadSegmentRef(ctx, *seg));
    HS_RETURN_IF_ERROR(ReadWindow(ctx, r, "at_s", "remount_at_s", &unmount.at_ns,
                                  &unmount.remount_at_ns));
    HS_RETURN_IF_ERROR(r.Finish());
    intervals.push_back(Interval{unmount.segment, unmount.at_ns, unmount.remount_at_ns, item});
    out->push_back(std::move(unmount));
  }
  return CheckNoOverlap(std::move(intervals), "segment");
}

absl::Status ParseTrunkFaults(const ParseContext& ctx, const JsonField& f,
                              std::vector<TrunkFault>* out) {
  HS_ASSIGN_OR_RETURN(std::vector<JsonField> items, ReadArray(f, ctx.options->limits.faults_max));
  std::vector<Interval> intervals;
  for (const JsonField& item : items) {
    HS_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Make(item.source, *item.value, item.path));
    TrunkFault fault;
    HS_ASSIGN_OR_RETURN(std::optional<JsonField> between, r.Field("between", Need::kRequired));
    HS_ASSIGN_OR_RETURN(std::vector<JsonField> ends, ReadArray(*between, 2));
    if (ends.size() != 2) return between->Error("expected two domain names");
    HS_ASSIGN_OR_RETURN(fault.domain_a, ReadDomainRef(ctx, ends[0]));
    HS_ASSIGN_OR_RETURN(fault.domain_b, ReadDomainRef(ctx, ends[1]));
    const auto& trunks = ctx.scenario->topology.trunks;
    const bool exists = std::any_of(trunks.begin(), trunks.end(), [&](const ScenarioTrunk& t) {
      return (t.domain_a == fault.domain_a && t.domain_b == fault.domain_b) ||
             (t.domain_a == fault.domain_b && t.domain_b == fault.domain_a);
    });
    if (!exists) {
      return between->Error(absl::StrCat("no trunk between \"", fault.domain_a, "\" and \"",
                                         fault.domain_b, "\""));
    }
    std::string kind;
    HS_RETURN_IF_ERROR(r.Enum("kind", &kind, {"partition", "degrade"}, Need::kRequired));
    fault.kind = kind == "partition" ? TrunkFaultKind::kPartition : TrunkFaultKind::kDegrade;
    std::optional<TimeNs> to;
    HS_RETURN_IF_ERROR(ReadWindow(ctx, r, "from_s", "to_s", &fault.from_ns, &to));
    fault.to_ns = to.value_or(ctx.scenario->duration_ns);
    if (fault.kind == TrunkFaultKind::kPartition) {
      for (absl::string_view key : {"bandwidth_factor", "extra_latency_ms"}) {
        if (r.Has(key)) return r.ErrorAt(key, "only a \"degrade\" fault takes this field");
      }
    } else {
      HS_RETURN_IF_ERROR(r.Number("bandwidth_factor", &fault.bandwidth_factor, 0.0, 1.0));
      if (fault.bandwidth_factor <= 0) {
        return r.ErrorAt("bandwidth_factor", "must be greater than 0 (use kind \"partition\")");
      }
      HS_RETURN_IF_ERROR(r.Duration("extra_latency_ms", &fault.extra_latency_ns, kNsPerMs, 0,
                                    SecToNs(60)));
    }
    r.Get("bandwidth_factor");
    r.Get("extra_latency_ms");
    HS_RETURN_IF_ERROR(r.Finish());
    const std::string subject = fault.domain_a < fault.domain_b
                                    ? absl::StrCat(fault.domain_a, "<->", fault.domain_b)
                                    : absl::StrCat(fault.domain_b, "<->", fault.domain_a);
    intervals.push_back(Interval{subject, fault.from_ns, fault.to_ns, item});
    out->push_back(std::move(fault));
  }
  return CheckNoOverlap(std::move(intervals), "trunk");
}

}  // namespace

absl::Status ParseFaults(const ParseContext& ctx, const JsonField& f, ScenarioFaults* out) {
  HS_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Make(f.source, *f.value, f.path));
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> crashes, r.Field("worker_crashes", Need::kOptional));
  if (crashes.has_value()) HS_RETURN_IF_ERROR(ParseWorkerCrashes(ctx, *crashes, &out->worker_crashes));
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> master_crashes,
                      r.Field("master_crashes", Need::kOptional));
  if (master_crashes.has_value()) {
    HS_RETURN_IF_ERROR(ParseMasterCrashes(ctx, *master_crashes, &out->master_crashes));
  }
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> unmounts,
                      r.Field("segment_unmounts", Need::kOptional));
  if (unmounts.has_value()) {
    HS_RETURN_IF_ERROR(ParseSegmentUnmounts(ctx, *unmounts, &out->segment_unmounts));
  }
  HS_RETURN_IF_ERROR(r.Probability("copy_failure_probability", &out->copy_failure_probability));
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> control,
                      r.Field("control_messages", Need::kOptional));
  if (control.has_value()) {
    HS_ASSIGN_OR_RETURN(ObjectReader cr,
                        ObjectReader::Make(control->source, *control->value, control->path));
    ControlMessageFaults& c = out->control_messages;
    HS_RETURN_IF_ERROR(cr.Probability("drop_probability", &c.drop_probability));
    HS_RETURN_IF_ERROR(cr.Probability("delay_probability", &c.delay_probability));
    HS_RETURN_IF_ERROR(cr.Duration("delay_ms", &c.delay_ns, kNsPerMs, 0, SecToNs(600)));
    if (c.delay_probability > 0 && c.delay_ns == 0) {
      return cr.ErrorAt("delay_probability", "delayed messages need a positive delay_ms");
    }
    HS_ASSIGN_OR_RETURN(std::optional<JsonField> to, cr.Field("to_s", Need::kOptional));
    if (to.has_value()) {
      HS_ASSIGN_OR_RETURN(TimeNs t, ReadRunTime(ctx, *to, kNsPerSec));
      c.to_ns = t;
    }
    HS_RETURN_IF_ERROR(cr.Finish());
  }
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> trunk_faults, r.Field("trunk_faults", Need::kOptional));
  if (trunk_faults.has_value()) {
    HS_RETURN_IF_ERROR(ParseTrunkFaults(ctx, *trunk_faults, &out->trunk_faults));
  }
  return r.Finish();
}

}  // namespace heatsink::sim::scenario_internal
