// The scenario loader's `workloads` section: trace replay, the synthetic
// generators (zipf, cross_domain_reuse, cold_start) and scripted operations.
#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "sim/json_fields.h"
#include "sim/scenario.h"
#include "sim/scenario_parse.h"

namespace heatsink::sim::scenario_internal {
namespace {

constexpr int64_t kCountMax = 100'000'000;         // objects, readers, reads per object
constexpr double kRateMax = 1e9;                    // operations per second
constexpr int64_t kObjectBytesMax = int64_t{1} << 40;

bool DomainHasClients(const Scenario& s, absl::string_view domain) {
  const ScenarioDomain* d = s.FindDomain(domain);
  if (d == nullptr) return false;
  return std::any_of(d->hosts.begin(), d->hosts.end(),
                     [](const ScenarioHost& h) { return !h.clients.empty(); });
}

bool DomainHasInstances(const Scenario& s, absl::string_view domain, bool prefill) {
  const ScenarioDomain* d = s.FindDomain(domain);
  if (d == nullptr) return false;
  return std::any_of(d->hosts.begin(), d->hosts.end(), [&](const ScenarioHost& h) {
    return !(prefill ? h.prefill_instances : h.decode_instances).empty();
  });
}

// A domain reference (required or with a default) whose domain has clients.
absl::Status ReadClientDomain(const ParseContext& ctx, ObjectReader& r, absl::string_view key,
                              Need need, Domain* out) {
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> f, r.Field(key, need));
  if (f.has_value()) {
    HS_ASSIGN_OR_RETURN(*out, ReadDomainRef(ctx, *f));
  }
  if (!DomainHasClients(*ctx.scenario, *out)) {
    return r.ErrorAt(key, absl::StrCat("domain \"", *out, "\" has no store clients"));
  }
  return absl::OkStatus();
}

absl::Status ReadRate(ObjectReader& r, absl::string_view key, double* out, Need need,
                      bool allow_zero) {
  HS_RETURN_IF_ERROR(r.Number(key, out, 0.0, kRateMax, need));
  if (!allow_zero && *out <= 0) return r.ErrorAt(key, "must be greater than 0");
  return absl::OkStatus();
}

// {"policy": "...", "weights": {"domain": number, ...}} for one role.
absl::Status ParseInstancePolicy(const ParseContext& ctx, ObjectReader& parent,
                                 absl::string_view key, bool prefill, InstancePolicy* policy,
                                 std::vector<DomainWeight>* weights) {
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> f, parent.Field(key, Need::kOptional));
  if (!f.has_value()) return absl::OkStatus();
  HS_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Make(f->source, *f->value, f->path));
  std::string word;
  if (prefill) {
    HS_RETURN_IF_ERROR(r.Enum("policy", &word, {"round_robin", "hash", "weights"}));
  } else {
    HS_RETURN_IF_ERROR(r.Enum("policy", &word, {"round_robin", "hash", "weights", "same_domain"}));
  }
  if (word == "hash") *policy = InstancePolicy::kHash;
  if (word == "weights") *policy = InstancePolicy::kWeights;
  if (word == "same_domain") *policy = InstancePolicy::kSameDomain;
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> wf, r.Field("weights", Need::kOptional));
  if (*policy != InstancePolicy::kWeights) {
    if (wf.has_value()) return wf->Error("weights are only used with policy \"weights\"");
    return r.Finish();
  }
  if (!wf.has_value()) return r.Error("policy \"weights\" needs \"weights\"");
  if (!wf->value->is_object()) {
    return wf->Error(absl::StrCat("expected an object, got ", JsonKindName(wf->value->kind())));
  }
  if (wf->value->members().size() > ctx.options->limits.weights_max) {
    return wf->Error(absl::StrCat("more than ", ctx.options->limits.weights_max, " weights"));
  }
  double total = 0;
  for (const JsonMember& m : wf->value->members()) {
    const JsonField value{wf->source, m.value.get(), JsonChildPath(wf->path, m.key)};
    if (ctx.scenario->FindDomain(m.key) == nullptr) {
      return JsonSchemaError(wf->source, m.key_pos, value.path,
                             absl::StrCat("unknown domain \"", m.key, "\""));
    }
    HS_ASSIGN_OR_RETURN(double w, ReadNumber(value, 0.0, 1e6));
    if (w > 0 && !DomainHasInstances(*ctx.scenario, m.key, prefill)) {
      return value.Error(absl::StrCat("domain \"", m.key, "\" has no ",
                                      prefill ? "prefill" : "decode", " instances"));
    }
    total += w;
    weights->push_back(DomainWeight{m.key, w});
  }
  if (total <= 0) return wf->Error("at least one weight must be positive");
  return r.Finish();
}

absl::Status ParseTrace(const ParseContext& ctx, ObjectReader& r, TraceWorkload* t) {
  HS_RETURN_IF_ERROR(r.String("path", &t->path, Need::kRequired));
  if (t->path.empty()) return r.ErrorAt("path", "must not be empty");
  t->resolved_path = (t->path.front() == '/' || ctx.base_dir.empty())
                         ? t->path
                         : absl::StrCat(ctx.base_dir, "/", t->path);
  HS_RETURN_IF_ERROR(r.Number("replay_speed", &t->replay_speed, 0.0, 1e6));
  if (t->replay_speed <= 0) return r.ErrorAt("replay_speed", "must be greater than 0");
  if (r.Has("request_limit")) {
    int64_t limit = 0;
    HS_RETURN_IF_ERROR(r.Int("request_limit", &limit, 1, kInt64Max));
    t->request_limit = limit;
  } else {
    r.Get("request_limit");
  }
  HS_RETURN_IF_ERROR(r.Int("tokens_per_block", &t->tokens_per_block, 1, 1'000'000));
  HS_RETURN_IF_ERROR(r.Bytes("kv_bytes_per_token", &t->kv_bytes_per_token, 1, int64_t{1} << 30));
  if (t->kv_bytes_per_token > kObjectBytesMax / t->tokens_per_block) {
    return r.ErrorAt("kv_bytes_per_token", "a block (tokens_per_block x kv_bytes_per_token) "
                                           "would exceed 1 TiB");
  }
  HS_RETURN_IF_ERROR(r.Duration("prefill_ns_per_token", &t->prefill_ns_per_token, 1, 0,
                                SecToNs(1)));
  HS_RETURN_IF_ERROR(r.String("key_prefix", &t->key_prefix));
  if (t->key_prefix.size() > 64) return r.ErrorAt("key_prefix", "at most 64 bytes");

  const Scenario& s = *ctx.scenario;
  std::vector<Domain> prefill_domains, decode_domains;
  for (const ScenarioDomain& d : s.topology.domains) {
    if (DomainHasInstances(s, d.name, true)) prefill_domains.push_back(d.name);
    if (DomainHasInstances(s, d.name, false)) decode_domains.push_back(d.name);
  }
  if (prefill_domains.empty() || decode_domains.empty()) {
    return r.Error("a trace workload needs prefill and decode instances in the topology");
  }
  HS_RETURN_IF_ERROR(ParseInstancePolicy(ctx, r, "prefill", true, &t->prefill_policy,
                                         &t->prefill_weights));
  HS_RETURN_IF_ERROR(ParseInstancePolicy(ctx, r, "decode", false, &t->decode_policy,
                                         &t->decode_weights));
  if (t->decode_policy == InstancePolicy::kSameDomain) {
    // Every domain a request can be prefilled in needs its own decode instances.
    for (const Domain& d : prefill_domains) {
      const bool reachable =
          t->prefill_policy != InstancePolicy::kWeights ||
          std::any_of(t->prefill_weights.begin(), t->prefill_weights.end(),
                      [&](const DomainWeight& w) { return w.domain == d && w.weight > 0; });
      if (reachable && !DomainHasInstances(s, d, false)) {
        return r.ErrorAt("decode", absl::StrCat("policy \"same_domain\": domain \"", d,
                                                "\" has prefill but no decode instances"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ParseZipf(const ParseContext& ctx, ObjectReader& r, ZipfWorkload* z) {
  const Scenario& s = *ctx.scenario;
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> rd, r.Field("reader_domains", Need::kOptional));
  if (rd.has_value()) {
    HS_ASSIGN_OR_RETURN(std::vector<JsonField> items, ReadArray(*rd, ctx.options->limits.domains_max));
    if (items.empty()) return rd->Error("needs at least one domain");
    for (const JsonField& item : items) {
      HS_ASSIGN_OR_RETURN(std::string d, ReadDomainRef(ctx, item));
      if (std::find(z->reader_domains.begin(), z->reader_domains.end(), d) !=
          z->reader_domains.end()) {
        return item.Error(absl::StrCat("duplicate domain \"", d, "\""));
      }
      if (!DomainHasClients(s, d)) {
        return item.Error(absl::StrCat("domain \"", d, "\" has no store clients"));
      }
      z->reader_domains.push_back(std::move(d));
    }
  } else {
    for (const ScenarioDomain& d : s.topology.domains) {
      if (DomainHasClients(s, d.name)) z->reader_domains.push_back(d.name);
    }
    if (z->reader_domains.empty()) return r.Error("no domain has store clients to read with");
  }
  HS_RETURN_IF_ERROR(r.Int("readers_per_domain", &z->readers_per_domain, 1, kCountMax));
  HS_RETURN_IF_ERROR(r.Int("objects", &z->objects, 1, kCountMax, Need::kRequired));
  HS_RETURN_IF_ERROR(r.Bytes("object_size_bytes", &z->object_size_bytes, 1, kObjectBytesMax));
  HS_RETURN_IF_ERROR(r.Number("skew", &z->skew, 0.0, 10.0));
  HS_RETURN_IF_ERROR(ReadRate(r, "rate_per_s", &z->rate_per_s, Need::kRequired, false));
  HS_RETURN_IF_ERROR(r.Int("batch_size", &z->batch_size, 1,
                           static_cast<int64_t>(ctx.options->limits.batch_keys_max)));
  if (z->batch_size > z->objects) {
    return r.ErrorAt("batch_size", "must not exceed objects (a batch reads distinct keys)");
  }
  z->writer_domain = z->reader_domains.front();
  HS_RETURN_IF_ERROR(ReadClientDomain(ctx, r, "writer_domain", Need::kOptional, &z->writer_domain));
  HS_RETURN_IF_ERROR(r.Duration("settle_ms", &z->settle_ns, kNsPerMs, 0, s.duration_ns));
  HS_RETURN_IF_ERROR(r.Duration("drift_step_ms", &z->drift_step_ns, kNsPerMs, 0, s.duration_ns));
  if (r.Has("duration_s")) {
    DurationNs d = 0;
    HS_RETURN_IF_ERROR(r.Duration("duration_s", &d, kNsPerSec, 1, s.duration_ns));
    z->duration_ns = d;
  } else {
    r.Get("duration_s");
  }
  return absl::OkStatus();
}

absl::Status ParseCrossDomainReuse(const ParseContext& ctx, ObjectReader& r,
                                   CrossDomainReuseWorkload* c) {
  HS_RETURN_IF_ERROR(ReadClientDomain(ctx, r, "writer_domain", Need::kRequired, &c->writer_domain));
  HS_RETURN_IF_ERROR(ReadClientDomain(ctx, r, "reader_domain", Need::kRequired, &c->reader_domain));
  if (c->reader_domain == c->writer_domain) {
    return r.ErrorAt("reader_domain", "must differ from writer_domain");
  }
  HS_RETURN_IF_ERROR(r.Int("objects", &c->objects, 1, kCountMax, Need::kRequired));
  HS_RETURN_IF_ERROR(r.Bytes("object_size_bytes", &c->object_size_bytes, 1, kObjectBytesMax));
  HS_RETURN_IF_ERROR(r.Int("reads_per_object", &c->reads_per_object, 1, kCountMax, Need::kRequired));
  HS_RETURN_IF_ERROR(ReadRate(r, "rate_per_s", &c->rate_per_s, Need::kRequired, false));
  HS_RETURN_IF_ERROR(r.Int("readers", &c->readers, 1, kCountMax));
  HS_RETURN_IF_ERROR(r.Duration("settle_ms", &c->settle_ns, kNsPerMs, 0, ctx.scenario->duration_ns));
  return absl::OkStatus();
}

absl::Status ParseColdStart(const ParseContext& ctx, ObjectReader& r, TimeNs start_ns,
                            ColdStartWorkload* c) {
  const Scenario& s = *ctx.scenario;
  HS_RETURN_IF_ERROR(ReadClientDomain(ctx, r, "domain", Need::kRequired, &c->domain));
  const ScenarioDomain* joining = s.FindDomain(c->domain);
  if (joining->join_at_ns <= start_ns) {
    return r.ErrorAt("domain", absl::StrCat("domain \"", c->domain, "\" must join after the "
                                            "workload starts (set its join_at_s)"));
  }
  for (const ScenarioDomain& d : s.topology.domains) {
    if (d.name != c->domain) {
      c->source_domain = d.name;
      break;
    }
  }
  if (c->source_domain.empty()) return r.Error("a cold start needs a second domain as the source");
  HS_RETURN_IF_ERROR(ReadClientDomain(ctx, r, "source_domain", Need::kOptional, &c->source_domain));
  if (c->source_domain == c->domain) return r.ErrorAt("source_domain", "must differ from domain");
  if (s.FindDomain(c->source_domain)->join_at_ns > start_ns) {
    return r.ErrorAt("source_domain", "the source domain must have joined when the workload starts");
  }
  HS_RETURN_IF_ERROR(r.Int("working_set", &c->working_set, 1, kCountMax, Need::kRequired));
  HS_RETURN_IF_ERROR(r.Bytes("object_size_bytes", &c->object_size_bytes, 1, kObjectBytesMax));
  HS_RETURN_IF_ERROR(r.Number("skew", &c->skew, 0.0, 10.0));
  HS_RETURN_IF_ERROR(ReadRate(r, "read_rate_per_s", &c->read_rate_per_s, Need::kRequired, false));
  HS_RETURN_IF_ERROR(
      ReadRate(r, "source_read_rate_per_s", &c->source_read_rate_per_s, Need::kOptional, true));
  HS_RETURN_IF_ERROR(r.Int("readers", &c->readers, 1, kCountMax));
  HS_RETURN_IF_ERROR(r.Duration("settle_ms", &c->settle_ns, kNsPerMs, 0, s.duration_ns));
  if (r.Has("duration_s")) {
    DurationNs d = 0;
    HS_RETURN_IF_ERROR(r.Duration("duration_s", &d, kNsPerSec, 1, s.duration_ns));
    c->duration_ns = d;
  } else {
    r.Get("duration_s");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseWorkloads(ParseContext& ctx, const JsonField& f) {
  Scenario& s = *ctx.scenario;
  HS_ASSIGN_OR_RETURN(std::vector<JsonField> items, ReadArray(f, ctx.options->limits.workloads_max));
  std::set<std::string> names;
  for (size_t i = 0; i < items.size(); ++i) {
    const JsonField& item = items[i];
    HS_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Make(item.source, *item.value, item.path));
    Workload w;
    std::string type;
    HS_RETURN_IF_ERROR(r.Enum("type", &type,
                              {"trace", "zipf", "cross_domain_reuse", "cold_start", "scripted"},
                              Need::kRequired));
    for (WorkloadType t : {WorkloadType::kTrace, WorkloadType::kZipf,
                           WorkloadType::kCrossDomainReuse, WorkloadType::kColdStart,
                           WorkloadType::kScripted}) {
      if (WorkloadTypeName(t) == type) w.type = t;
    }
    w.name = absl::StrCat(type, "-", i);
    HS_RETURN_IF_ERROR(r.Name("name", &w.name));
    if (!names.insert(w.name).second) {
      return r.ErrorAt("name", absl::StrCat("duplicate workload name \"", w.name, "\""));
    }
    HS_RETURN_IF_ERROR(r.Name("tenant", &w.tenant));
    HS_ASSIGN_OR_RETURN(std::optional<JsonField> start, r.Field("start_s", Need::kOptional));
    if (start.has_value()) {
      HS_ASSIGN_OR_RETURN(w.start_ns, ReadRunTime(ctx, *start, kNsPerSec));
    }
    switch (w.type) {
      case WorkloadType::kTrace:
        HS_RETURN_IF_ERROR(ParseTrace(ctx, r, &w.trace));
        break;
      case WorkloadType::kZipf:
        HS_RETURN_IF_ERROR(ParseZipf(ctx, r, &w.zipf));
        if (w.start_ns + w.zipf.settle_ns >= s.duration_ns) {
          return r.ErrorAt("settle_ms", "the reads would start after the end of the run");
        }
        break;
      case WorkloadType::kCrossDomainReuse:
        HS_RETURN_IF_ERROR(ParseCrossDomainReuse(ctx, r, &w.cross_domain_reuse));
        if (w.start_ns + w.cross_domain_reuse.settle_ns >= s.duration_ns) {
          return r.ErrorAt("settle_ms", "the reads would start after the end of the run");
        }
        break;
      case WorkloadType::kColdStart:
        HS_RETURN_IF_ERROR(ParseColdStart(ctx, r, w.start_ns, &w.cold_start));
        break;
      case WorkloadType::kScripted:
        HS_RETURN_IF_ERROR(ParseScript(ctx, r, w, &w.scripted));
        break;
    }
    if (w.type == WorkloadType::kZipf || w.type == WorkloadType::kCrossDomainReuse ||
        w.type == WorkloadType::kColdStart) {
      HS_RETURN_IF_ERROR(r.Int("put_batch_keys", &w.put_batch_keys, 1,
                               static_cast<int64_t>(ctx.options->limits.batch_keys_max)));
    }
    HS_RETURN_IF_ERROR(r.Finish());
    s.workloads.push_back(std::move(w));
  }
  return absl::OkStatus();
}

}  // namespace heatsink::sim::scenario_internal
