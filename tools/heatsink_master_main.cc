// heatsink-master: the master process. Serves the heatsink.v1.Master gRPC
// service over a ReplicatedMaster (MasterService + dynamic hot replication),
// runs its background work (admission, eviction, lease and task reaping) on a
// thread-pool Executor with the steady clock, optionally writes decision
// records as JSONL and serves /metrics in the Prometheus text format.
// SIGINT/SIGTERM stop it cleanly: the server drains running calls, then the
// background work stops. SIGHUP reads --config and --set again and applies
// dynamic_replication_mode at once (the RFC's rollout: off -> observe ->
// enforce without a restart); other knobs apply only at start. With TLS,
// SIGHUP also reads the PEM files again (certificate rotation).
//
// With --etcd the master campaigns for leadership (docs/runtime.md,
// "Failover with etcd"): a standby waits, polling the leader key, and serves
// nothing; the winner serves while its lease is held and publishes
// --advertise under PREFIX/master/leader. A leader that loses its lease
// refuses every call at once and exits with kExitLostLeadership (3): its
// memory belongs to a term that ended, and a supervisor restarting it makes
// it a standby again.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/status_macros.h"
#include "core/master/master_knobs.h"
#include "core/replication/replicated_master.h"
#include "core/replication/replication_knobs.h"
#include "runtime/env/runtime_env.h"
#include "runtime/env/steady_clock.h"
#include "runtime/etcd/etcd_client.h"
#include "runtime/etcd/leader_election.h"
#include "runtime/master/jsonl_decision_sink.h"
#include "runtime/rpc/master_server.h"
#include "runtime/rpc/metrics_endpoint.h"
#include "runtime/rpc/tenant_bindings.h"
#include "tools/runtime_flags.h"

namespace heatsink {
namespace {

// Exit code of a leader that lost its etcd lease (a supervisor restarts it).
constexpr int kExitLostLeadership = 3;
// restart_grace_ms of a leader elected through etcd when the knob is 0: a
// new leader always starts empty and waits this long for the stores'
// manifests (less once restart_expected_stores reported).
constexpr int64_t kEtcdRestartGraceMsDefault = 10'000;
// How often a standby reads the leader key.
constexpr int64_t kStandbyPollIntervalMs = 200;

struct Flags {
  std::string listen = "127.0.0.1:50051";
  std::string etcd;
  std::string advertise;
  int64_t etcd_lease_ttl_sec = 5;
  int64_t etcd_lease_margin_ms = 500;
  std::string metrics_listen;
  std::string config;
  std::vector<std::string> settings;
  std::string decisions;
  std::string address_file;
  int threads = 4;
  uint64_t seed = 1;
  bool list_knobs = false;
  std::vector<std::string> tenants;
  runtime::RpcOptions rpc;
};

std::vector<MetricFamily> CollectMetrics(ReplicatedMaster& master,
                                         const runtime::MasterServer& server,
                                         const runtime::JsonlDecisionSink* sink,
                                         int64_t leader_epoch) {
  std::vector<MetricFamily> out = master.SyncMetrics().Snapshot();
  const MasterStats s = master.master().Stats();
  const MetricType kC = MetricType::kCounter;
  const MetricType kG = MetricType::kGauge;
  using runtime::AppendScalar;
  AppendScalar(out, "master_objects", "Objects the master tracks.", kG, s.objects);
  AppendScalar(out, "master_segments", "Mounted segments.", kG, s.segments);
  AppendScalar(out, "master_clients", "Registered clients.", kG, s.clients);
  AppendScalar(out, "master_tasks_pending", "Copy tasks not yet fetched.", kG, s.tasks_pending);
  AppendScalar(out, "master_tasks_processing", "Copy tasks fetched, not finished.", kG,
               s.tasks_processing);
  AppendScalar(out, "master_copy_bytes_in_flight",
               "Bytes of fetched copies not yet ended or revoked (copy pacing).", kG,
               s.copy_bytes_in_flight);
  AppendScalar(out, "master_copy_fetches_deferred_total",
               "Pending copy tasks a FetchTasks held back for the copy budgets.", kC,
               s.copy_fetches_deferred_total);
  AppendScalar(out, "master_capacity_bytes", "Capacity of mounted segments.", kG,
               static_cast<int64_t>(s.capacity_bytes));
  AppendScalar(out, "master_used_bytes", "Bytes used in mounted segments.", kG,
               static_cast<int64_t>(s.used_bytes));
  AppendScalar(out, "master_reserved_bytes", "Bytes reserved for copies in flight.", kG,
               static_cast<int64_t>(s.reserved_bytes));
  AppendScalar(out, "master_puts_completed_total", "Puts ended.", kC, s.puts_completed_total);
  AppendScalar(out, "master_puts_revoked_total", "Puts revoked.", kC, s.puts_revoked_total);
  AppendScalar(out, "master_puts_discarded_total", "Puts discarded at timeout.", kC,
               s.puts_discarded_total);
  AppendScalar(out, "master_eviction_passes_total", "Eviction passes.", kC,
               s.eviction_passes_total);
  AppendScalar(out, "master_evicted_objects_total", "Objects evicted.", kC,
               s.evicted_objects_total);
  AppendScalar(out, "master_evicted_bytes_total", "Bytes evicted.", kC,
               static_cast<int64_t>(s.evicted_bytes_total));
  AppendScalar(out, "master_copy_tasks_created_total", "Copy tasks created.", kC,
               s.copy_tasks_created_total);
  AppendScalar(out, "master_copies_completed_total", "Copies ended.", kC, s.copies_completed_total);
  AppendScalar(out, "master_copies_revoked_total", "Copies revoked.", kC, s.copies_revoked_total);
  AppendScalar(out, "master_tasks_timed_out_total", "Tasks reaped at timeout.", kC,
               s.tasks_timed_out_total);
  AppendScalar(out, "master_clients_reaped_total", "Clients reaped for missed heartbeats.", kC,
               s.clients_reaped_total);
  AppendScalar(out, "master_recovering",
               "1 while a restarted master waits for the stores' manifests (restart_grace_ms).", kG,
               s.recovering ? 1 : 0);
  AppendScalar(out, "master_manifest_entries_accepted_total",
               "Manifest entries taken back as replicas after a restart.", kC,
               s.manifest_entries_accepted_total);
  AppendScalar(out, "master_manifest_entries_discarded_total",
               "Manifest entries discarded: in flight, or an older version.", kC,
               s.manifest_entries_discarded_total);
  AppendScalar(out, "master_manifest_entries_rejected_total",
               "Manifest entries rejected: invalid, overlapping, beyond the segment.", kC,
               s.manifest_entries_rejected_total);
  AppendScalar(out, "master_manifest_changes_pending",
               "Manifest changes the stores have not acknowledged yet.", kG,
               s.manifest_changes_pending);
  AppendScalar(out, "dynamic_replication_mode",
               "The live dynamic_replication_mode: 0 off, 1 observe, 2 enforce.", kG,
               static_cast<int64_t>(master.dynamic_replication_mode()));
  AppendScalar(out, "master_leader_epoch",
               "The etcd leader epoch this master serves under (0 without --etcd).", kG,
               leader_epoch);
  const runtime::MasterServerStats rpc = server.stats();
  AppendScalar(out, "rpc_calls_total", "Control-plane calls served.", kC, rpc.calls_total);
  AppendScalar(out, "rpc_calls_failed_total", "Control-plane calls answered with an error.", kC,
               rpc.calls_failed_total);
  AppendScalar(out, "rpc_calls_unauthenticated_total",
               "Calls rejected for a missing or malformed client identity.", kC,
               rpc.calls_unauthenticated_total);
  AppendScalar(out, "rpc_get_replica_list_calls_total", "GetReplicaList calls served.", kC,
               rpc.get_replica_list_calls_total);
  AppendScalar(out, "rpc_calls_permission_denied_total",
               "Calls refused for naming another tenant or another client's resources.", kC,
               rpc.calls_permission_denied_total);
  AppendScalar(out, "rpc_calls_identity_mismatch_total",
               "Calls refused because the metadata client id differs from the certificate's.", kC,
               rpc.calls_identity_mismatch_total);
  AppendScalar(out, "rpc_calls_overloaded_total",
               "Puts, reads and removes refused with RESOURCE_EXHAUSTED above "
               "--calls-in-flight-max.",
               kC, rpc.calls_overloaded_total);
  AppendScalar(out, "rpc_data_calls_in_flight", "Puts, reads and removes in flight now.", kG,
               rpc.data_calls_in_flight);
  if (sink != nullptr) {
    AppendScalar(out, "decision_log_lines_total", "Decision records written.", kC,
                 sink->lines_written());
    AppendScalar(out, "decision_log_write_errors_total", "Decision records lost to write errors.",
                 kC, sink->write_errors());
  }
  return out;
}

// The knobs from --config, then --set on top, validated.
absl::Status LoadKnobs(const Flags& flags, MasterKnobs* master_knobs,
                       ReplicationKnobs* replication_knobs) {
  *master_knobs = MasterKnobs();
  *replication_knobs = ReplicationKnobs();
  const std::vector<tools::KnobSetter> registries = {
      [&](absl::string_view n, absl::string_view v) {
        return MasterKnobs::Registry().Set(*master_knobs, n, v);
      },
      [&](absl::string_view n, absl::string_view v) {
        return ReplicationKnobs::Registry().Set(*replication_knobs, n, v);
      },
  };
  if (!flags.config.empty()) HS_RETURN_IF_ERROR(tools::ApplyConfigFile(flags.config, registries));
  for (const std::string& setting : flags.settings) {
    HS_RETURN_IF_ERROR(tools::ApplySetting(setting, "--set", registries));
  }
  HS_RETURN_IF_ERROR(master_knobs->Validate());
  return replication_knobs->Validate();
}

// SIGHUP: reads --config and --set again. dynamic_replication_mode takes
// effect at once (the RFC's rollout, DynamicReplication::SetMode); every other
// knob applies only at start, so a change to one is reported and ignored. A
// config that does not load changes nothing.
void Reload(const Flags& flags, const MasterKnobs& started_master,
            const ReplicationKnobs& started_replication, ReplicatedMaster& master) {
  MasterKnobs master_knobs;
  ReplicationKnobs replication_knobs;
  if (absl::Status st = LoadKnobs(flags, &master_knobs, &replication_knobs); !st.ok()) {
    std::printf("heatsink-master: reload (SIGHUP): %s; nothing changed\n",
                std::string(st.message()).c_str());
    std::fflush(stdout);
    return;
  }
  std::vector<std::string> ignored;
  const auto differing = [&ignored](const auto& now, const auto& then) {
    for (size_t i = 0; i < now.size() && i < then.size(); ++i) {
      if (now[i].first != "dynamic_replication_mode" && now[i].second != then[i].second) {
        ignored.push_back(now[i].first);
      }
    }
  };
  differing(MasterKnobs::Registry().Dump(master_knobs),
            MasterKnobs::Registry().Dump(started_master));
  differing(ReplicationKnobs::Registry().Dump(replication_knobs),
            ReplicationKnobs::Registry().Dump(started_replication));
  if (!ignored.empty()) {
    std::printf(
        "heatsink-master: reload (SIGHUP): %s changed, but only "
        "dynamic_replication_mode applies while running; ignored until restart\n",
        absl::StrJoin(ignored, ", ").c_str());
  }
  const DynamicReplicationMode before = master.dynamic_replication_mode();
  master.SetDynamicReplicationMode(replication_knobs.dynamic_replication_mode);
  std::printf(
      "heatsink-master: reload (SIGHUP): dynamic_replication_mode %s -> %s\n",
      std::string(DynamicReplicationModeName(before)).c_str(),
      std::string(DynamicReplicationModeName(replication_knobs.dynamic_replication_mode)).c_str());
  std::fflush(stdout);
}

// SIGHUP with TLS: reads --tls-cert, --tls-key and --tls-client-ca again;
// new connections use them within a second, open ones keep theirs. Files
// that do not load change nothing.
void ReloadTls(const Flags& flags, runtime::MasterServer& server) {
  const absl::Status reloaded = server.ReloadTls();
  if (reloaded.ok()) {
    std::printf(
        "heatsink-master: reload (SIGHUP): TLS certificate %s%s%s read again; new connections "
        "use it within %us\n",
        flags.rpc.tls.cert_path.c_str(),
        flags.rpc.tls.client_ca_path.empty() ? "" : " and client CA ",
        flags.rpc.tls.client_ca_path.c_str(), runtime::ServerTlsReloader::kRefreshIntervalSeconds);
  } else {
    std::printf("heatsink-master: reload (SIGHUP): TLS files: %s; the previous ones stay\n",
                std::string(reloaded.message()).c_str());
  }
  std::fflush(stdout);
}

// --etcd, --advertise and the lease flags: INVALID_ARGUMENT naming the flag.
absl::Status CheckEtcdFlags(const Flags& flags) {
  if (flags.etcd.empty()) {
    if (!flags.advertise.empty()) {
      return absl::InvalidArgumentError("--advertise: only with --etcd");
    }
    return absl::OkStatus();
  }
  absl::StatusOr<runtime::EtcdTarget> target =
      runtime::ParseEtcdTarget(flags.etcd, /*scheme_optional=*/true);
  if (!target.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--etcd: ", target.status().message()));
  }
  if (flags.advertise.empty()) {
    return absl::InvalidArgumentError(
        "--advertise: required with --etcd (the host:port stores and clients call)");
  }
  if (runtime::IsEtcdAddress(flags.advertise) ||
      !runtime::ParseEtcdTarget(flags.advertise, /*scheme_optional=*/true).ok() ||
      flags.advertise.find(',') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--advertise: '", flags.advertise, "' is not host:port"));
  }
  if (flags.etcd_lease_ttl_sec < 1 || flags.etcd_lease_ttl_sec > 3600) {
    return absl::InvalidArgumentError(
        absl::StrCat("--etcd-lease-ttl-sec: must be in 1..3600, got ", flags.etcd_lease_ttl_sec));
  }
  if (flags.etcd_lease_margin_ms < 0 ||
      flags.etcd_lease_margin_ms >= flags.etcd_lease_ttl_sec * 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--etcd-lease-margin-ms: must be in [0, the TTL), got ",
                     flags.etcd_lease_margin_ms, " for a TTL of ", flags.etcd_lease_ttl_sec, " s"));
  }
  return absl::OkStatus();
}

// Campaigns until this master leads (true) or SIGINT/SIGTERM arrives
// (false). A standby prints the leader it sees whenever it changes.
bool CampaignUntilLeading(runtime::LeaderElection& election, const std::string& key) {
  std::string last_seen = "-";
  for (;;) {
    std::string leader;
    absl::StatusOr<bool> won = election.TryCampaign(&leader);
    if (won.ok() && *won) return true;
    const std::string seen = won.ok() ? leader : std::string(won.status().message());
    if (seen != last_seen) {
      std::printf("heatsink-master: standby: %s %s\n",
                  won.ok() ? absl::StrCat(key, " names").c_str() : "etcd:", seen.c_str());
      std::fflush(stdout);
      last_seen = seen;
    }
    const int signal = tools::WaitForTerminationSignalFor(kStandbyPollIntervalMs, true);
    if (signal == SIGINT || signal == SIGTERM) return false;
  }
}

// The etcd campaign of a master started with --etcd.
struct Leadership {
  std::unique_ptr<runtime::EtcdClient> etcd;
  std::unique_ptr<runtime::LeaderElection> election;
};

// --etcd: campaigns until this master leads, then keeps the lease alive
// (losing it ends the process) and gives `master_knobs` the restart grace a
// new leader needs. The exit code when the process should stop instead (a
// signal while standing by: 0; no etcd client: 2); nothing when it leads, or
// without --etcd.
std::optional<int> Lead(const Flags& flags, runtime::SteadyClock& clock, MasterKnobs& master_knobs,
                        Leadership& leading) {
  if (flags.etcd.empty()) return std::nullopt;
  const absl::StatusOr<runtime::EtcdTarget> target =
      runtime::ParseEtcdTarget(flags.etcd, /*scheme_optional=*/true);
  absl::StatusOr<std::unique_ptr<runtime::EtcdClient>> client =
      runtime::EtcdClient::Create(runtime::EtcdClientOptions{
          .endpoints = target->endpoints,
          // A keep-alive must come back well within a third of the TTL.
          .call_timeout_ms = std::min<int64_t>(1'000, flags.etcd_lease_ttl_sec * 1000 / 3)});
  if (!client.ok()) {
    std::fprintf(stderr, "heatsink-master: %s\n", client.status().ToString().c_str());
    return 2;
  }
  leading.etcd = *std::move(client);
  const std::string key = runtime::LeaderKey(target->prefix);
  leading.election = std::make_unique<runtime::LeaderElection>(
      leading.etcd.get(),
      runtime::LeaderElectionOptions{.leader_key = key,
                                     .advertise = flags.advertise,
                                     .lease_ttl_sec = flags.etcd_lease_ttl_sec,
                                     .lease_margin_ms = flags.etcd_lease_margin_ms},
      &clock);
  runtime::LeaderElection& election = *leading.election;
  std::printf("heatsink-master: campaigning for %s on etcd %s as %s\n", key.c_str(),
              absl::StrJoin(target->endpoints, ",").c_str(), flags.advertise.c_str());
  std::fflush(stdout);
  if (!CampaignUntilLeading(election, key)) return 0;
  // Keep-alives start at once (the lease runs from its grant). Every call
  // checks the lease itself; this makes the process go too.
  election.KeepLeading([](const absl::Status& why) {
    std::printf("heatsink-master: stepping down: %s; exiting with %d\n",
                std::string(why.message()).c_str(), kExitLostLeadership);
    std::fflush(stdout);
    std::_Exit(kExitLostLeadership);
  });
  // A new leader starts empty: unknown keys are UNAVAILABLE, never
  // NOT_FOUND, while the stores report their manifests.
  if (master_knobs.restart_grace_ms == 0) {
    master_knobs.restart_grace_ms = kEtcdRestartGraceMsDefault;
  }
  std::printf(
      "heatsink-master: leading (epoch %lld, lease %llx, TTL %lld s); recovering for "
      "up to %lld ms\n",
      static_cast<long long>(election.epoch()),
      static_cast<unsigned long long>(election.lease_id()),
      static_cast<long long>(election.lease_ttl_sec()),
      static_cast<long long>(master_knobs.restart_grace_ms));
  std::fflush(stdout);
  return std::nullopt;
}

// Says how callers are identified and where the master serves (and its
// metrics), and writes --address-file. False (after saying why) when the
// file cannot be written.
bool Announce(const Flags& flags, const runtime::MasterServer& server,
              const runtime::MetricsEndpoint* metrics, DynamicReplicationMode mode) {
  if (server.identities_proven()) {
    std::printf(
        "heatsink-master: caller identities from client certificates "
        "(spiffe://%s/heatsink/client/ID)\n",
        flags.rpc.tls.trust_domain.c_str());
  } else {
    std::printf(
        "heatsink-master: caller identities are asserted in '%s' metadata, not "
        "proven; give --tls-cert, --tls-key and --tls-client-ca to prove them with "
        "client certificates\n",
        runtime::kClientIdMetadataKey);
  }
  const std::string metrics_address =
      metrics == nullptr
          ? ""
          : absl::StrCat(flags.metrics_listen.substr(0, flags.metrics_listen.rfind(':')), ":",
                         metrics->port());
  std::printf("heatsink-master: serving on %s (mode %s)%s%s\n", server.address().c_str(),
              std::string(DynamicReplicationModeName(mode)).c_str(),
              metrics == nullptr ? "" : ", metrics on http://",
              metrics == nullptr ? "" : absl::StrCat(metrics_address, "/metrics").c_str());
  std::fflush(stdout);
  if (!flags.address_file.empty()) {
    absl::Status written = tools::WriteFileAtomically(
        flags.address_file, absl::StrCat(server.address(), "\n", metrics_address, "\n"));
    if (!written.ok()) {
      std::fprintf(stderr, "heatsink-master: %s\n", written.ToString().c_str());
      return false;
    }
  }
  return true;
}

int Run(const Flags& flags, MasterKnobs master_knobs, const ReplicationKnobs& replication_knobs,
        runtime::TenantBindings tenants) {
  // SIGHUP compares the knobs read again with these (as loaded, before the
  // etcd default below).
  const MasterKnobs loaded_master_knobs = master_knobs;
  // --etcd: campaign first; a standby serves nothing.
  runtime::SteadyClock clock;
  Leadership leading;
  if (std::optional<int> exit_code = Lead(flags, clock, master_knobs, leading)) return *exit_code;
  runtime::LeaderElection* const election = leading.election.get();
  const int64_t epoch = election == nullptr ? 0 : election->epoch();
  std::unique_ptr<runtime::JsonlDecisionSink> sink;
  if (!flags.decisions.empty()) {
    absl::StatusOr<std::unique_ptr<runtime::JsonlDecisionSink>> opened =
        runtime::JsonlDecisionSink::Open(flags.decisions);
    if (!opened.ok()) {
      std::fprintf(stderr, "heatsink-master: %s\n", opened.status().ToString().c_str());
      return 1;
    }
    sink = *std::move(opened);
  }
  runtime::RuntimeEnv env(
      runtime::RuntimeEnvOptions{.executor = {.threads = flags.threads}, .seed = flags.seed});
  absl::StatusOr<std::unique_ptr<ReplicatedMaster>> master =
      ReplicatedMaster::Create(env.env(), master_knobs, replication_knobs, sink.get());
  if (!master.ok()) {
    std::fprintf(stderr, "heatsink-master: %s\n", master.status().ToString().c_str());
    return 2;
  }
  // Task and lease ids of this incarnation start above IdBase(id epoch), so
  // a copy that outlived an earlier master (a crash, a failover) carries ids
  // this one never hands out: the etcd leader's epoch, else a random one.
  const uint32_t id_epoch =
      epoch != 0 ? static_cast<uint32_t>(epoch) : static_cast<uint32_t>(std::random_device{}());
  (*master)->SetIdEpoch(id_epoch);
  // With tenants bound, a manifest entry naming any other tenant is refused.
  if (tenants.enabled()) (*master)->SetKnownTenants(tenants.Tenants());
  absl::StatusOr<std::unique_ptr<runtime::MasterServer>> server = runtime::MasterServer::Start(
      master->get(), flags.listen, flags.rpc, std::move(tenants), election);
  if (!server.ok()) {
    std::fprintf(stderr, "heatsink-master: %s\n", server.status().ToString().c_str());
    if (election != nullptr) (void)election->Resign();
    return 1;
  }
  std::unique_ptr<runtime::MetricsEndpoint> metrics;
  if (!flags.metrics_listen.empty()) {
    ReplicatedMaster* m = master->get();
    const runtime::MasterServer* s = server->get();
    const runtime::JsonlDecisionSink* d = sink.get();
    absl::StatusOr<std::unique_ptr<runtime::MetricsEndpoint>> started =
        runtime::MetricsEndpoint::Start(
            flags.metrics_listen, [m, s, d, epoch] { return CollectMetrics(*m, *s, d, epoch); });
    if (!started.ok()) {
      std::fprintf(stderr, "heatsink-master: %s\n", started.status().ToString().c_str());
      return 1;
    }
    metrics = *std::move(started);
  }
  if (!Announce(flags, **server, metrics.get(), replication_knobs.dynamic_replication_mode)) {
    return 1;
  }

  int signal = tools::WaitForTerminationOrReloadSignal();
  for (; signal == SIGHUP; signal = tools::WaitForTerminationOrReloadSignal()) {
    Reload(flags, loaded_master_knobs, replication_knobs, **master);
    if (flags.rpc.tls.server_enabled()) ReloadTls(flags, **server);
  }
  std::printf("heatsink-master: signal %d, shutting down\n", signal);
  std::fflush(stdout);
  (*server)->Shutdown(absl::Seconds(2));
  // Hand leadership over at once instead of after the TTL.
  if (election != nullptr) (void)election->Resign();
  metrics.reset();
  env.Shutdown();
  master->reset();
  return 0;
}

}  // namespace
}  // namespace heatsink

int main(int argc, char** argv) {
  using namespace heatsink;
  tools::BlockTerminationSignals();
  tools::BlockReloadSignal();
  Flags flags;
  CLI::App app{
      "heatsink-master: the Heatsink master (gRPC control plane, dynamic hot replication).\n"
      "Knobs use the core's names, e.g. --set dynamic_replication_mode=enforce; "
      "--list-knobs prints them all.\n"
      "Failover: with --etcd ENDPOINTS --advertise HOST:PORT masters campaign for leadership "
      "in etcd; the leader serves while it holds its lease and exits with 3 when it loses it "
      "(docs/runtime.md, \"Failover with etcd\")."};
  app.add_option("--listen", flags.listen, "gRPC address host:port (port 0 picks a free port)")
      ->capture_default_str();
  app.add_option("--metrics-listen", flags.metrics_listen,
                 "serve Prometheus /metrics on host:port (off when empty; port 0 picks one)");
  app.add_option("--config", flags.config,
                 "file of `name = value` knob lines ('#' comments), applied before --set. "
                 "SIGHUP reads it (and --set) again: dynamic_replication_mode changes at once, "
                 "other knobs only at the next start")
      ->check(CLI::ExistingFile);
  app.add_option("--set", flags.settings,
                 "knob override name=value (master or replication knob); repeatable");
  app.add_option("--decisions", flags.decisions,
                 "write admission decision records to this JSONL file (the simulator's format)");
  app.add_option("--address-file", flags.address_file,
                 "write the bound gRPC address and metrics address (one per line) here once "
                 "serving");
  app.add_option("--threads", flags.threads, "background executor threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--seed", flags.seed, "seed of the master's random choices (allocation)")
      ->capture_default_str();
  app.add_flag("--list-knobs", flags.list_knobs, "print every knob with its value and exit");
  app.add_option("--tenant", flags.tenants,
                 "bind a client to a tenant, CLIENT_ID=TENANT; repeatable. With any binding, "
                 "callers must identify themselves and may name only their own tenant's "
                 "objects (PERMISSION_DENIED otherwise)");
  app.add_option("--etcd", flags.etcd,
                 "campaign for leadership on etcd: host:port[,host:port] or "
                 "etcd://host:port[,host:port]/prefix (prefix /heatsink by default). A standby "
                 "serves nothing; the leader publishes --advertise under PREFIX/master/leader, "
                 "starts empty and rebuilds from the stores' manifests, and exits with 3 when "
                 "it loses its lease");
  app.add_option("--advertise", flags.advertise,
                 "with --etcd: the host:port stores and clients call this master at");
  app.add_option("--etcd-lease-ttl-sec", flags.etcd_lease_ttl_sec,
                 "with --etcd: TTL of the leader's etcd lease; a dead leader is replaced after "
                 "about this long")
      ->capture_default_str();
  app.add_option("--etcd-lease-margin-ms", flags.etcd_lease_margin_ms,
                 "with --etcd: the leader stops serving this long before its lease could "
                 "expire in etcd (last acknowledged keep-alive's send time + TTL - margin)")
      ->capture_default_str();
  tools::AddRpcFlags(app, flags.rpc, /*server=*/true);
  bool keep_deadlock_detection = false;
  tools::AddDeadlockDetectionFlag(app, keep_deadlock_detection);
  CLI11_PARSE(app, argc, argv);
  tools::ApplyDeadlockDetection(keep_deadlock_detection);

  MasterKnobs master_knobs;
  ReplicationKnobs replication_knobs;
  absl::Status status = LoadKnobs(flags, &master_knobs, &replication_knobs);
  if (status.ok()) status = flags.rpc.Validate();
  if (status.ok()) status = CheckEtcdFlags(flags);
  runtime::TenantBindings tenants;
  for (const std::string& binding : flags.tenants) {
    if (!status.ok()) break;
    status = tenants.BindFromFlag(binding);
    if (!status.ok()) {
      status = absl::InvalidArgumentError(absl::StrCat("--tenant: ", status.message()));
    }
  }
  if (!status.ok()) {
    std::fprintf(stderr, "heatsink-master: %s\n", std::string(status.message()).c_str());
    return 2;
  }
  if (flags.list_knobs) {
    tools::PrintKnobs(master_knobs, MasterKnobs::Registry());
    tools::PrintKnobs(replication_knobs, ReplicationKnobs::Registry());
    return 0;
  }
  return Run(flags, master_knobs, replication_knobs, std::move(tenants));
}
