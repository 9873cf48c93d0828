// The scenario loader's scripted operations: a list of timed ops that pins
// precise admission cases as data. The script keeps a clock that starts at
// the workload's start_s; an op runs at the clock, or at its own `at_ms`
// (absolute, never earlier than the clock, which then moves there);
// `advance_time` moves the clock forward.
#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "sim/json_fields.h"
#include "sim/scenario.h"
#include "sim/scenario_parse.h"

namespace heatsink::sim {

absl::string_view ScriptOpKindName(ScriptOpKind kind) {
  switch (kind) {
    case ScriptOpKind::kMount: return "mount";
    case ScriptOpKind::kUnmount: return "unmount";
    case ScriptOpKind::kPut: return "put";
    case ScriptOpKind::kBatchPut:
      return "batch_put";
    case ScriptOpKind::kGet: return "get";
    case ScriptOpKind::kBatchGet: return "batch_get";
    case ScriptOpKind::kRemove: return "remove";
    case ScriptOpKind::kKillWorker: return "kill_worker";
    case ScriptOpKind::kRestartWorker: return "restart_worker";
    case ScriptOpKind::kFailCopy: return "fail_copy";
    case ScriptOpKind::kDelayCopies: return "delay_copies";
    case ScriptOpKind::kCopyStart: return "copy_start";
    case ScriptOpKind::kAdvanceTime: return "advance_time";
    case ScriptOpKind::kSetKnob: return "set_knob";
    case ScriptOpKind::kDrain: return "drain";
    case ScriptOpKind::kUndrain: return "undrain";
    case ScriptOpKind::kPropose: return "propose";
    case ScriptOpKind::kWarmup: return "warmup";
  }
  return "unknown";
}

namespace scenario_internal {
namespace {

constexpr ScriptOpKind kAllOps[] = {
    ScriptOpKind::kMount,       ScriptOpKind::kUnmount,     ScriptOpKind::kPut,
    ScriptOpKind::kBatchPut,    ScriptOpKind::kGet,         ScriptOpKind::kBatchGet,
    ScriptOpKind::kRemove,      ScriptOpKind::kKillWorker,  ScriptOpKind::kRestartWorker,
    ScriptOpKind::kFailCopy,    ScriptOpKind::kDelayCopies, ScriptOpKind::kCopyStart,
    ScriptOpKind::kAdvanceTime, ScriptOpKind::kSetKnob,     ScriptOpKind::kDrain,
    ScriptOpKind::kUndrain,     ScriptOpKind::kPropose,     ScriptOpKind::kWarmup,
};

absl::Status ReadRef(ObjectReader& r, absl::string_view key,
                     absl::StatusOr<std::string> (*read)(const ParseContext&, const JsonField&),
                     const ParseContext& ctx, std::string* out) {
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> f, r.Field(key, Need::kRequired));
  HS_ASSIGN_OR_RETURN(*out, read(ctx, *f));
  return absl::OkStatus();
}

absl::Status ReadOneKey(ObjectReader& r, Need need, std::vector<std::string>* keys) {
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> f, r.Field("key", need));
  if (!f.has_value()) return absl::OkStatus();
  HS_ASSIGN_OR_RETURN(std::string key, ReadKey(*f));
  keys->push_back(std::move(key));
  return absl::OkStatus();
}

// The op-specific fields of one scripted operation.
absl::Status ParseOpFields(const ParseContext& ctx, ObjectReader& r, ScriptOp* op) {
  switch (op->kind) {
    case ScriptOpKind::kMount:
    case ScriptOpKind::kUnmount:
    case ScriptOpKind::kDrain:
    case ScriptOpKind::kUndrain:
      return ReadRef(r, "segment", ReadSegmentRef, ctx, &op->segment);
    case ScriptOpKind::kPut:
      HS_RETURN_IF_ERROR(ReadRef(r, "client", ReadClientRef, ctx, &op->client));
      HS_RETURN_IF_ERROR(ReadOneKey(r, Need::kRequired, &op->keys));
      return r.Bytes("size_bytes", &op->size_bytes, 1, int64_t{1} << 40, Need::kRequired);
    case ScriptOpKind::kGet:
    case ScriptOpKind::kRemove:
      HS_RETURN_IF_ERROR(ReadRef(r, "client", ReadClientRef, ctx, &op->client));
      return ReadOneKey(r, Need::kRequired, &op->keys);
    case ScriptOpKind::kBatchGet:
    case ScriptOpKind::kBatchPut: {
      HS_RETURN_IF_ERROR(ReadRef(r, "client", ReadClientRef, ctx, &op->client));
      HS_ASSIGN_OR_RETURN(std::optional<JsonField> kf, r.Field("keys", Need::kRequired));
      HS_ASSIGN_OR_RETURN(std::vector<JsonField> items,
                          ReadArray(*kf, ctx.options->limits.batch_keys_max));
      if (items.empty()) return kf->Error("a batch needs at least one key");
      std::set<std::string> seen;
      for (const JsonField& item : items) {
        HS_ASSIGN_OR_RETURN(std::string key, ReadKey(item));
        if (!seen.insert(key).second) {
          return item.Error(absl::StrCat("duplicate key \"", key, "\" in the batch"));
        }
        op->keys.push_back(std::move(key));
      }
      if (op->kind == ScriptOpKind::kBatchGet) return absl::OkStatus();
      return r.Bytes("size_bytes", &op->size_bytes, 1, int64_t{1} << 40, Need::kRequired);
    }
    case ScriptOpKind::kKillWorker:
    case ScriptOpKind::kRestartWorker:
      return ReadRef(r, "host", ReadHostRef, ctx, &op->host);
    case ScriptOpKind::kFailCopy:
      HS_RETURN_IF_ERROR(ReadOneKey(r, Need::kOptional, &op->keys));
      return r.Int("count", &op->count, 1, 1'000'000);
    case ScriptOpKind::kDelayCopies:
      HS_RETURN_IF_ERROR(ReadRef(r, "host", ReadHostRef, ctx, &op->host));
      return r.Duration("by_ms", &op->delay_ns, kNsPerMs, 0, SecToNs(3600), Need::kRequired);
    case ScriptOpKind::kCopyStart:
      HS_RETURN_IF_ERROR(ReadRef(r, "host", ReadHostRef, ctx, &op->host));
      return ReadOneKey(r, Need::kRequired, &op->keys);
    case ScriptOpKind::kAdvanceTime:
      return r.Duration("by_ms", &op->delay_ns, kNsPerMs, 1, kInt64Max, Need::kRequired);
    case ScriptOpKind::kPropose: {
      HS_RETURN_IF_ERROR(ReadOneKey(r, Need::kRequired, &op->keys));
      ScriptedProposal p;
      HS_RETURN_IF_ERROR(
          r.Int("proposal_id", &p.first_proposal_id, 1, int64_t{1} << 62, Need::kRequired));
      HS_RETURN_IF_ERROR(r.Int("count", &p.count, 1, ctx.options->limits.proposal_burst_max));
      HS_RETURN_IF_ERROR(r.Bool("same_id", &p.same_id));
      for (auto [key, out] : {std::pair{"requester_domain", &p.requester_domain},
                              std::pair{"target_domain", &p.target_domain}}) {
        HS_ASSIGN_OR_RETURN(std::optional<JsonField> f, r.Field(key, Need::kOptional));
        if (!f.has_value()) continue;
        HS_ASSIGN_OR_RETURN(*out, ReadDomainRef(ctx, *f));
      }
      HS_RETURN_IF_ERROR(r.Int("version", &p.observed_version, 1, kInt64Max));
      HS_RETURN_IF_ERROR(r.Bytes("size_bytes", &p.expected_size_bytes, 1, int64_t{1} << 40));
      p.expires_in_ns = SecToNs(60);
      HS_RETURN_IF_ERROR(
          r.Duration("expires_in_ms", &p.expires_in_ns, kNsPerMs, kNsPerMs, SecToNs(86'400)));
      op->proposal = std::move(p);
      return absl::OkStatus();
    }
    case ScriptOpKind::kWarmup:
      return ReadRef(r, "domain", ReadDomainRef, ctx, &op->domain);
    case ScriptOpKind::kSetKnob: {
      HS_ASSIGN_OR_RETURN(std::optional<JsonField> nf, r.Field("name", Need::kRequired));
      HS_ASSIGN_OR_RETURN(op->knob_name, ReadString(*nf));
      HS_ASSIGN_OR_RETURN(std::optional<JsonField> vf, r.Field("value", Need::kRequired));
      HS_ASSIGN_OR_RETURN(op->knob_value, KnobValueText(ctx, op->knob_name, nf->value->pos(),
                                                        nf->path, *vf));
      return absl::OkStatus();
    }
  }
  return r.Error("unhandled op");
}

bool UsesTenant(ScriptOpKind kind) {
  switch (kind) {
    case ScriptOpKind::kPut:
    case ScriptOpKind::kBatchPut:
    case ScriptOpKind::kGet:
    case ScriptOpKind::kBatchGet:
    case ScriptOpKind::kRemove:
    case ScriptOpKind::kFailCopy:
    case ScriptOpKind::kCopyStart:
    case ScriptOpKind::kPropose:
      return true;
    default:
      return false;
  }
}

}  // namespace

absl::Status ParseScript(const ParseContext& ctx, ObjectReader& r, const Workload& w,
                         ScriptedWorkload* out) {
  const DurationNs end = ctx.scenario->duration_ns;
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> ops_field, r.Field("ops", Need::kRequired));
  HS_ASSIGN_OR_RETURN(std::vector<JsonField> items,
                      ReadArray(*ops_field, ctx.options->limits.script_ops_max));
  TimeNs clock = w.start_ns;
  for (const JsonField& item : items) {
    HS_ASSIGN_OR_RETURN(ObjectReader or_, ObjectReader::Make(item.source, *item.value, item.path));
    ScriptOp op;
    op.where = Where(item);
    op.tenant = w.tenant;
    HS_ASSIGN_OR_RETURN(std::optional<JsonField> kind_field, or_.Field("op", Need::kRequired));
    HS_ASSIGN_OR_RETURN(
        std::string word,
        ReadEnum(*kind_field,
                 {"mount", "unmount", "put", "batch_put", "get", "batch_get", "remove",
                  "kill_worker", "restart_worker", "fail_copy", "delay_copies", "copy_start",
                  "advance_time", "set_knob", "drain", "undrain", "propose", "warmup"}));
    for (ScriptOpKind k : kAllOps) {
      if (ScriptOpKindName(k) == word) op.kind = k;
    }
    HS_ASSIGN_OR_RETURN(std::optional<JsonField> at_field, or_.Field("at_ms", Need::kOptional));
    if (at_field.has_value()) {
      HS_ASSIGN_OR_RETURN(TimeNs at, ReadDuration(*at_field, kNsPerMs, 0, kInt64Max));
      if (at < clock) {
        return at_field->Error(absl::StrCat("goes back in time: the script is already at ",
                                            clock, " ns"));
      }
      clock = at;
    }
    if (UsesTenant(op.kind)) HS_RETURN_IF_ERROR(or_.Name("tenant", &op.tenant));
    HS_RETURN_IF_ERROR(ParseOpFields(ctx, or_, &op));
    op.t_ns = clock;
    if (op.kind == ScriptOpKind::kAdvanceTime) {
      if (op.delay_ns > end - clock) {
        return or_.ErrorAt("by_ms", absl::StrCat("moves the script past the end of the run (",
                                                 end, " ns)"));
      }
      clock += op.delay_ns;
    } else if (clock >= end) {
      return item.Error(absl::StrCat("op at ", clock,
                                     " ns is not before the end of the run (duration ", end,
                                     " ns)"));
    }
    HS_RETURN_IF_ERROR(or_.Finish());
    out->ops.push_back(std::move(op));
  }
  return absl::OkStatus();
}

}  // namespace scenario_internal
}  // namespace heatsink::sim
