#include "sim/decision_log.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/base/check.h"
#include "nlohmann/json.hpp"

namespace heatsink::sim {
namespace {

using nlohmann::json;

absl::Status LineError(const std::string& source, int64_t line, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ":", line, ": ", what));
}

absl::StatusOr<std::optional<std::string>> OptString(const json& j, const char* field) {
  const auto it = j.find(field);
  if (it == j.end()) return absl::InvalidArgumentError(absl::StrCat("missing field '", field, "'"));
  if (it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) {
    return absl::InvalidArgumentError(absl::StrCat("field '", field, "' must be a string or null"));
  }
  return std::optional<std::string>(it->get<std::string>());
}

absl::StatusOr<std::optional<uint64_t>> OptUnsigned(const json& j, const char* field) {
  const auto it = j.find(field);
  if (it == j.end()) return absl::InvalidArgumentError(absl::StrCat("missing field '", field, "'"));
  if (it->is_null()) return std::optional<uint64_t>();
  if (!it->is_number_unsigned()) {
    return absl::InvalidArgumentError(
        absl::StrCat("field '", field, "' must be a non-negative integer or null"));
  }
  return std::optional<uint64_t>(it->get<uint64_t>());
}

absl::StatusOr<DecisionRecord> ParseRecord(const json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("a record must be a JSON object");
  DecisionRecord r;
  const auto t = j.find("t_ns");
  // nlohmann keeps integers above INT64_MAX as unsigned; get<int64_t> would
  // wrap them to negative times.
  if (t == j.end() || !t->is_number_integer() ||
      (t->is_number_unsigned() &&
       t->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
    return absl::InvalidArgumentError("field 't_ns' must be an integer in the int64 range");
  }
  r.t_ns = t->get<int64_t>();
  auto kind = OptString(j, "kind");
  if (!kind.ok()) return kind.status();
  if (*kind == "heat") r.kind = DecisionKind::kHeat;
  else if (*kind == "warmup") r.kind = DecisionKind::kWarmup;
  else if (*kind == "proposal") r.kind = DecisionKind::kProposal;
  else if (*kind == "evict") r.kind = DecisionKind::kEvict;
  else if (*kind == "release") r.kind = DecisionKind::kRelease;
  else return absl::InvalidArgumentError("field 'kind' must be heat, warmup, proposal, evict or release");
  for (auto [field, out] : {std::pair{"tenant", &r.tenant}, std::pair{"key", &r.key}}) {
    auto v = OptString(j, field);
    if (!v.ok()) return v.status();
    if (!v->has_value()) return absl::InvalidArgumentError(absl::StrCat("field '", field, "' must not be null"));
    *out = **v;
  }
  auto rd = OptString(j, "requester_domain");
  if (!rd.ok()) return rd.status();
  r.requester_domain = *rd;
  auto td = OptString(j, "target_domain");
  if (!td.ok()) return td.status();
  r.target_domain = *td;
  auto outcome = OptString(j, "outcome");
  if (!outcome.ok()) return outcome.status();
  if (*outcome == "accepted") r.outcome = DecisionOutcome::kAccepted;
  else if (*outcome == "would_propose") r.outcome = DecisionOutcome::kWouldPropose;
  else if (*outcome == "rejected") r.outcome = DecisionOutcome::kRejected;
  else if (*outcome == "dropped") r.outcome = DecisionOutcome::kDropped;
  else return absl::InvalidArgumentError("field 'outcome' must be accepted, would_propose, rejected or dropped");
  auto reason = OptString(j, "reason");
  if (!reason.ok()) return reason.status();
  if (reason->has_value()) {
    r.reason = ParseRejectReason(**reason);
    if (!r.reason) return absl::InvalidArgumentError(absl::StrCat("unknown reason '", **reason, "'"));
  }
  if (r.reason.has_value() != (r.outcome == DecisionOutcome::kRejected)) {
    return absl::InvalidArgumentError("'reason' must be set exactly when outcome is rejected");
  }
  const bool drop_kind = r.kind == DecisionKind::kEvict || r.kind == DecisionKind::kRelease;
  if (drop_kind != (r.outcome == DecisionOutcome::kDropped)) {
    return absl::InvalidArgumentError(
        "outcome 'dropped' goes exactly with kind 'evict' or 'release'");
  }
  auto src = OptUnsigned(j, "source_segment");
  if (!src.ok()) return src.status();
  if (*src) r.source_segment = SegmentId(**src);
  auto tgt = OptUnsigned(j, "target_segment");
  if (!tgt.ok()) return tgt.status();
  if (*tgt) r.target_segment = SegmentId(**tgt);
  auto lease = OptUnsigned(j, "lease_id");
  if (!lease.ok()) return lease.status();
  if (*lease) r.lease_id = LeaseId(**lease);
  auto version = OptUnsigned(j, "version");
  if (!version.ok()) return version.status();
  r.version = *version;
  return r;
}

// What pairs two records up, apart from their times: kind, tenant, key,
// requester domain, target domain.
using Identity = std::tuple<int, std::string, std::string, std::string, std::string>;

Identity IdentityOf(const DecisionRecord& r) {
  return {static_cast<int>(r.kind), r.tenant, r.key, r.requester_domain.value_or("\x01null"),
          r.target_domain.value_or("\x01null")};
}

// Clears `field` of `r`; false when it is not a field that can be ignored.
bool ClearIgnorableField(absl::string_view field, DecisionRecord* r) {
  if (field == "version") {
    r->version.reset();
  } else if (field == "lease_id") {
    r->lease_id.reset();
  } else if (field == "source_segment") {
    r->source_segment.reset();
  } else if (field == "target_segment") {
    r->target_segment.reset();
  } else {
    return false;
  }
  return true;
}

// The record as compared once matched: no time, no ignored field.
std::string ComparedJson(DecisionRecord r, const DecisionDiffOptions& options) {
  r.t_ns = 0;
  for (const std::string& field : options.ignored_fields) ClearIgnorableField(field, &r);
  return FormatDecisionJson(r);
}

std::string Describe(const DecisionRecord& r) {
  return absl::StrCat(DecisionOutcomeName(r.outcome),
                      r.reason ? absl::StrCat("/", RejectReasonName(*r.reason)) : "");
}

}  // namespace

absl::StatusOr<std::vector<LoggedDecision>> ParseDecisionLog(const std::string& text,
                                                             const std::string& source_name,
                                                             const DecisionLogLimits& limits) {
  std::vector<LoggedDecision> out;
  size_t pos = 0;
  int64_t line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    ++line_no;
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (static_cast<int64_t>(line.size()) > limits.line_bytes_max) {
      return LineError(source_name, line_no,
                       absl::StrCat("line longer than ", limits.line_bytes_max, " bytes"));
    }
    if (static_cast<int64_t>(out.size()) >= limits.records_max) {
      return LineError(source_name, line_no,
                       absl::StrCat("more than ", limits.records_max, " records"));
    }
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return LineError(source_name, line_no, "not valid JSON");
    auto rec = ParseRecord(j);
    if (!rec.ok()) return LineError(source_name, line_no, std::string(rec.status().message()));
    out.push_back(LoggedDecision{std::move(*rec), line_no, std::move(line)});
  }
  return out;
}

absl::StatusOr<std::vector<LoggedDecision>> ReadDecisionLogFile(const std::string& path,
                                                                const DecisionLogLimits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ParseDecisionLog(ss.str(), path, limits);
}

absl::StatusOr<std::vector<std::string>> ParseIgnoredDecisionFields(absl::string_view list) {
  std::vector<std::string> fields;
  for (absl::string_view field : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    field = absl::StripAsciiWhitespace(field);
    DecisionRecord scratch;
    if (!ClearIgnorableField(field, &scratch)) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot ignore field '", field,
                       "': only version, lease_id, source_segment and target_segment can be "
                       "left out (times have --time-tolerance-ms)"));
    }
    fields.emplace_back(field);
  }
  return fields;
}

void PlaceOnScenarioTime(std::vector<LoggedDecision>* log, int64_t t0_steady_ns,
                         double time_scale) {
  HS_CHECK(time_scale > 0);
  for (LoggedDecision& d : *log) {
    d.record.t_ns = static_cast<TimeNs>(
        std::llround(static_cast<double>(d.record.t_ns - t0_steady_ns) / time_scale));
  }
}

DecisionDiff DiffDecisionLogs(const std::vector<LoggedDecision>& a,
                              const std::vector<LoggedDecision>& b,
                              const DecisionDiffOptions& options) {
  HS_CHECK(options.time_tolerance_ns >= 0);
  // Each identity's records from both logs, in time order (file order among
  // equal times), paired up front to front: a record more than the
  // tolerance before the other side's next one has no partner.
  std::map<Identity,
           std::pair<std::vector<const LoggedDecision*>, std::vector<const LoggedDecision*>>>
      groups;
  for (const LoggedDecision& d : a) groups[IdentityOf(d.record)].first.push_back(&d);
  for (const LoggedDecision& d : b) groups[IdentityOf(d.record)].second.push_back(&d);
  const auto by_time = [](const LoggedDecision* x, const LoggedDecision* y) {
    return x->record.t_ns < y->record.t_ns;
  };
  DecisionDiff diff;
  for (auto& [id, sides] : groups) {
    auto& [in_a, in_b] = sides;
    std::stable_sort(in_a.begin(), in_a.end(), by_time);
    std::stable_sort(in_b.begin(), in_b.end(), by_time);
    size_t i = 0;
    size_t j = 0;
    while (i < in_a.size() && j < in_b.size()) {
      const TimeNs ta = in_a[i]->record.t_ns;
      const TimeNs tb = in_b[j]->record.t_ns;
      if (tb < ta - options.time_tolerance_ns) {
        diff.added.push_back({nullptr, in_b[j++]});
      } else if (tb > ta + options.time_tolerance_ns) {
        diff.removed.push_back({in_a[i++], nullptr});
      } else {
        if (ComparedJson(in_a[i]->record, options) != ComparedJson(in_b[j]->record, options)) {
          diff.changed.push_back({in_a[i], in_b[j]});
        }
        ++i;
        ++j;
      }
    }
    for (; i < in_a.size(); ++i) diff.removed.push_back({in_a[i], nullptr});
    for (; j < in_b.size(); ++j) diff.added.push_back({nullptr, in_b[j]});
  }
  const auto by_a_line = [](const DecisionChange& x, const DecisionChange& y) {
    return x.a->line < y.a->line;
  };
  std::sort(diff.removed.begin(), diff.removed.end(), by_a_line);
  std::sort(diff.changed.begin(), diff.changed.end(), by_a_line);
  std::sort(diff.added.begin(), diff.added.end(),
            [](const DecisionChange& x, const DecisionChange& y) { return x.b->line < y.b->line; });
  return diff;
}

std::string FormatDecisionDiff(const DecisionDiff& diff, const std::vector<LoggedDecision>& a,
                               const std::vector<LoggedDecision>& b, const std::string& name_a,
                               const std::string& name_b, int keys_max) {
  std::string out;
  if (diff.equal()) {
    absl::StrAppend(&out, "decision logs equal: ", a.size(), " records\n");
    return out;
  }
  absl::StrAppend(&out, "decision logs differ: ", diff.added.size(), " added, ",
                  diff.removed.size(), " removed, ", diff.changed.size(), " changed (", name_a,
                  ": ", a.size(), " records, ", name_b, ": ", b.size(), " records)\n");

  // By outcome/reason: what each side decided in the differing records.
  std::map<std::string, std::pair<int64_t, int64_t>> by_reason;  // label -> (in A, in B)
  std::map<std::string, int64_t> by_key;
  auto note = [&](const DecisionChange& c) {
    if (c.a) ++by_reason[Describe(c.a->record)].first;
    if (c.b) ++by_reason[Describe(c.b->record)].second;
    const DecisionRecord& r = c.a ? c.a->record : c.b->record;
    ++by_key[absl::StrCat(r.tenant, "/", r.key)];
  };
  for (const auto* list : {&diff.removed, &diff.added, &diff.changed}) {
    for (const DecisionChange& c : *list) note(c);
  }
  absl::StrAppend(&out, "\nby outcome/reason (differing records in A -> in B):\n");
  for (const auto& [label, counts] : by_reason) {
    absl::StrAppendFormat(&out, "  %-40s %8d -> %d\n", label, counts.first, counts.second);
  }
  std::vector<std::pair<int64_t, std::string>> keys;
  for (const auto& [k, n] : by_key) keys.emplace_back(-n, k);
  std::sort(keys.begin(), keys.end());
  absl::StrAppend(&out, "\nby key (", keys.size(), " keys):\n");
  for (size_t i = 0; i < keys.size() && static_cast<int>(i) < keys_max; ++i) {
    absl::StrAppendFormat(&out, "  %-40s %8d\n", keys[i].second, -keys[i].first);
  }
  if (static_cast<int>(keys.size()) > keys_max) {
    absl::StrAppend(&out, "  ... ", keys.size() - keys_max, " more keys\n");
  }

  // First divergence in time order (ties: A's line order, then B's).
  const DecisionChange* first = nullptr;
  auto earlier = [](const DecisionChange& x, const DecisionChange& y) {
    const LoggedDecision* px = x.a ? x.a : x.b;
    const LoggedDecision* py = y.a ? y.a : y.b;
    return std::pair(px->record.t_ns, px->line) < std::pair(py->record.t_ns, py->line);
  };
  for (const auto* list : {&diff.removed, &diff.added, &diff.changed}) {
    for (const DecisionChange& c : *list) {
      if (first == nullptr || earlier(c, *first)) first = &c;
    }
  }
  const char* kind = first->a == nullptr ? "added" : first->b == nullptr ? "removed" : "changed";
  const DecisionRecord& fr = (first->a ? first->a : first->b)->record;
  absl::StrAppend(&out, "\nfirst divergence (", kind, ") at t_ns=", fr.t_ns, " key ", fr.tenant,
                  "/", fr.key, ":\n");
  auto context = [&](const std::vector<LoggedDecision>& log, const LoggedDecision* at,
                     const std::string& name) {
    // Where this log has no such record, show what it has around that time.
    size_t idx = 0;
    if (at != nullptr) {
      idx = static_cast<size_t>(at - log.data());
    } else {
      while (idx < log.size() && log[idx].record.t_ns < fr.t_ns) ++idx;
      absl::StrAppend(&out, "  ", name, ": (no such record; neighbours shown)\n");
    }
    const size_t lo = idx >= 2 ? idx - 2 : 0;
    for (size_t i = lo; i <= idx + (at == nullptr ? 1 : 0) && i < log.size(); ++i) {
      const bool marked = at != nullptr && i == idx;
      absl::StrAppend(&out, "  ", name, ":", log[i].line, (marked ? " > " : "   "), log[i].text,
                      "\n");
    }
  };
  context(a, first->a, name_a);
  context(b, first->b, name_b);
  return out;
}

}  // namespace heatsink::sim
