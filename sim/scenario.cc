// The scenario loader: top level, topology, knobs, outputs, faults and
// checks. Workloads are in scenario_workloads.cc.
#include "sim/scenario.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "sim/json_fields.h"
#include "sim/scenario_parse.h"

namespace heatsink::sim {

absl::string_view WorkloadTypeName(WorkloadType type) {
  switch (type) {
    case WorkloadType::kTrace: return "trace";
    case WorkloadType::kZipf: return "zipf";
    case WorkloadType::kCrossDomainReuse: return "cross_domain_reuse";
    case WorkloadType::kColdStart: return "cold_start";
    case WorkloadType::kScripted: return "scripted";
  }
  return "unknown";
}

absl::string_view InstancePolicyName(InstancePolicy policy) {
  switch (policy) {
    case InstancePolicy::kRoundRobin: return "round_robin";
    case InstancePolicy::kHash: return "hash";
    case InstancePolicy::kWeights: return "weights";
    case InstancePolicy::kSameDomain: return "same_domain";
  }
  return "unknown";
}

const ScenarioDomain* Scenario::FindDomain(absl::string_view name) const {
  for (const ScenarioDomain& d : topology.domains) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

const ScenarioHost* Scenario::FindHost(absl::string_view name) const {
  for (const ScenarioDomain& d : topology.domains) {
    for (const ScenarioHost& h : d.hosts) {
      if (h.name == name) return &h;
    }
  }
  return nullptr;
}

const ScenarioHost* Scenario::HostOf(absl::string_view full_name) const {
  const size_t slash = full_name.find('/');
  if (slash == absl::string_view::npos) return nullptr;
  return FindHost(full_name.substr(0, slash));
}

const ScenarioSegment* Scenario::FindSegment(absl::string_view full_name) const {
  const ScenarioHost* h = HostOf(full_name);
  if (h == nullptr) return nullptr;
  for (const ScenarioSegment& s : h->segments) {
    if (s.full_name == full_name) return &s;
  }
  return nullptr;
}

const ScenarioClient* Scenario::FindClient(absl::string_view full_name) const {
  const ScenarioHost* h = HostOf(full_name);
  if (h == nullptr) return nullptr;
  for (const ScenarioClient& c : h->clients) {
    if (c.full_name == full_name) return &c;
  }
  return nullptr;
}

namespace scenario_internal {

std::string Where(const JsonField& f) {
  return absl::StrCat(f.source, ":", f.value->pos().line, ":", f.value->pos().column, ": ",
                      f.path);
}

absl::StatusOr<std::string> KnobValueText(const ParseContext& ctx, absl::string_view name,
                                          JsonPos name_pos, absl::string_view name_path,
                                          const JsonField& value) {
  const KnobSpec* spec = nullptr;
  for (const KnobSpec& k : ctx.options->knobs) {
    if (k.name == name) spec = &k;
  }
  if (spec == nullptr && ctx.options->check_knob_names) {
    return JsonSchemaError(value.source, name_pos, name_path,
                           absl::StrCat("unknown knob \"", name, "\""));
  }
  const JsonValue& v = *value.value;
  const auto mismatch = [&](absl::string_view expected) {
    return value.Error(absl::StrCat("expected ", expected, " for knob \"", name, "\", got ",
                                    JsonKindName(v.kind())));
  };
  const KnobType type = spec != nullptr ? spec->type : KnobType::kString;
  if (spec == nullptr) {
    // No registry to consult: any scalar, in its text form.
    if (v.is_number()) return v.number_text();
    if (v.is_bool()) return std::string(v.bool_value() ? "true" : "false");
    if (v.is_string()) return v.string_value();
    return mismatch("a number, string or boolean");
  }
  switch (type) {
    case KnobType::kInt:
      if (!v.is_number() || !v.is_integer_literal()) {
        if (v.is_number()) {
          return value.Error(absl::StrCat("expected an integer for knob \"", name, "\", got ",
                                          v.number_text()));
        }
        return mismatch("an integer");
      }
      if (!v.int_value().has_value()) {
        return value.Error(absl::StrCat("integer ", v.number_text(), " for knob \"", name,
                                        "\" is out of range"));
      }
      return v.number_text();
    case KnobType::kDouble:
      if (!v.is_number()) return mismatch("a number");
      return v.number_text();
    case KnobType::kBool:
      if (!v.is_bool()) return mismatch("a boolean");
      return std::string(v.bool_value() ? "true" : "false");
    case KnobType::kString:
      if (!v.is_string()) return mismatch("a string");
      return v.string_value();
  }
  return mismatch("a scalar");
}

absl::StatusOr<std::string> ReadDomainRef(const ParseContext& ctx, const JsonField& f) {
  HS_ASSIGN_OR_RETURN(std::string name, ReadString(f));
  if (ctx.scenario->FindDomain(name) == nullptr) {
    return f.Error(absl::StrCat("unknown domain \"", name, "\""));
  }
  return name;
}

absl::StatusOr<std::string> ReadSegmentRef(const ParseContext& ctx, const JsonField& f) {
  HS_ASSIGN_OR_RETURN(std::string name, ReadString(f));
  if (ctx.scenario->FindSegment(name) == nullptr) {
    return f.Error(absl::StrCat("unknown segment \"", name, "\" (write \"<host>/<segment>\")"));
  }
  return name;
}

absl::StatusOr<std::string> ReadClientRef(const ParseContext& ctx, const JsonField& f) {
  HS_ASSIGN_OR_RETURN(std::string name, ReadString(f));
  if (ctx.scenario->FindClient(name) == nullptr) {
    return f.Error(absl::StrCat("unknown client \"", name, "\" (write \"<host>/<client>\")"));
  }
  return name;
}

absl::StatusOr<std::string> ReadHostRef(const ParseContext& ctx, const JsonField& f) {
  HS_ASSIGN_OR_RETURN(std::string name, ReadString(f));
  if (ctx.scenario->FindHost(name) == nullptr) {
    return f.Error(absl::StrCat("unknown host \"", name, "\""));
  }
  return name;
}

absl::StatusOr<std::string> ReadKey(const JsonField& f) {
  HS_ASSIGN_OR_RETURN(std::string key, ReadString(f));
  const bool has_control =
      std::any_of(key.begin(), key.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
  if (key.empty() || key.size() > 1024 || has_control) {
    return f.Error("a key must be 1 to 1024 bytes without control characters");
  }
  return key;
}

absl::StatusOr<TimeNs> ReadRunTime(const ParseContext& ctx, const JsonField& f,
                                   int64_t unit_ns) {
  HS_ASSIGN_OR_RETURN(TimeNs t, ReadDuration(f, unit_ns, 0, kInt64Max));
  if (t >= ctx.scenario->duration_ns) {
    return f.Error(absl::StrCat("time ", t, " ns is not before the end of the run (duration ",
                                ctx.scenario->duration_ns, " ns)"));
  }
  return t;
}

}  // namespace scenario_internal

namespace {

using scenario_internal::ParseContext;

// ---------------------------------------------------------------- topology

absl::Status ParseNumaNode(const JsonField& f, ScenarioNumaNode* node) {
  HS_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Make(f.source, *f.value, f.path));
  HS_RETURN_IF_ERROR(r.Int("id", &node->id, 0, 1023, Need::kRequired));
  HS_RETURN_IF_ERROR(r.Bytes("capacity_bytes", &node->capacity_bytes));
  HS_RETURN_IF_ERROR(
      r.Duration("local_read_latency_ns", &node->local_read_latency_ns, 1, 0, SecToNs(1)));
  HS_RETURN_IF_ERROR(
      r.Duration("remote_read_latency_ns", &node->remote_read_latency_ns, 1, 0, SecToNs(1)));
  HS_RETURN_IF_ERROR(r.Bandwidth("local_read_gbps", &node->local_read_bytes_per_s));
  HS_RETURN_IF_ERROR(r.Bandwidth("remote_read_gbps", &node->remote_read_bytes_per_s));
  return r.Finish();
}

// A host-local name list item: checks uniqueness within `seen`.
absl::Status CheckUnique(const JsonField& name_field, const std::string& name,
                         std::set<std::string>* seen, absl::string_view what) {
  if (!seen->insert(name).second) {
    return name_field.Error(absl::StrCat("duplicate ", what, " name \"", name, "\""));
  }
  return absl::OkStatus();
}

const ScenarioNumaNode* FindNode(const ScenarioHost& host, int64_t id) {
  for (const ScenarioNumaNode& n : host.numa_nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

absl::Status CheckNodeRef(const ObjectReader& r, absl::string_view key, const ScenarioHost& host,
                          int64_t id) {
  if (FindNode(host, id) == nullptr) {
    return r.ErrorAt(key, absl::StrCat("unknown NUMA node ", id, " on this host"));
  }
  return absl::OkStatus();
}

// NUMA node ids are 0..1023.
constexpr size_t kNumaNodesMax = 1024;

// `numa_distances`: one row per NUMA node in ascending id order, each with one
// entry per node; checked as the core checks a runtime topology.
absl::Status ParseNumaDistances(ObjectReader& r, ScenarioHost* host) {
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> field, r.Field("numa_distances", Need::kOptional));
  if (!field.has_value()) return absl::OkStatus();
  const size_t n = host->numa_nodes.size();
  HS_ASSIGN_OR_RETURN(std::vector<JsonField> rows, ReadArray(*field, kNumaNodesMax));
  if (rows.size() != n) {
    return field->Error(absl::StrCat(rows.size(), " rows for ", n, " NUMA node(s)"));
  }
  for (const JsonField& row_field : rows) {
    HS_ASSIGN_OR_RETURN(std::vector<JsonField> entries, ReadArray(row_field, kNumaNodesMax));
    if (entries.size() != n) {
      return row_field.Error(absl::StrCat(entries.size(), " entries for ", n, " NUMA node(s)"));
    }
    std::vector<int> row;
    for (const JsonField& e : entries) {
      HS_ASSIGN_OR_RETURN(const int64_t d, ReadInt(e, 1, 1000));
      row.push_back(static_cast<int>(d));
    }
    host->numa_distances.push_back(std::move(row));
  }
  if (absl::Status s = ValidateTopology(HostTopology(*host)); !s.ok()) {
    return field->Error(s.message());
  }
  return absl::OkStatus();
}

// Everything of one host entry except its name (shared by `count` copies).
absl::Status ParseHostBody(const ParseContext& ctx, ObjectReader& r, ScenarioHost* host) {
  const ScenarioLimits& limits = ctx.options->limits;
  HS_RETURN_IF_ERROR(r.Int("nic_count", &host->nic_count, 1, 16));
  HS_RETURN_IF_ERROR(r.Bandwidth("nic_send_gbps", &host->nic_send_bytes_per_s));
  HS_RETURN_IF_ERROR(r.Bandwidth("nic_receive_gbps", &host->nic_receive_bytes_per_s));
  HS_RETURN_IF_ERROR(r.Bandwidth("local_copy_gbps", &host->local_copy_bytes_per_s));

  HS_ASSIGN_OR_RETURN(std::optional<JsonField> nodes_field, r.Field("numa_nodes", Need::kOptional));
  if (nodes_field.has_value()) {
    HS_ASSIGN_OR_RETURN(std::vector<JsonField> nodes, ReadArray(*nodes_field, limits.host_items_max));
    if (nodes.empty()) return nodes_field->Error("a host needs at least one NUMA node");
    for (const JsonField& nf : nodes) {
      ScenarioNumaNode node;
      HS_RETURN_IF_ERROR(ParseNumaNode(nf, &node));
      if (FindNode(*host, node.id) != nullptr) {
        return nf.Error(absl::StrCat("duplicate NUMA node id ", node.id));
      }
      host->numa_nodes.push_back(node);
    }
    std::sort(host->numa_nodes.begin(), host->numa_nodes.end(),
              [](const ScenarioNumaNode& a, const ScenarioNumaNode& b) { return a.id < b.id; });
  } else {
    host->numa_nodes.push_back(ScenarioNumaNode{});
  }
  host->numa_where =
      nodes_field.has_value()
          ? absl::StrCat(FormatJsonPos(nodes_field->source, nodes_field->value->pos()),
                         nodes_field->path)
          : absl::StrCat(FormatJsonPos(r.source(), r.value().pos()), r.path());
  host->nic_numa_node = host->numa_nodes.front().id;
  HS_RETURN_IF_ERROR(r.Int("nic_numa_node", &host->nic_numa_node, 0, 1023));
  HS_RETURN_IF_ERROR(CheckNodeRef(r, "nic_numa_node", *host, host->nic_numa_node));
  HS_RETURN_IF_ERROR(ParseNumaDistances(r, host));

  std::map<int64_t, int64_t> bytes_on_node;
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> segs_field, r.Field("segments", Need::kOptional));
  if (segs_field.has_value()) {
    HS_ASSIGN_OR_RETURN(std::vector<JsonField> segs, ReadArray(*segs_field, limits.host_items_max));
    std::set<std::string> seen;
    for (const JsonField& sf : segs) {
      HS_ASSIGN_OR_RETURN(ObjectReader sr, ObjectReader::Make(sf.source, *sf.value, sf.path));
      ScenarioSegment seg;
      seg.numa_node = host->nic_numa_node;
      HS_RETURN_IF_ERROR(sr.Name("name", &seg.name, Need::kRequired));
      HS_RETURN_IF_ERROR(CheckUnique(**sr.Field("name", Need::kRequired), seg.name, &seen,
                                     "segment"));
      HS_RETURN_IF_ERROR(sr.Bytes("capacity_bytes", &seg.capacity_bytes, 1, kInt64Max,
                                  Need::kRequired));
      HS_RETURN_IF_ERROR(sr.Int("numa_node", &seg.numa_node, 0, 1023));
      HS_RETURN_IF_ERROR(CheckNodeRef(sr, "numa_node", *host, seg.numa_node));
      HS_RETURN_IF_ERROR(sr.Finish());
      int64_t& used = bytes_on_node[seg.numa_node];
      const ScenarioNumaNode* node = FindNode(*host, seg.numa_node);
      if (seg.capacity_bytes > node->capacity_bytes - used) {
        return sr.ErrorAt("capacity_bytes",
                          absl::StrCat("segments on NUMA node ", seg.numa_node, " need more than "
                                       "the node's capacity of ", node->capacity_bytes, " bytes"));
      }
      used += seg.capacity_bytes;
      host->segments.push_back(std::move(seg));
    }
  }

  HS_ASSIGN_OR_RETURN(std::optional<JsonField> clients_field, r.Field("clients", Need::kOptional));
  if (clients_field.has_value()) {
    HS_ASSIGN_OR_RETURN(std::vector<JsonField> clients,
                        ReadArray(*clients_field, limits.host_items_max));
    std::set<std::string> seen;
    for (const JsonField& cf : clients) {
      HS_ASSIGN_OR_RETURN(ObjectReader cr, ObjectReader::Make(cf.source, *cf.value, cf.path));
      ScenarioClient client;
      client.numa_node = host->nic_numa_node;
      HS_RETURN_IF_ERROR(cr.Name("name", &client.name, Need::kRequired));
      HS_RETURN_IF_ERROR(CheckUnique(**cr.Field("name", Need::kRequired), client.name, &seen,
                                     "client"));
      HS_RETURN_IF_ERROR(cr.Int("numa_node", &client.numa_node, 0, 1023));
      HS_RETURN_IF_ERROR(CheckNodeRef(cr, "numa_node", *host, client.numa_node));
      HS_RETURN_IF_ERROR(cr.Finish());
      host->clients.push_back(std::move(client));
    }
  }

  for (const bool prefill : {true, false}) {
    const absl::string_view key = prefill ? "prefill_instances" : "decode_instances";
    std::vector<ScenarioInstance>& out = prefill ? host->prefill_instances : host->decode_instances;
    HS_ASSIGN_OR_RETURN(std::optional<JsonField> field, r.Field(key, Need::kOptional));
    if (!field.has_value()) continue;
    HS_ASSIGN_OR_RETURN(std::vector<JsonField> items, ReadArray(*field, limits.host_items_max));
    std::set<std::string> seen;
    for (const JsonField& itf : items) {
      HS_ASSIGN_OR_RETURN(ObjectReader ir, ObjectReader::Make(itf.source, *itf.value, itf.path));
      ScenarioInstance inst;
      HS_RETURN_IF_ERROR(ir.Name("name", &inst.name, Need::kRequired));
      HS_RETURN_IF_ERROR(CheckUnique(**ir.Field("name", Need::kRequired), inst.name, &seen,
                                     prefill ? "prefill instance" : "decode instance"));
      if (host->clients.empty()) {
        return itf.Error("an instance needs a store client on its host (add \"clients\")");
      }
      inst.client = host->clients.front().name;
      HS_RETURN_IF_ERROR(ir.Name("client", &inst.client));
      const bool known = std::any_of(host->clients.begin(), host->clients.end(),
                                     [&](const ScenarioClient& c) { return c.name == inst.client; });
      if (!known) {
        return ir.ErrorAt("client", absl::StrCat("unknown client \"", inst.client,
                                                 "\" on this host"));
      }
      HS_RETURN_IF_ERROR(ir.Finish());
      out.push_back(std::move(inst));
    }
  }
  return r.Finish();
}

// Sets the full names once the host's final name is known.
void NameHostItems(ScenarioHost* host) {
  for (ScenarioSegment& s : host->segments) s.full_name = absl::StrCat(host->name, "/", s.name);
  for (ScenarioClient& c : host->clients) c.full_name = absl::StrCat(host->name, "/", c.name);
  for (auto* list : {&host->prefill_instances, &host->decode_instances}) {
    for (ScenarioInstance& i : *list) {
      i.full_name = absl::StrCat(host->name, "/", i.name);
      i.client = absl::StrCat(host->name, "/", i.client);
    }
  }
}

absl::Status ParseDomain(const ParseContext& ctx, const JsonField& f, ScenarioDomain* domain,
                         std::set<std::string>* host_names, size_t* hosts_total) {
  const ScenarioLimits& limits = ctx.options->limits;
  HS_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Make(f.source, *f.value, f.path));
  HS_RETURN_IF_ERROR(r.Name("name", &domain->name, Need::kRequired));
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> join, r.Field("join_at_s", Need::kOptional));
  if (join.has_value()) {
    HS_ASSIGN_OR_RETURN(domain->join_at_ns,
                        scenario_internal::ReadRunTime(ctx, *join, kNsPerSec));
  }
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> hosts_field, r.Field("hosts", Need::kRequired));
  HS_ASSIGN_OR_RETURN(std::vector<JsonField> hosts, ReadArray(*hosts_field, limits.hosts_max));
  if (hosts.empty()) return hosts_field->Error("a domain needs at least one host");
  for (const JsonField& hf : hosts) {
    HS_ASSIGN_OR_RETURN(ObjectReader hr, ObjectReader::Make(hf.source, *hf.value, hf.path));
    std::string name;
    HS_RETURN_IF_ERROR(hr.Name("name", &name, Need::kRequired));
    int64_t count = 1;
    HS_RETURN_IF_ERROR(hr.Int("count", &count, 1, static_cast<int64_t>(limits.hosts_max)));
    if (*hosts_total + static_cast<size_t>(count) > limits.hosts_max) {
      return absl::ResourceExhaustedError(absl::StrCat(
          FormatJsonPos(hf.source, hf.value->pos()), hf.path, ": more than ", limits.hosts_max,
          " hosts in the topology"));
    }
    *hosts_total += static_cast<size_t>(count);
    ScenarioHost body;
    body.domain = domain->name;
    HS_RETURN_IF_ERROR(ParseHostBody(ctx, hr, &body));
    const JsonField name_field = **hr.Field("name", Need::kRequired);
    for (int64_t i = 0; i < count; ++i) {
      ScenarioHost host = body;
      host.name = count == 1 ? name : absl::StrCat(name, "-", i);
      if (!host_names->insert(host.name).second) {
        return name_field.Error(absl::StrCat("duplicate host name \"", host.name, "\""));
      }
      NameHostItems(&host);
      domain->hosts.push_back(std::move(host));
    }
  }
  return r.Finish();
}

// A ratio such as 3 (3:1) as the percent the network model takes (300).
absl::StatusOr<int64_t> ReadOversubscription(const JsonField& f) {
  HS_RETURN_IF_ERROR(ReadNumber(f, 1.0, 1000.0).status());
  const std::optional<int64_t> percent =
      ScaleDecimal(f.value->number_text(), 100, DecimalRounding::kNearest);
  if (!percent.has_value()) return f.Error("too many significant digits");
  return *percent;
}

absl::Status ParseTrunkFields(ObjectReader& r, ScenarioTrunk* trunk) {
  HS_RETURN_IF_ERROR(r.Bandwidth("bandwidth_gbps", &trunk->bandwidth_bytes_per_s));
  HS_RETURN_IF_ERROR(r.Duration("latency_us", &trunk->latency_ns, kNsPerUs, 0, SecToNs(10)));
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> over, r.Field("oversubscription", Need::kOptional));
  if (over.has_value()) {
    HS_ASSIGN_OR_RETURN(trunk->oversubscription_percent, ReadOversubscription(*over));
  }
  return absl::OkStatus();
}

// `between: ["a", "b"]` naming two distinct known domains.
absl::StatusOr<std::pair<Domain, Domain>> ReadDomainPair(const ParseContext& ctx,
                                                         ObjectReader& r) {
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> between, r.Field("between", Need::kRequired));
  HS_ASSIGN_OR_RETURN(std::vector<JsonField> ends, ReadArray(*between, 2));
  if (ends.size() != 2) return between->Error("expected two domain names");
  HS_ASSIGN_OR_RETURN(std::string a, scenario_internal::ReadDomainRef(ctx, ends[0]));
  HS_ASSIGN_OR_RETURN(std::string b, scenario_internal::ReadDomainRef(ctx, ends[1]));
  if (a == b) return ends[1].Error("a trunk joins two different domains");
  return std::make_pair(a, b);
}

bool SamePair(const ScenarioTrunk& t, absl::string_view a, absl::string_view b) {
  return (t.domain_a == a && t.domain_b == b) || (t.domain_a == b && t.domain_b == a);
}

absl::Status CheckConnected(const ObjectReader& r, const ScenarioTopology& topo) {
  const std::vector<ScenarioDomain>& domains = topo.domains;
  std::set<std::string> reached = {domains.front().name};
  bool grew = true;
  while (grew) {
    grew = false;
    for (const ScenarioTrunk& t : topo.trunks) {
      const bool a = reached.count(t.domain_a) > 0;
      const bool b = reached.count(t.domain_b) > 0;
      if (a != b) {
        reached.insert(a ? t.domain_b : t.domain_a);
        grew = true;
      }
    }
  }
  for (const ScenarioDomain& d : domains) {
    if (reached.count(d.name) == 0) {
      return r.Error(absl::StrCat("domain \"", d.name, "\" is not connected to \"",
                                  domains.front().name, "\" by any trunk"));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseNetwork(const JsonField& f, ScenarioNetwork* net) {
  HS_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Make(f.source, *f.value, f.path));
  const std::pair<absl::string_view, std::optional<DurationNs>*> latencies[] = {
      {"control_same_host_latency_us", &net->control_same_host_latency_ns},
      {"control_same_domain_latency_us", &net->control_same_domain_latency_ns},
      {"control_cross_domain_latency_us", &net->control_cross_domain_latency_ns},
      {"transfer_overhead_us", &net->transfer_overhead_ns},
  };
  for (const auto& [key, out] : latencies) {
    if (!r.Has(key)) {
      r.Get(key);
      continue;
    }
    DurationNs ns = 0;
    HS_RETURN_IF_ERROR(r.Duration(key, &ns, kNsPerUs, 0, SecToNs(10)));
    *out = ns;
  }
  if (r.Has("control_jitter_percent")) {
    int64_t percent = 0;
    HS_RETURN_IF_ERROR(r.Int("control_jitter_percent", &percent, 0, 100));
    net->control_jitter_percent = percent;
  } else {
    r.Get("control_jitter_percent");
  }
  return r.Finish();
}

absl::Status ParseTopology(const ParseContext& ctx, const JsonField& f, ScenarioTopology* topo) {
  const ScenarioLimits& limits = ctx.options->limits;
  HS_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Make(f.source, *f.value, f.path));
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> domains_field, r.Field("domains", Need::kRequired));
  HS_ASSIGN_OR_RETURN(std::vector<JsonField> domains,
                      ReadArray(*domains_field, limits.domains_max));
  if (domains.empty()) return domains_field->Error("the topology needs at least one domain");
  std::set<std::string> domain_names;
  std::set<std::string> host_names;
  size_t hosts_total = 0;
  for (const JsonField& df : domains) {
    ScenarioDomain domain;
    HS_RETURN_IF_ERROR(ParseDomain(ctx, df, &domain, &host_names, &hosts_total));
    if (!domain_names.insert(domain.name).second) {
      return JsonField{df.source, df.value->Find("name"), JsonChildPath(df.path, "name")}.Error(
          absl::StrCat("duplicate domain name \"", domain.name, "\""));
    }
    topo->domains.push_back(std::move(domain));
  }

  // Default trunk: present unless explicitly null.
  std::optional<ScenarioTrunk> default_trunk = ScenarioTrunk{};
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> dt, r.Field("default_trunk", Need::kOptional));
  if (dt.has_value()) {
    if (dt->value->is_null()) {
      default_trunk.reset();
    } else {
      HS_ASSIGN_OR_RETURN(ObjectReader tr, ObjectReader::Make(dt->source, *dt->value, dt->path));
      HS_RETURN_IF_ERROR(ParseTrunkFields(tr, &*default_trunk));
      HS_RETURN_IF_ERROR(tr.Finish());
    }
  }
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> trunks_field, r.Field("trunks", Need::kOptional));
  if (trunks_field.has_value()) {
    HS_ASSIGN_OR_RETURN(std::vector<JsonField> trunks, ReadArray(*trunks_field, limits.trunks_max));
    for (const JsonField& tf : trunks) {
      HS_ASSIGN_OR_RETURN(ObjectReader tr, ObjectReader::Make(tf.source, *tf.value, tf.path));
      ScenarioTrunk trunk = default_trunk.value_or(ScenarioTrunk{});
      ScenarioTrunk parsed = trunk;
      HS_ASSIGN_OR_RETURN(auto pair, ReadDomainPair(ctx, tr));
      parsed.domain_a = pair.first;
      parsed.domain_b = pair.second;
      for (const ScenarioTrunk& t : topo->trunks) {
        if (SamePair(t, pair.first, pair.second)) {
          return tr.ErrorAt("between", absl::StrCat("duplicate trunk between \"", pair.first,
                                                    "\" and \"", pair.second, "\""));
        }
      }
      HS_RETURN_IF_ERROR(ParseTrunkFields(tr, &parsed));
      HS_RETURN_IF_ERROR(tr.Finish());
      topo->trunks.push_back(std::move(parsed));
    }
  }
  if (default_trunk.has_value()) {
    for (size_t i = 0; i < topo->domains.size(); ++i) {
      for (size_t j = i + 1; j < topo->domains.size(); ++j) {
        const Domain& a = topo->domains[i].name;
        const Domain& b = topo->domains[j].name;
        const bool listed = std::any_of(topo->trunks.begin(), topo->trunks.end(),
                                        [&](const ScenarioTrunk& t) { return SamePair(t, a, b); });
        if (listed) continue;
        if (topo->trunks.size() >= limits.trunks_max) {
          return absl::ResourceExhaustedError(absl::StrCat(
              FormatJsonPos(f.source, f.value->pos()), f.path, ": more than ", limits.trunks_max,
              " trunks (set \"default_trunk\": null and list the trunks)"));
        }
        ScenarioTrunk t = *default_trunk;
        t.domain_a = a;
        t.domain_b = b;
        topo->trunks.push_back(std::move(t));
      }
    }
  }
  HS_RETURN_IF_ERROR(CheckConnected(r, *topo));

  HS_ASSIGN_OR_RETURN(std::optional<JsonField> net, r.Field("network", Need::kOptional));
  if (net.has_value()) HS_RETURN_IF_ERROR(ParseNetwork(*net, &topo->network));
  return r.Finish();
}

// ------------------------------------------------------------ knobs, misc

absl::Status ParseKnobs(const ParseContext& ctx, const JsonField& f,
                        std::vector<KnobSetting>* out) {
  if (!f.value->is_object()) {
    return f.Error(absl::StrCat("expected an object, got ", JsonKindName(f.value->kind())));
  }
  const auto& members = f.value->members();
  if (members.size() > ctx.options->limits.knobs_max) {
    return absl::ResourceExhaustedError(absl::StrCat(FormatJsonPos(f.source, f.value->pos()),
                                                     f.path, ": more than ",
                                                     ctx.options->limits.knobs_max, " knobs"));
  }
  for (const JsonMember& m : members) {
    const JsonField value{f.source, m.value.get(), JsonChildPath(f.path, m.key)};
    HS_ASSIGN_OR_RETURN(std::string text,
                        scenario_internal::KnobValueText(ctx, m.key, m.key_pos, value.path, value));
    out->push_back(KnobSetting{m.key, std::move(text), scenario_internal::Where(value)});
  }
  return absl::OkStatus();
}

absl::Status ParseOutputs(const JsonField& f, DurationNs time_step_ns, ScenarioOutputs* out) {
  HS_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Make(f.source, *f.value, f.path));
  HS_RETURN_IF_ERROR(r.Bool("log_reads", &out->log_reads));
  HS_RETURN_IF_ERROR(r.Duration("csv_interval_ms", &out->csv_interval_ns, kNsPerMs, 1));
  if (out->csv_interval_ns % time_step_ns != 0) {
    return r.ErrorAt("csv_interval_ms",
                     absl::StrCat("must be a multiple of time_step_ms (", time_step_ns / kNsPerMs,
                                  " ms)"));
  }
  HS_RETURN_IF_ERROR(r.Bool("per_request_csv", &out->per_request_csv));
  HS_RETURN_IF_ERROR(r.Bool("html_report", &out->html_report));
  if (r.Has("clairvoyant_budget_bytes")) {
    int64_t budget = 0;
    HS_RETURN_IF_ERROR(r.Bytes("clairvoyant_budget_bytes", &budget, 0));
    out->clairvoyant_budget_bytes = budget;
  }
  return r.Finish();
}

absl::Status ParseChecks(const ParseContext& ctx, const JsonField& f,
                         std::vector<ScenarioCheck>* out) {
  HS_ASSIGN_OR_RETURN(std::vector<JsonField> items, ReadArray(f, ctx.options->limits.checks_max));
  std::set<std::string> names;
  for (size_t i = 0; i < items.size(); ++i) {
    HS_ASSIGN_OR_RETURN(ObjectReader r,
                        ObjectReader::Make(items[i].source, *items[i].value, items[i].path));
    ScenarioCheck check;
    check.name = absl::StrCat("check-", i);
    HS_RETURN_IF_ERROR(r.Name("name", &check.name));
    if (!names.insert(check.name).second) {
      return r.ErrorAt("name", absl::StrCat("duplicate check name \"", check.name, "\""));
    }
    HS_RETURN_IF_ERROR(r.Name("metric", &check.metric, Need::kRequired));
    HS_RETURN_IF_ERROR(r.Enum("op", &check.op, {"<", "<=", ">", ">=", "=="}, Need::kRequired));
    HS_RETURN_IF_ERROR(r.Number("value", &check.value, -1e300, 1e300, Need::kRequired));
    if (r.Has("mode")) {
      std::string mode;
      HS_RETURN_IF_ERROR(r.Enum("mode", &mode, {"off", "observe", "enforce"}));
      check.mode = mode;
    } else {
      r.Get("mode");
    }
    check.where = scenario_internal::Where(items[i]);
    HS_RETURN_IF_ERROR(r.Finish());
    out->push_back(std::move(check));
  }
  return absl::OkStatus();
}

}  // namespace

Topology HostTopology(const ScenarioHost& host) {
  Topology t;
  for (const ScenarioNumaNode& n : host.numa_nodes) {
    NumaNode node;
    node.id = static_cast<int>(n.id);
    node.capacity_bytes = static_cast<uint64_t>(n.capacity_bytes);
    t.nodes.push_back(std::move(node));
  }
  t.distances = host.numa_distances.empty() ? DefaultNodeDistances(static_cast<int>(t.nodes.size()))
                                            : host.numa_distances;
  t.nic_node = static_cast<int>(host.nic_numa_node);
  return t;
}

absl::StatusOr<Scenario> ParseScenario(absl::string_view text, absl::string_view source,
                                       absl::string_view base_dir,
                                       const ScenarioLoadOptions& options) {
  HS_ASSIGN_OR_RETURN(JsonDocument doc, ParseJson(text, source, options.limits.json));
  Scenario scenario;
  scenario.source = std::string(source);
  ParseContext ctx{source, std::string(base_dir), &options, &scenario};
  HS_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Make(source, doc.root(), "$"));

  int64_t version = kScenarioFormatVersion;
  HS_RETURN_IF_ERROR(r.Int("format_version", &version, 1, kInt64Max));
  if (version != kScenarioFormatVersion) {
    return r.ErrorAt("format_version", absl::StrCat("unsupported format_version ", version,
                                                    " (this build reads ",
                                                    kScenarioFormatVersion, ")"));
  }
  HS_RETURN_IF_ERROR(r.Name("name", &scenario.name, Need::kRequired));
  HS_RETURN_IF_ERROR(r.String("description", &scenario.description));
  int64_t seed = 1;
  HS_RETURN_IF_ERROR(r.Int("seed", &seed, 0, kInt64Max));
  scenario.seed = static_cast<uint64_t>(seed);
  HS_RETURN_IF_ERROR(
      r.Duration("duration_s", &scenario.duration_ns, kNsPerSec, 1, SecToNs(30LL * 86400)));
  HS_RETURN_IF_ERROR(r.Duration("time_step_ms", &scenario.time_step_ns, kNsPerMs, kNsPerMs,
                                scenario.duration_ns));
  scenario.outputs.csv_interval_ns = scenario.time_step_ns;
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> outputs, r.Field("outputs", Need::kOptional));
  if (outputs.has_value()) {
    HS_RETURN_IF_ERROR(ParseOutputs(*outputs, scenario.time_step_ns, &scenario.outputs));
  }
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> topology, r.Field("topology", Need::kRequired));
  HS_RETURN_IF_ERROR(ParseTopology(ctx, *topology, &scenario.topology));
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> knobs, r.Field("knobs", Need::kOptional));
  if (knobs.has_value()) HS_RETURN_IF_ERROR(ParseKnobs(ctx, *knobs, &scenario.knobs));
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> workloads, r.Field("workloads", Need::kOptional));
  if (workloads.has_value()) HS_RETURN_IF_ERROR(scenario_internal::ParseWorkloads(ctx, *workloads));
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> faults, r.Field("faults", Need::kOptional));
  if (faults.has_value()) {
    HS_RETURN_IF_ERROR(scenario_internal::ParseFaults(ctx, *faults, &scenario.faults));
  }
  HS_ASSIGN_OR_RETURN(std::optional<JsonField> checks, r.Field("checks", Need::kOptional));
  if (checks.has_value()) HS_RETURN_IF_ERROR(ParseChecks(ctx, *checks, &scenario.checks));
  HS_RETURN_IF_ERROR(r.Finish());
  return scenario;
}

absl::StatusOr<Scenario> LoadScenarioFile(const std::string& path,
                                          const ScenarioLoadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open scenario file"));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read"));
  if (static_cast<size_t>(size) > options.limits.json.input_bytes_max) {
    return absl::ResourceExhaustedError(absl::StrCat(
        path, ": ", size, " bytes, more than the limit of ", options.limits.json.input_bytes_max,
        " bytes"));
  }
  in.seekg(0, std::ios::beg);
  std::string text(static_cast<size_t>(size), '\0');
  in.read(text.data(), size);
  if (in.gcount() != size) return absl::InvalidArgumentError(absl::StrCat(path, ": short read"));
  const size_t slash = path.rfind('/');
  const std::string base_dir = slash == std::string::npos ? "" : path.substr(0, slash);
  return ParseScenario(text, path, base_dir, options);
}

}  // namespace heatsink::sim
