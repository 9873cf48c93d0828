// Simulation, operations: the scenario's operations and puts through the
// control plane and the network, scripted operations, and the copies and
// reads the core reports. Reads are in simulation_reads.cc.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "sim/internal/simulation.h"
#include "sim/report_format.h"

namespace heatsink::sim::runner_internal {

// --------------------------------------------------------------- operations

void Simulation::PumpNext() {
  absl::StatusOr<bool> more = ops_->Next(&next_op_);
  if (!more.ok()) {
    Fail(more.status());
    return;
  }
  if (!*more) return;
  env_.engine().ScheduleAt(std::max(next_op_.t_ns, env_.NowNs()), [this] {
    // Executed in place: PumpNext hands the spent op back to the stream,
    // which reuses its storage for the next one.
    SimOp& op = next_op_;
    if (options_.observer != nullptr) options_.observer->OnOp(env_.NowNs(), op);
    if (absl::Status st = Execute(op); !st.ok()) {
      Fail(st);
      return;
    }
    PumpNext();
  });
}

absl::Status Simulation::Execute(SimOp& op) {
  switch (op.kind) {
    case SimOpKind::kPut:
      IssuePut(op, measurements_.RequestRowFor(op));
      return absl::OkStatus();
    case SimOpKind::kBatchPut:
      IssueBatchPut(op, measurements_.RequestRowFor(op));
      return absl::OkStatus();
    case SimOpKind::kGet:
    case SimOpKind::kBatchGet:
      IssueRead(op, measurements_.RequestRowFor(op));
      return absl::OkStatus();
    case SimOpKind::kRemove: {
      const ClientRt& client = cluster_.ClientNamed(op.client);
      RemoveRequest req;
      req.name = ObjectName{op.tenant, op.keys.front()};
      cluster_.host(client.host).master_client->Remove(req, [this](absl::Status st) {
        measurements_.CountMetric(st.ok() ? "sim_removes_total" : "sim_removes_failed_total");
      });
      return absl::OkStatus();
    }
    case SimOpKind::kMount:
      return MountOrUnmount(op.segment, true);
    case SimOpKind::kUnmount:
      return MountOrUnmount(op.segment, false);
    case SimOpKind::kKillWorker:
      return KillWorker(op.host);
    case SimOpKind::kRestartWorker:
      return RestartWorker(op.host);
    case SimOpKind::kFailCopy:
      if (op.keys.empty()) {
        fail_any_copies_ += op.count;
      } else {
        fail_copies_by_key_[ObjectName{op.tenant, op.keys.front()}] += op.count;
      }
      return absl::OkStatus();
    case SimOpKind::kDelayCopies:
      cluster_.HostNamed(op.host).copy_delay_ns = op.delay_ns;
      return absl::OkStatus();
    case SimOpKind::kCopyStart:
      return ScriptedCopyStart(op);
    case SimOpKind::kPropose:
      return ScriptedPropose(op);
    case SimOpKind::kWarmup: {
      // An operator's warmup request for a domain (internal control plane,
      // like propose). Refusals (warmup disabled, mode off, master down)
      // are counted.
      absl::StatusOr<WarmupRequestResult> r = master_up()
                                                  ? replicated_->RequestWarmup(op.requester_domain)
                                                  : MasterDownError("master is down");
      measurements_.CountMetric(r.ok() ? "sim_warmups_requested_total"
                                       : "sim_warmups_refused_total");
      if (options_.observer != nullptr) {
        options_.observer->OnNote(env_.NowNs(),
                                  r.ok() ? absl::StrCat("warmup of ", op.requester_domain, ": ",
                                                        r->candidates, " candidates")
                                         : absl::StrCat("warmup of ", op.requester_domain,
                                                        " refused: ", r.status().message()));
      }
      return absl::OkStatus();
    }
    case SimOpKind::kDrain:
    case SimOpKind::kUndrain: {
      // An operator command to the master (not a worker RPC): replicas on a
      // drained segment stay readable, nothing new is placed there and it
      // sources no dynamic copy.
      const absl::Status st = master_up() ? replicated_->SetSegmentAllocatable(
                                                ClientId(), cluster_.SegmentNamed(op.segment),
                                                op.kind == SimOpKind::kUndrain)
                                          : MasterDownError("master is down");
      measurements_.CountMetric(st.ok() ? "sim_drains_total" : "sim_drains_failed_total");
      return absl::OkStatus();
    }
    case SimOpKind::kSetKnob:
      return SetKnob(op);
  }
  return absl::OkStatus();
}

void Simulation::IssuePut(const SimOp& op, std::optional<size_t> request_row) {
  const ClientRt& client = cluster_.ClientNamed(op.client);
  HostRt& host = cluster_.host(client.host);
  PutStartRequest req;
  req.name = ObjectName{op.tenant, op.keys.front()};
  req.size_bytes = static_cast<uint64_t>(op.size_bytes);
  req.replica_num = 1;
  // Mooncake's client prefers the segment of its own host.
  for (const MountSegmentRequest& s : host.segments) req.preferred_segments.push_back(s.segment_id);
  uint32_t put = 0;
  if (free_puts_.empty()) {
    put = static_cast<uint32_t>(puts_.size());
    puts_.Grow();
  } else {
    put = free_puts_.back();
    free_puts_.pop_back();
  }
  PutRt& p = puts_[put];
  p.name = req.name;
  p.writer = client.id;
  p.writer_host = client.host;
  p.target = -1;
  p.size = req.size_bytes;
  p.version = 0;
  p.request_row = request_row;
  puts_in_flight_.insert(&p.name);
  host.master_client->PutStart(p.writer, req,
                               [this, put](absl::StatusOr<PutStartResponse> started) {
                                 PutStarted(put, std::move(started));
                               });
}

void Simulation::PutStarted(uint32_t put, absl::StatusOr<PutStartResponse> started) {
  PutRt& p = puts_[put];
  if (!started.ok() || started->replicas.empty()) {
    measurements_.CountMetric("sim_puts_failed_total");
    FinishPut(put);
    return;
  }
  p.version = started->version;
  const std::optional<int> target = cluster_.HostOfSegment(started->replicas.front().segment_id);
  HS_CHECK(target.has_value());
  p.target = *target;
  FlowSpec flow;
  flow.src_host = p.writer_host;
  flow.dst_host = p.target;
  flow.bytes = static_cast<int64_t>(p.size);
  absl::StatusOr<FlowId> id = network_->StartFlow(
      flow, [this, put](absl::Status moved) { PutMoved(put, std::move(moved)); });
  if (!id.ok()) RevokePut(put);
}

void Simulation::PutMoved(uint32_t put, absl::Status moved) {
  if (!moved.ok()) {
    RevokePut(put);
    return;
  }
  const PutRt& p = puts_[put];
  SimMasterClient* mc = cluster_.host(p.writer_host).master_client.get();
  mc->PutEnd(p.writer, PutEndRequest{p.name, p.version},
             [this, put](absl::Status ended) { PutEnded(put, std::move(ended)); });
}

void Simulation::RevokePut(uint32_t put) {
  const PutRt& p = puts_[put];
  measurements_.CountMetric("sim_puts_failed_total");
  SimMasterClient* mc = cluster_.host(p.writer_host).master_client.get();
  mc->PutRevoke(p.writer, PutRevokeRequest{p.name, p.version}, [](absl::Status) {});
  FinishPut(put);
}

void Simulation::PutEnded(uint32_t put, absl::Status ended) {
  const PutRt& p = puts_[put];
  if (ended.ok()) {
    measurements_.CountMetric("sim_puts_total");
    HostRt& h = cluster_.host(p.target);
    if (h.numa != nullptr) h.numa->Store(p.name, p.size);
  } else {
    measurements_.CountMetric("sim_puts_failed_total");
  }
  FinishPut(put);
}

namespace {
// A pool of put records at least this large is given back once empty.
constexpr size_t kPutPoolKeepMax = size_t{1} << 14;
}  // namespace

void Simulation::FinishPut(uint32_t put) {
  // EndPut may start reads that wait for this put; they never touch puts_.
  EndPut(puts_[put].name);
  measurements_.FinishRequest(puts_[put].request_row, env_.NowNs());
  free_puts_.push_back(put);
  if (free_puts_.size() == puts_.size() && puts_.size() > kPutPoolKeepMax) {
    // No name in puts_in_flight_ points into the records: each went when
    // its put ended. (Not `= {}`: assigning an empty list keeps a vector's
    // capacity.)
    puts_.CutTo(0);
    free_puts_ = std::vector<uint32_t>();
  }
}

void Simulation::IssueBatchPut(const SimOp& op, std::optional<size_t> request_row) {
  const ClientRt& client = cluster_.ClientNamed(op.client);
  HostRt& host = cluster_.host(client.host);
  // More keys than the master takes in one call go in several batches.
  const size_t chunk = static_cast<size_t>(std::max<int64_t>(knobs_.master.batch_keys_max, 1));
  for (size_t first = 0; first < op.keys.size(); first += chunk) {
    const size_t last = std::min(op.keys.size(), first + chunk);
    auto batch = std::make_shared<PutBatchRt>();
    batch->writer = client.id;
    batch->writer_host = client.host;
    batch->request_row = request_row;
    batch->size = static_cast<uint64_t>(op.size_bytes);
    batch->names.reserve(last - first);
    for (size_t k = first; k < last; ++k) {
      batch->names.push_back(ObjectName{op.tenant, op.keys[k]});
      puts_in_flight_.insert(&batch->names.back());
    }
    StartBatchPut(host, std::move(batch));
  }
}

void Simulation::StartBatchPut(const HostRt& host, PutBatchHandle batch) {
  BatchPutStartRequest req;
  req.names = batch->names;
  req.sizes_bytes.assign(batch->names.size(), batch->size);
  req.replica_num = 1;
  for (const MountSegmentRequest& s : host.segments) req.preferred_segments.push_back(s.segment_id);
  const ClientId writer = batch->writer;
  host.master_client->BatchPutStart(
      writer, std::move(req),
      [this, batch](absl::StatusOr<BatchPutStartResponse> r) { BatchPutStarted(batch, r); });
}

void Simulation::BatchPutStarted(const PutBatchHandle& batch,
                                 const absl::StatusOr<BatchPutStartResponse>& r) {
  const size_t n = batch->names.size();
  batch->versions.assign(n, 0);
  batch->targets.assign(n, -1);
  batch->landed.assign(n, false);
  // The keys bound for one host travel as one flow group (sim/network.h,
  // "Flow groups"): same source, destination and size, started together.
  // Groups start in the order of their first key.
  std::vector<std::pair<int, int64_t>> groups;  // (target host, keys)
  for (size_t i = 0; i < n; ++i) {
    const absl::StatusOr<PutStartResponse>* started = r.ok() ? &r->results[i] : nullptr;
    if (started == nullptr || !started->ok() || (*started)->replicas.empty()) {
      // Nothing to end or revoke: the key's put failed here.
      measurements_.CountMetric("sim_puts_failed_total");
      EndPut(batch->names[i]);
      continue;
    }
    batch->versions[i] = (*started)->version;
    const std::optional<int> target =
        cluster_.HostOfSegment((*started)->replicas.front().segment_id);
    HS_CHECK(target.has_value());
    batch->targets[i] = *target;
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const auto& g) { return g.first == *target; });
    if (group == groups.end()) {
      groups.emplace_back(*target, 1);
    } else {
      ++group->second;
    }
  }
  batch->flows_outstanding = 1;  // until every group below is started
  for (const auto& [target, keys] : groups) {
    FlowSpec flow;
    flow.src_host = batch->writer_host;
    flow.dst_host = target;
    flow.bytes = static_cast<int64_t>(batch->size);
    flow.count = keys;
    ++batch->flows_outstanding;
    absl::StatusOr<FlowId> id =
        network_->StartFlow(flow, [this, batch, target = target](absl::Status moved) {
          for (size_t i = 0; i < batch->names.size(); ++i) {
            if (batch->targets[i] == target) batch->landed[i] = moved.ok();
          }
          if (--batch->flows_outstanding == 0) EndBatchPut(batch);
        });
    if (!id.ok()) --batch->flows_outstanding;  // revoked with the batch
  }
  if (--batch->flows_outstanding == 0) EndBatchPut(batch);
}

void Simulation::EndBatchPut(const PutBatchHandle& batch) {
  SimMasterClient* mc = cluster_.host(batch->writer_host).master_client.get();
  BatchPutEndRequest end;
  BatchPutRevokeRequest revoke;
  std::vector<size_t> ending;
  for (size_t i = 0; i < batch->names.size(); ++i) {
    if (batch->targets[i] < 0) continue;  // its PutStart failed
    if (batch->landed[i]) {
      end.puts.push_back(PutEndRequest{batch->names[i], batch->versions[i]});
      ending.push_back(i);
      continue;
    }
    measurements_.CountMetric("sim_puts_failed_total");
    revoke.puts.push_back(PutRevokeRequest{batch->names[i], batch->versions[i]});
    EndPut(batch->names[i]);
  }
  if (!revoke.puts.empty()) {
    mc->BatchPutRevoke(batch->writer, std::move(revoke), [](absl::StatusOr<BatchPutResponse>) {});
  }
  if (ending.empty()) {
    measurements_.FinishRequest(batch->request_row, env_.NowNs());
    return;
  }
  mc->BatchPutEnd(batch->writer, std::move(end),
                  [this, batch, ending = std::move(ending)](absl::StatusOr<BatchPutResponse> r) {
                    for (size_t j = 0; j < ending.size(); ++j) {
                      const size_t i = ending[j];
                      if (r.ok() && r->results[j].ok()) {
                        measurements_.CountMetric("sim_puts_total");
                        HostRt& h = cluster_.host(batch->targets[i]);
                        if (h.numa != nullptr) h.numa->Store(batch->names[i], batch->size);
                      } else {
                        measurements_.CountMetric("sim_puts_failed_total");
                      }
                      EndPut(batch->names[i]);
                    }
                    measurements_.FinishRequest(batch->request_row, env_.NowNs());
                  });
}

absl::Status Simulation::KillWorker(const HostId& name) {
  HostRt& host = cluster_.HostNamed(name);
  if (!host.worker_up) return absl::OkStatus();
  measurements_.CountMetric("sim_worker_crashes_total");
  host.worker.reset();
  host.worker_up = false;
  for (const MountSegmentRequest& s : host.segments) sim_mover_->FailCopiesOfSegment(s.segment_id);
  network_->FailFlowsOfHost(
      host.index, absl::UnavailableError(absl::StrCat("store worker on ", name, " crashed")));
  return absl::OkStatus();
}

absl::Status Simulation::RestartWorker(const HostId& name) {
  HostRt& host = cluster_.HostNamed(name);
  if (host.worker_up) return absl::OkStatus();
  measurements_.CountMetric("sim_worker_restarts_total");
  // The crashed worker's memory is gone: like a restarted heatsink-store
  // (StoreNode::ReleaseStaleSegments), the worker first unmounts the
  // segments the master still lists for it, dropping their replicas, then
  // mounts them afresh. A master that is down or recovering learns the
  // empty segments from the worker's registration and manifest instead.
  if (master_up() && !master().Recovering()) {
    for (const MountSegmentRequest& s : host.segments) {
      (void)replicated_->UnmountSegment(host.worker_id, s.segment_id);  // NOT_FOUND once reaped
    }
  }
  StartWorker(host);
  return absl::OkStatus();
}

absl::Status Simulation::MountOrUnmount(const std::string& segment, bool mount) {
  const SegmentId id = cluster_.SegmentNamed(segment);
  SegmentRt& seg = cluster_.segment(id);
  HostRt& host = cluster_.host(seg.host);
  if (mount) {
    const MountSegmentRequest* req = nullptr;
    for (const MountSegmentRequest& s : host.segments) {
      if (s.segment_id == id) req = &s;
    }
    HS_CHECK(req != nullptr);
    seg.mounted = true;
    host.master_client->MountSegment(host.worker_id, *req, [this](absl::Status st) {
      measurements_.CountMetric(st.ok() ? "sim_mounts_total" : "sim_mounts_failed_total");
    });
  } else {
    seg.mounted = false;
    sim_mover_->FailCopiesOfSegment(id);
    host.master_client->UnmountSegment(host.worker_id, id, [this](absl::Status st) {
      measurements_.CountMetric(st.ok() ? "sim_unmounts_total" : "sim_unmounts_failed_total");
    });
  }
  return absl::OkStatus();
}

absl::Status Simulation::SetKnob(const SimOp& op) {
  if (op.knob_name != "dynamic_replication_mode") {
    return absl::FailedPreconditionError(absl::StrCat(
        op.where, ": set_knob ", op.knob_name,
        ": only dynamic_replication_mode can change during a run; the core's other knobs are "
        "fixed when the master starts"));
  }
  ReplicationKnobs knobs = knobs_.replication;
  absl::Status st = ReplicationKnobs::Registry().Set(knobs, op.knob_name, op.knob_value);
  if (st.ok()) st = knobs.Validate();
  if (!st.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(op.where, ": set_knob ", op.knob_name, ": ", st.message()));
  }
  // A master that is down starts in the new mode (its configuration).
  mode_ = knobs.dynamic_replication_mode;
  if (master_up()) replicated_->SetDynamicReplicationMode(mode_);
  measurements_.CountMetric("sim_mode_changes_total");
  Note(absl::StrCat("dynamic_replication_mode set to ", op.knob_value));
  return absl::OkStatus();
}

absl::Status Simulation::ScriptedCopyStart(const SimOp& op) {
  HostRt& host = cluster_.HostNamed(op.host);
  const ObjectName name{op.tenant, op.keys.front()};
  if (!master_up()) {
    measurements_.CountMetric("sim_scripted_copy_starts_without_lease_total");
    return absl::OkStatus();
  }
  const std::vector<PendingActionView> pending = replicated_->replication().PendingActions();
  const PendingActionView* found = nullptr;
  for (const PendingActionView& p : pending) {
    if (p.lease.name == name) {
      found = &p;
      break;
    }
  }
  if (found == nullptr) {
    measurements_.CountMetric("sim_scripted_copy_starts_without_lease_total");
    return absl::OkStatus();
  }
  CopyStartRequest fence;
  fence.task_id = found->lease.task_id;
  fence.version = found->lease.version;
  fence.lease_id = found->lease.lease_id;
  host.master_client->DynamicReplicaCopyStart(
      host.worker_id, fence, [this](absl::StatusOr<CopyStartResponse> r) {
        measurements_.CountMetric(r.ok() ? "sim_scripted_copy_starts_accepted_total"
                                         : "sim_scripted_copy_starts_rejected_total");
      });
  return absl::OkStatus();
}

// A burst of proposals through the master's internal control plane (a direct
// call, like drain: proposals are not a worker RPC). Every call carries the
// same content; the version and size the proposer "saw" default to the
// object's current ones, read without touching its heat or lease.
absl::Status Simulation::ScriptedPropose(const SimOp& op) {
  HS_CHECK(op.proposal != nullptr);
  const ScriptedProposal& spec = *op.proposal;
  if (!master_up()) {
    // No master to take the burst: every call fails.
    measurements_.CountMetric("sim_proposals_rejected_total", spec.count);
    return absl::OkStatus();
  }
  ReplicaActionProposal proposal;
  proposal.name = ObjectName{op.tenant, op.keys.front()};
  proposal.requester_domain = spec.requester_domain;
  proposal.target_domain = spec.target_domain;
  proposal.observed_version = static_cast<Version>(spec.observed_version);
  proposal.expected_size_bytes = static_cast<uint64_t>(spec.expected_size_bytes);
  if (proposal.observed_version == 0 || proposal.expected_size_bytes == 0) {
    absl::StatusOr<ObjectView> view = replicated_->master().GetObjectView(proposal.name);
    if (view.ok()) {
      if (proposal.observed_version == 0) proposal.observed_version = view->version;
      if (proposal.expected_size_bytes == 0) proposal.expected_size_bytes = view->size_bytes;
    }
  }
  const TimeNs now = env_.NowNs();
  proposal.expiration_ns = now + spec.expires_in_ns;
  for (int64_t i = 0; i < spec.count; ++i) {
    proposal.proposal_id = ProposalId(
        static_cast<uint64_t>(spec.same_id ? spec.first_proposal_id : spec.first_proposal_id + i));
    absl::StatusOr<ReplicaActionLease> result = replicated_->SubmitReplicaActionProposal(proposal);
    measurements_.CountMetric(result.ok() ? "sim_proposals_accepted_total"
                                          : "sim_proposals_rejected_total");
    if (options_.observer != nullptr) {
      ProposalObservation seen;
      seen.t_ns = now;
      seen.burst_index = i;
      seen.burst_size = spec.count;
      seen.proposal = proposal;
      seen.result = std::move(result);
      options_.observer->OnProposal(seen);
    }
  }
  return absl::OkStatus();
}

// ------------------------------------------------------- copies and observers

void Simulation::StartCopy(const CopyRange& range, absl::AnyInvocable<void(absl::Status) &&> done) {
  bool doomed = false;
  if (fail_any_copies_ > 0) {
    --fail_any_copies_;
    doomed = true;
  } else if (auto it = fail_copies_by_key_.find(range.object); it != fail_copies_by_key_.end()) {
    doomed = true;
    if (--it->second == 0) fail_copies_by_key_.erase(it);
  }
  const std::optional<int> src = cluster_.HostOfSegment(range.source_segment);
  const std::optional<int> dst = cluster_.HostOfSegment(range.target_segment);
  const DurationNs delay = src.has_value() ? cluster_.host(*src).copy_delay_ns : 0;
  const uint64_t copy = recovery_.CopyStarted(range, /*track=*/master_crashes_);
  sim_mover_->StartCopy(range, [this, range, doomed, src, dst, delay, copy,
                                done = std::move(done)](absl::Status status) mutable {
    if (status.ok() && doomed) {
      status = absl::UnavailableError("copy failed by the scenario (fail_copy)");
    }
    if (status.ok()) {
      const bool cross_domain = src.has_value() && dst.has_value() &&
                                network_->DistanceBetween(*src, *dst) == Distance::kCrossDomain;
      measurements_.CountCopyCompleted(env_.NowNs(), range.size_bytes, cross_domain);
      if (dst.has_value()) {
        HostRt& h = cluster_.host(*dst);
        if (h.numa != nullptr) {
          h.numa->Store(range.object, range.size_bytes);
          // The copy carries its source's decayed scores (score inheritance).
          if (src.has_value()) {
            const HostRt& from = cluster_.host(*src);
            if (from.numa != nullptr) {
              h.numa->InheritScores(range.object, range.size_bytes, *from.numa);
            }
          }
        }
      }
    } else {
      measurements_.CountCopyFailed();
    }
    if (delay > 0) {
      env_.engine().ScheduleAfter(delay, [this, copy, done = std::move(done), status]() mutable {
        recovery_.CopyEnded(copy);
        std::move(done)(status);
      });
    } else {
      recovery_.CopyEnded(copy);
      std::move(done)(status);
    }
  });
}

void Simulation::OnKeyRead(const ReadObservation& read) {
  if (!reads_file_.open()) return;
  std::string line = ReadLineHead(read.t_ns, read.tenant, read.key, read.requester_domain);
  if (const ClientRt* client = cluster_.FindClient(read.requester); client != nullptr) {
    AppendJsonString(&line, client->full_name);
  } else {
    line += "null";
  }
  line += "}";
  reads_file_.Append(line);
}

void Simulation::OnReplicaRemoved(const ReplicaRemoval& removal) {
  recovery_.OnReplicaRemoved(removal.replica);
  if (removal.replica.status != ReplicaStatus::kComplete) return;
  const std::optional<int> host = cluster_.HostOfSegment(removal.replica.segment_id);
  if (host.has_value()) {
    HostRt& h = cluster_.host(*host);
    if (h.numa != nullptr) h.numa->Remove(removal.name, removal.replica.size_bytes);
  }
}

}  // namespace heatsink::sim::runner_internal
