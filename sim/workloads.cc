// Synthetic and scripted workload streams, timed faults, and the merged
// scenario stream. Trace replay is in workloads_trace.cc.
#include "sim/workloads.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "sim/workloads_zipf.h"

namespace heatsink::sim {

absl::string_view SimOpKindName(SimOpKind kind) {
  switch (kind) {
    case SimOpKind::kPut: return "put";
    case SimOpKind::kBatchPut:
      return "batch_put";
    case SimOpKind::kGet: return "get";
    case SimOpKind::kBatchGet: return "batch_get";
    case SimOpKind::kRemove: return "remove";
    case SimOpKind::kMount: return "mount";
    case SimOpKind::kUnmount: return "unmount";
    case SimOpKind::kKillWorker: return "kill_worker";
    case SimOpKind::kRestartWorker: return "restart_worker";
    case SimOpKind::kFailCopy: return "fail_copy";
    case SimOpKind::kDelayCopies: return "delay_copies";
    case SimOpKind::kCopyStart: return "copy_start";
    case SimOpKind::kSetKnob: return "set_knob";
    case SimOpKind::kDrain: return "drain";
    case SimOpKind::kUndrain: return "undrain";
    case SimOpKind::kPropose: return "propose";
    case SimOpKind::kWarmup: return "warmup";
  }
  return "unknown";
}

absl::string_view SimOpPhaseName(SimOpPhase phase) {
  switch (phase) {
    case SimOpPhase::kNone: return "none";
    case SimOpPhase::kPrefillRead: return "prefill_read";
    case SimOpPhase::kPrefillPut: return "prefill_put";
    case SimOpPhase::kDecodeRead: return "decode_read";
  }
  return "unknown";
}

namespace {

struct ClientRef {
  std::string name;  // "<host>/<client>"
  Domain domain;
};

// Clients of a domain in topology order (hosts in order, clients in order),
// so consecutive readers land on different hosts first.
std::vector<ClientRef> ClientsOf(const Scenario& s, absl::string_view domain) {
  std::vector<ClientRef> out;
  const ScenarioDomain* d = s.FindDomain(domain);
  if (d == nullptr) return out;
  size_t depth = 0;
  for (const ScenarioHost& h : d->hosts) depth = std::max(depth, h.clients.size());
  for (size_t k = 0; k < depth; ++k) {
    for (const ScenarioHost& h : d->hosts) {
      if (k < h.clients.size()) out.push_back(ClientRef{h.clients[k].full_name, d->name});
    }
  }
  return out;
}

// Readers: `per_domain` in each of several domains, reader j of a domain
// using the domain's clients round robin. Held as client lists, not one entry
// per reader, so a million readers cost nothing.
struct Readers {
  std::vector<std::vector<ClientRef>> clients;  // per domain, non-empty
  int64_t per_domain = 1;

  void AddDomain(const Scenario& s, absl::string_view domain) {
    clients.push_back(ClientsOf(s, domain));
    HS_CHECK(!clients.back().empty());  // the loader requires clients in reader domains
  }
  uint64_t size() const { return clients.size() * static_cast<uint64_t>(per_domain); }
  const ClientRef& Client(uint64_t reader) const {
    const std::vector<ClientRef>& in = clients[reader / static_cast<uint64_t>(per_domain)];
    return in[(reader % static_cast<uint64_t>(per_domain)) % in.size()];
  }
};

DurationNs MeanGapNs(double rate_per_s) {
  HS_CHECK(rate_per_s > 0);
  const double gap = std::floor(static_cast<double>(kNsPerSec) / rate_per_s + 0.5);
  // A rate so low that its gap exceeds ~30 years reads once at most; the cap
  // keeps the conversion and the later additions far from overflow.
  if (!(gap < 1e18)) return 1'000'000'000'000'000'000;
  return std::max<DurationNs>(1, static_cast<DurationNs>(gap));
}

// A sequence of reads: arrival times with jittered gaps, a reader drawn
// uniformly, keys by Zipf rank or in round-robin order.
struct ReadProcess {
  TimeNs next_ns = 0;
  TimeNs end_ns = 0;
  DurationNs mean_gap_ns = 1;
  Readers readers;
  const ZipfSampler* zipf = nullptr;  // nullptr: sequential keys
  int64_t objects = 0;
  int64_t batch_size = 1;
  int64_t sequential_next = 0;
  int64_t reads_left = -1;            // -1: until end_ns
  TimeNs first_read_ns = 0;
  DurationNs drift_step_ns = 0;       // 0: rank r always reads object r

  bool active() const { return next_ns < end_ns && reads_left != 0; }
};

// Resets *op to SimOp() but keeps the storage of its keys and client, so a
// stream that fills the same op again and again does not allocate for them.
void ClearOp(SimOp* op) {
  std::vector<std::string> keys = std::move(op->keys);
  std::string client = std::move(op->client);
  keys.clear();
  client.clear();
  *op = SimOp();
  op->keys = std::move(keys);
  op->client = std::move(client);
}

class SyntheticOpStream final : public OpStream {
 public:
  SyntheticOpStream(const Scenario& s, int32_t index, const Rng& rng)
      : workload_(s.workloads[static_cast<size_t>(index)]),
        index_(index),
        rng_(rng.Fork(workload_.name)) {}

  // Puts of objects [0, n) at the workload's start, by `writers` in turn:
  // one put per object, or batch_puts of the workload's put_batch_keys.
  void SetPuts(std::vector<ClientRef> writers, int64_t objects, int64_t size_bytes) {
    writers_ = std::move(writers);
    put_objects_ = objects;
    put_size_bytes_ = size_bytes;
  }
  void AddProcess(ReadProcess p) { processes_.push_back(std::move(p)); }
  void OwnSampler(std::unique_ptr<ZipfSampler> z) { samplers_.push_back(std::move(z)); }

  absl::StatusOr<bool> Next(SimOp* op) override {
    ClearOp(op);
    op->workload = index_;
    op->tenant = workload_.tenant;
    if (puts_done_ < put_objects_) {
      const int64_t batch = workload_.put_batch_keys;
      const ClientRef& w = writers_[static_cast<size_t>(puts_done_ / batch) % writers_.size()];
      op->t_ns = workload_.start_ns;
      op->kind = batch == 1 ? SimOpKind::kPut : SimOpKind::kBatchPut;
      const int64_t end = std::min(put_objects_, puts_done_ + batch);
      for (; puts_done_ < end; ++puts_done_) op->keys.push_back(Key(puts_done_));
      op->size_bytes = put_size_bytes_;
      op->client = w.name;
      op->requester_domain = w.domain;
      return true;
    }
    ReadProcess* p = nullptr;
    for (ReadProcess& candidate : processes_) {
      if (candidate.active() && (p == nullptr || candidate.next_ns < p->next_ns)) p = &candidate;
    }
    if (p == nullptr) return false;
    op->t_ns = p->next_ns;
    const uint64_t reader = rng_.Uniform(p->readers.size());
    op->reader = static_cast<int64_t>(reader);
    op->client = p->readers.Client(reader).name;
    op->requester_domain = p->readers.Client(reader).domain;
    ranks_.clear();
    while (static_cast<int64_t>(ranks_.size()) < p->batch_size) {
      ranks_.push_back(NextRank(*p, ranks_));
    }
    // A drifting hot set: rank r reads object (r + steps) mod objects.
    const int64_t steps =
        p->drift_step_ns > 0 ? (op->t_ns - p->first_read_ns) / p->drift_step_ns : 0;
    for (int64_t rank : ranks_) op->keys.push_back(Key((rank + steps) % p->objects));
    op->kind = ranks_.size() == 1 ? SimOpKind::kGet : SimOpKind::kBatchGet;
    const DurationNs m = p->mean_gap_ns;
    p->next_ns += rng_.UniformRange(m - m / 2, m + m / 2);
    if (p->reads_left > 0) --p->reads_left;
    return true;
  }

 private:
  std::string Key(int64_t rank) const { return absl::StrCat(workload_.name, "-", rank); }

  // The next key rank, distinct from those already in the batch. Zipf draws
  // are retried a bounded number of times, then the lowest unused rank is
  // taken, so a tiny, very skewed key space cannot loop for long.
  int64_t NextRank(ReadProcess& p, const std::vector<int64_t>& taken) {
    const auto used = [&](int64_t r) { return std::find(taken.begin(), taken.end(), r) != taken.end(); };
    if (p.zipf == nullptr) {
      while (true) {
        const int64_t r = p.sequential_next;
        p.sequential_next = (p.sequential_next + 1) % p.objects;
        if (!used(r)) return r;
      }
    }
    for (int attempt = 0; attempt < 64; ++attempt) {
      const int64_t r = p.zipf->Sample(rng_);
      if (!used(r)) return r;
    }
    for (int64_t r = 0;; ++r) {
      if (!used(r)) return r;
    }
  }

  const Workload& workload_;
  const int32_t index_;
  Rng rng_;
  std::vector<ClientRef> writers_;
  int64_t put_objects_ = 0;
  int64_t put_size_bytes_ = 0;
  int64_t puts_done_ = 0;
  std::vector<ReadProcess> processes_;
  std::vector<std::unique_ptr<ZipfSampler>> samplers_;
  std::vector<int64_t> ranks_;  // the current read's key ranks
};

absl::StatusOr<std::unique_ptr<ZipfSampler>> MakeSampler(int64_t n, double skew,
                                                         const ExpandOptions& options) {
  HS_ASSIGN_OR_RETURN(ZipfSampler z, ZipfSampler::Make(n, skew, options.zipf_objects_max));
  return std::make_unique<ZipfSampler>(std::move(z));
}

absl::StatusOr<std::unique_ptr<OpStream>> MakeSyntheticStream(const Scenario& s, int32_t index,
                                                              const Rng& rng,
                                                              const ExpandOptions& options) {
  const Workload& w = s.workloads[static_cast<size_t>(index)];
  auto stream = std::make_unique<SyntheticOpStream>(s, index, rng);
  const TimeNs run_end = s.duration_ns;
  switch (w.type) {
    case WorkloadType::kZipf: {
      const ZipfWorkload& z = w.zipf;
      HS_ASSIGN_OR_RETURN(std::unique_ptr<ZipfSampler> sampler,
                          MakeSampler(z.objects, z.skew, options));
      stream->SetPuts(ClientsOf(s, z.writer_domain), z.objects, z.object_size_bytes);
      ReadProcess p;
      p.next_ns = w.start_ns + z.settle_ns;
      p.end_ns = z.duration_ns.has_value() ? std::min(run_end, p.next_ns + *z.duration_ns) : run_end;
      p.mean_gap_ns = MeanGapNs(z.rate_per_s);
      p.first_read_ns = p.next_ns;
      p.drift_step_ns = z.drift_step_ns;
      p.readers.per_domain = z.readers_per_domain;
      for (const Domain& d : z.reader_domains) p.readers.AddDomain(s, d);
      p.zipf = sampler.get();
      p.objects = z.objects;
      p.batch_size = z.batch_size;
      stream->AddProcess(std::move(p));
      stream->OwnSampler(std::move(sampler));
      break;
    }
    case WorkloadType::kCrossDomainReuse: {
      const CrossDomainReuseWorkload& c = w.cross_domain_reuse;
      stream->SetPuts(ClientsOf(s, c.writer_domain), c.objects, c.object_size_bytes);
      ReadProcess p;
      p.next_ns = w.start_ns + c.settle_ns;
      p.end_ns = run_end;
      p.mean_gap_ns = MeanGapNs(c.rate_per_s);
      p.readers.per_domain = c.readers;
      p.readers.AddDomain(s, c.reader_domain);
      p.objects = c.objects;
      p.reads_left = c.objects * c.reads_per_object;
      stream->AddProcess(std::move(p));
      break;
    }
    case WorkloadType::kColdStart: {
      const ColdStartWorkload& c = w.cold_start;
      HS_ASSIGN_OR_RETURN(std::unique_ptr<ZipfSampler> sampler,
                          MakeSampler(c.working_set, c.skew, options));
      stream->SetPuts(ClientsOf(s, c.source_domain), c.working_set, c.object_size_bytes);
      if (c.source_read_rate_per_s > 0) {
        ReadProcess source;
        source.next_ns = w.start_ns + c.settle_ns;
        source.end_ns = run_end;
        source.mean_gap_ns = MeanGapNs(c.source_read_rate_per_s);
        source.readers.per_domain = c.readers;
        source.readers.AddDomain(s, c.source_domain);
        source.zipf = sampler.get();
        source.objects = c.working_set;
        stream->AddProcess(std::move(source));
      }
      ReadProcess joining;
      joining.next_ns = s.FindDomain(c.domain)->join_at_ns;
      joining.end_ns = c.duration_ns.has_value()
                           ? std::min(run_end, joining.next_ns + *c.duration_ns)
                           : run_end;
      joining.mean_gap_ns = MeanGapNs(c.read_rate_per_s);
      joining.readers.per_domain = c.readers;
      joining.readers.AddDomain(s, c.domain);
      joining.zipf = sampler.get();
      joining.objects = c.working_set;
      stream->AddProcess(std::move(joining));
      stream->OwnSampler(std::move(sampler));
      break;
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat("workload \"", w.name, "\" is not synthetic"));
  }
  return std::unique_ptr<OpStream>(std::move(stream));
}

// Replays a list of operations already in time order.
class VectorOpStream final : public OpStream {
 public:
  explicit VectorOpStream(std::vector<SimOp> ops) : ops_(std::move(ops)) {}
  absl::StatusOr<bool> Next(SimOp* op) override {
    if (next_ >= ops_.size()) return false;
    *op = std::move(ops_[next_++]);
    return true;
  }

 private:
  std::vector<SimOp> ops_;
  size_t next_ = 0;
};

SimOpKind ToSimOpKind(ScriptOpKind kind) {
  switch (kind) {
    case ScriptOpKind::kMount: return SimOpKind::kMount;
    case ScriptOpKind::kUnmount: return SimOpKind::kUnmount;
    case ScriptOpKind::kPut: return SimOpKind::kPut;
    case ScriptOpKind::kBatchPut:
      return SimOpKind::kBatchPut;
    case ScriptOpKind::kGet: return SimOpKind::kGet;
    case ScriptOpKind::kBatchGet: return SimOpKind::kBatchGet;
    case ScriptOpKind::kRemove: return SimOpKind::kRemove;
    case ScriptOpKind::kKillWorker: return SimOpKind::kKillWorker;
    case ScriptOpKind::kRestartWorker: return SimOpKind::kRestartWorker;
    case ScriptOpKind::kFailCopy: return SimOpKind::kFailCopy;
    case ScriptOpKind::kDelayCopies: return SimOpKind::kDelayCopies;
    case ScriptOpKind::kCopyStart: return SimOpKind::kCopyStart;
    case ScriptOpKind::kSetKnob: return SimOpKind::kSetKnob;
    case ScriptOpKind::kDrain: return SimOpKind::kDrain;
    case ScriptOpKind::kUndrain: return SimOpKind::kUndrain;
    case ScriptOpKind::kPropose: return SimOpKind::kPropose;
    case ScriptOpKind::kWarmup: return SimOpKind::kWarmup;
    case ScriptOpKind::kAdvanceTime: break;  // not an operation
  }
  HS_CHECK_MSG(false, "advance_time has no SimOp");
  return SimOpKind::kGet;
}

// Scripts are bounded by the loader (script_ops_max), so they expand eagerly.
std::unique_ptr<OpStream> MakeScriptedStream(const Scenario& s, int32_t index) {
  const Workload& w = s.workloads[static_cast<size_t>(index)];
  std::vector<SimOp> ops;
  ops.reserve(w.scripted.ops.size());
  for (const ScriptOp& so : w.scripted.ops) {
    if (so.kind == ScriptOpKind::kAdvanceTime) continue;
    SimOp op;
    op.t_ns = so.t_ns;
    op.kind = ToSimOpKind(so.kind);
    op.workload = index;
    op.tenant = so.tenant;
    op.keys = so.keys;
    op.size_bytes = so.size_bytes;
    op.client = so.client;
    if (!so.client.empty()) {
      const ScenarioHost* h = s.HostOf(so.client);
      HS_CHECK(h != nullptr);  // resolved by the loader
      op.requester_domain = h->domain;
    }
    if (so.kind == ScriptOpKind::kWarmup) op.requester_domain = so.domain;
    op.segment = so.segment;
    op.host = so.host;
    op.count = so.count;
    op.delay_ns = so.delay_ns;
    op.knob_name = so.knob_name;
    op.knob_value = so.knob_value;
    if (so.proposal.has_value()) {
      op.proposal = std::make_shared<const ScriptedProposal>(*so.proposal);
    }
    op.where = so.where;
    ops.push_back(std::move(op));
  }
  return std::make_unique<VectorOpStream>(std::move(ops));
}

// Merges sources by (time, source index); each source is already ordered.
class MergedOpStream final : public OpStream {
 public:
  MergedOpStream(std::vector<std::unique_ptr<OpStream>> sources, TimeNs end_ns, int64_t ops_max)
      : sources_(std::move(sources)), heads_(sources_.size()), end_ns_(end_ns), ops_max_(ops_max) {}

  absl::StatusOr<bool> Next(SimOp* op) override {
    if (!primed_) {
      for (size_t i = 0; i < sources_.size(); ++i) HS_RETURN_IF_ERROR(Refill(i));
      primed_ = true;
    }
    size_t best = heads_.size();
    for (size_t i = 0; i < heads_.size(); ++i) {
      if (heads_[i].has_value() && (best == heads_.size() || heads_[i]->t_ns < heads_[best]->t_ns)) {
        best = i;
      }
    }
    if (best == heads_.size()) return false;
    if (emitted_ >= ops_max_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the scenario generates more than ", ops_max_, " operations"));
    }
    // The caller's spent op goes to the source, which fills it again.
    std::swap(*op, *heads_[best]);
    ++emitted_;
    HS_RETURN_IF_ERROR(Refill(best));
    return true;
  }

 private:
  absl::Status Refill(size_t i) {
    if (!heads_[i].has_value()) heads_[i].emplace();
    HS_ASSIGN_OR_RETURN(bool more, sources_[i]->Next(&*heads_[i]));
    // Sources are time-ordered, so the first op at or past the end ends it.
    if (!more || heads_[i]->t_ns >= end_ns_) heads_[i].reset();
    return absl::OkStatus();
  }

  std::vector<std::unique_ptr<OpStream>> sources_;
  std::vector<std::optional<SimOp>> heads_;
  const TimeNs end_ns_;
  const int64_t ops_max_;
  int64_t emitted_ = 0;
  bool primed_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<OpStream>> MakeWorkloadOpStream(const Scenario& scenario,
                                                               int32_t workload_index,
                                                               const Rng& rng,
                                                               const ExpandOptions& options) {
  if (workload_index < 0 || static_cast<size_t>(workload_index) >= scenario.workloads.size()) {
    return absl::InvalidArgumentError(absl::StrCat("no workload ", workload_index));
  }
  const Workload& w = scenario.workloads[static_cast<size_t>(workload_index)];
  switch (w.type) {
    case WorkloadType::kTrace: {
      TraceLimits limits = options.trace;
      if (w.trace.request_limit.has_value()) {
        limits.request_limit = static_cast<size_t>(*w.trace.request_limit);
      }
      HS_ASSIGN_OR_RETURN(std::vector<TraceRequest> requests,
                          ReadTraceFile(w.trace.resolved_path, limits));
      return MakeTraceOpStream(scenario, workload_index, std::move(requests), rng, options);
    }
    case WorkloadType::kScripted:
      return MakeScriptedStream(scenario, workload_index);
    default:
      return MakeSyntheticStream(scenario, workload_index, rng, options);
  }
}

std::unique_ptr<OpStream> MakeFaultOpStream(const Scenario& scenario) {
  std::vector<SimOp> ops;
  const auto add = [&](TimeNs t, SimOpKind kind, const std::string& host,
                       const std::string& segment) {
    SimOp op;
    op.t_ns = t;
    op.kind = kind;
    op.workload = kFaultSource;
    op.host = host;
    op.segment = segment;
    ops.push_back(std::move(op));
  };
  for (const WorkerCrash& c : scenario.faults.worker_crashes) {
    add(c.at_ns, SimOpKind::kKillWorker, c.host, "");
    if (c.restart_at_ns.has_value()) add(*c.restart_at_ns, SimOpKind::kRestartWorker, c.host, "");
  }
  for (const SegmentUnmount& u : scenario.faults.segment_unmounts) {
    add(u.at_ns, SimOpKind::kUnmount, "", u.segment);
    if (u.remount_at_ns.has_value()) add(*u.remount_at_ns, SimOpKind::kMount, "", u.segment);
  }
  // Stable: equal times keep the document order of the fault lists.
  std::stable_sort(ops.begin(), ops.end(),
                   [](const SimOp& a, const SimOp& b) { return a.t_ns < b.t_ns; });
  return std::make_unique<VectorOpStream>(std::move(ops));
}

absl::StatusOr<std::unique_ptr<OpStream>> MakeScenarioOpStream(const Scenario& scenario,
                                                               const Rng& rng,
                                                               const ExpandOptions& options) {
  std::vector<std::unique_ptr<OpStream>> sources;
  for (size_t i = 0; i < scenario.workloads.size(); ++i) {
    HS_ASSIGN_OR_RETURN(std::unique_ptr<OpStream> s,
                        MakeWorkloadOpStream(scenario, static_cast<int32_t>(i), rng, options));
    sources.push_back(std::move(s));
  }
  sources.push_back(MakeFaultOpStream(scenario));
  return std::unique_ptr<OpStream>(
      new MergedOpStream(std::move(sources), scenario.duration_ns, options.ops_max));
}

absl::StatusOr<std::vector<SimOp>> CollectOps(OpStream& stream, int64_t ops_max) {
  std::vector<SimOp> out;
  SimOp op;
  while (true) {
    HS_ASSIGN_OR_RETURN(bool more, stream.Next(&op));
    if (!more) break;
    if (static_cast<int64_t>(out.size()) >= ops_max) {
      return absl::ResourceExhaustedError(absl::StrCat("more than ", ops_max, " operations"));
    }
    out.push_back(std::move(op));
  }
  return out;
}

}  // namespace heatsink::sim
