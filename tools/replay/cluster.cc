#include "tools/replay/cluster.h"

#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "runtime/transport/socket.h"

namespace heatsink::replay {

namespace fs = std::filesystem;

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool Stopped(const ReplayOptions& options) {
  return (options.stop != nullptr && options.stop->load(std::memory_order_relaxed)) ||
         (options.halt != nullptr && options.halt->load(std::memory_order_relaxed));
}

// Sleeps until `deadline_ns` (steady clock) in slices, so a stop request is
// seen within 20 ms. False when stopped.
bool SleepUntil(int64_t deadline_ns, const ReplayOptions& options) {
  for (;;) {
    if (Stopped(options)) return false;
    const int64_t left = deadline_ns - SteadyNs();
    if (left <= 0) return true;
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(left, 20'000'000)));
  }
}

namespace {

std::vector<std::string> ReadLines(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

}  // namespace

// GET http://endpoint/metrics; the unlabelled samples as name -> value.
absl::StatusOr<std::map<std::string, double>> ScrapeMetrics(const std::string& endpoint) {
  HS_ASSIGN_OR_RETURN(runtime::Socket socket, runtime::ConnectTcp(endpoint, 2'000, 5'000));
  const std::string request = "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
  HS_RETURN_IF_ERROR(runtime::SendAll(socket, request.data(), request.size()));
  std::string response;
  char buffer[8192];
  constexpr size_t kResponseBytesMax = 16 << 20;
  for (;;) {
    const ssize_t n = ::recv(socket.fd(), buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    response.append(buffer, static_cast<size_t>(n));
    if (response.size() > kResponseBytesMax) {
      return absl::ResourceExhaustedError(
          absl::StrCat("/metrics of ", endpoint, " is larger than ", kResponseBytesMax, " bytes"));
    }
  }
  std::map<std::string, double> out;
  for (absl::string_view line : absl::StrSplit(response, '\n')) {
    if (line.empty() || line.front() == '#' || absl::StrContains(line, '{')) continue;
    const size_t space = line.find(' ');
    if (space == absl::string_view::npos) continue;
    double value = 0;
    if (absl::SimpleAtod(absl::StripAsciiWhitespace(line.substr(space + 1)), &value)) {
      out[std::string(line.substr(0, space))] = value;
    }
  }
  if (out.empty()) return absl::UnavailableError(absl::StrCat("no metrics from ", endpoint));
  return out;
}

absl::string_view StoreOpOutcomeName(StoreOpOutcome outcome, bool kill) {
  switch (outcome) {
    case StoreOpOutcome::kDone:
      return kill ? "killed" : "started";
    case StoreOpOutcome::kNoStore:
      return "no store";
    case StoreOpOutcome::kNotRunning:
      return "not running";
    case StoreOpOutcome::kRunning:
      return "running";
  }
  return "?";
}

Cluster::Cluster(const ReplayPlan& plan, const ReplayOptions& options, uint64_t seed)
    : plan_(plan),
      options_(options),
      seed_(seed),
      logs_(fs::path(options.out_dir) / "logs"),
      master_config_(logs_ / "master.conf"),
      slots_(plan.stores.size()),
      incarnations_(plan.stores.size(), 0) {
  for (size_t i = 0; i < plan.stores.size(); ++i) store_of_host_[plan.stores[i].host] = i;
}

absl::Status Cluster::WriteMasterConfig(DynamicReplicationMode mode) {
  // heatsink-master --config: `name = value` lines, read at start and again
  // on every SIGHUP (only dynamic_replication_mode applies while running).
  const std::string text = absl::StrCat(
      "# heatsink-replay: the scenario's dynamic_replication_mode, rewritten by its set_knob ops\n",
      "dynamic_replication_mode = ", DynamicReplicationModeName(mode), "\n");
  const fs::path temporary = master_config_.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::out | std::ios::trunc);
    out << text;
    out.close();
    if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", temporary.string()));
  }
  std::error_code ec;
  fs::rename(temporary, master_config_, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("cannot rename ", temporary.string(), " to ",
                                               master_config_.string(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::Status Cluster::StartMaster() {
  fs::create_directories(logs_);
  HS_RETURN_IF_ERROR(WriteMasterConfig(plan_.dynamic_replication_mode));
  const fs::path address_file = logs_ / "master.address";
  fs::remove(address_file);
  std::vector<std::string> argv = {(fs::path(options_.binaries_dir) / "heatsink-master").string(),
                                   "--listen",
                                   "127.0.0.1:0",
                                   "--metrics-listen",
                                   "127.0.0.1:0",
                                   "--address-file",
                                   address_file.string(),
                                   "--config",
                                   master_config_.string(),
                                   "--decisions",
                                   (fs::path(options_.out_dir) / "decisions.jsonl").string(),
                                   "--seed",
                                   absl::StrCat(seed_)};
  for (const std::string& set : plan_.master_sets) {
    argv.push_back("--set");
    argv.push_back(set);
  }
  HS_ASSIGN_OR_RETURN(master_, ChildProcess::Start(argv, (logs_ / "master.log").string()));
  const bool up = WaitFor([&] { return ReadLines(address_file).size() == 2; });
  if (!up) return NotStarted("heatsink-master", *master_);
  const std::vector<std::string> lines = ReadLines(address_file);
  master_address_ = lines[0];
  metrics_address_ = lines[1];
  HS_ASSIGN_OR_RETURN(
      admin_, runtime::GrpcMasterClient::Connect(&clock_, master_address_, runtime::RpcOptions()));
  return absl::OkStatus();
}

fs::path Cluster::EndpointFile(const ReplayStore& store) const {
  return logs_ / (store.host + ".endpoint");
}

// The first run's log is <host>.log; a restart's <host>.restart-N.log, so a
// crash keeps the log of the run that crashed.
std::string Cluster::LogPath(const ReplayStore& store, int64_t incarnation) const {
  const int64_t restart = incarnation / 2;  // starts and kills alternate
  return (logs_ / (restart == 0 ? absl::StrCat(store.host, ".log")
                                : absl::StrCat(store.host, ".restart-", restart, ".log")))
      .string();
}

int64_t Cluster::Incarnation(size_t store) {
  absl::MutexLock lock(&mu_);
  return incarnations_[store];
}

absl::StatusOr<StoreLaunch> Cluster::LaunchStore(size_t index) {
  const ReplayStore& store = plan_.stores[index];
  const fs::path endpoint_file = EndpointFile(store);
  fs::remove(endpoint_file);
  std::vector<std::string> argv = {(fs::path(options_.binaries_dir) / "heatsink-store").string(),
                                   "--master",
                                   master_address_,
                                   "--client-id",
                                   absl::StrCat(store.client_id.value),
                                   "--host",
                                   store.host,
                                   "--domain",
                                   store.domain,
                                   "--segments",
                                   absl::StrCat(store.segments),
                                   "--first-segment-id",
                                   absl::StrCat(store.first_segment_id),
                                   "--segment-mib",
                                   absl::StrCat(store.segment_mib),
                                   "--segment-commit-on-write",
                                   "--data-host",
                                   "127.0.0.1",
                                   "--heartbeat-interval-ms",
                                   absl::StrCat(plan_.heartbeat_interval_ms),
                                   "--fetch-interval-ms",
                                   absl::StrCat(plan_.fetch_interval_ms),
                                   "--endpoint-file",
                                   endpoint_file.string()};
  StoreLaunch launch;
  launch.store = index;
  launch.incarnation = Incarnation(index) + 1;
  StoreSlot& slot = slots_[index];
  HS_ASSIGN_OR_RETURN(slot.process, ChildProcess::Start(argv, LogPath(store, launch.incarnation)));
  slot.running = true;
  absl::MutexLock lock(&mu_);
  incarnations_[index] = launch.incarnation;
  return launch;
}

bool Cluster::SegmentsListed(const ReplayStore& store, const std::string& endpoint) {
  absl::StatusOr<std::vector<SegmentView>> views = admin_->ListSegments();
  if (!views.ok()) return false;
  int64_t listed = 0;
  for (const SegmentView& v : *views) {
    if (v.location.owner == store.client_id && v.location.transport_endpoint == endpoint &&
        !v.unmounting) {
      ++listed;
    }
  }
  return listed == store.segments;
}

absl::Status Cluster::StartStore(const ReplayStore& store) {
  const size_t index = store_of_host_.at(store.host);
  if (slots_[index].running) return absl::OkStatus();
  HS_ASSIGN_OR_RETURN(const StoreLaunch launch, LaunchStore(index));
  return WaitStoreServing(launch);
}

absl::Status Cluster::WaitStoreServing(const StoreLaunch& launch) {
  const ReplayStore& store = plan_.stores[launch.store];
  const std::string log_path = LogPath(store, launch.incarnation);
  bool superseded = false;
  // The endpoint file appears once the store runs; its first line is the
  // data endpoint its segments are mounted with.
  std::string endpoint;
  const bool serving = WaitFor([&] {
    if (Incarnation(launch.store) != launch.incarnation) superseded = true;
    if (superseded) return true;
    if (endpoint.empty()) {
      const std::vector<std::string> lines = ReadLines(EndpointFile(store));
      if (lines.size() < 2) return false;  // written whole (rename), but check
      endpoint = lines[0];
    }
    return SegmentsListed(store, endpoint);
  });
  if (serving || superseded) return absl::OkStatus();
  return NotServing(store, log_path);
}

StoreOpOutcome Cluster::KillStore(const HostId& host) {
  const auto it = store_of_host_.find(host);
  if (it == store_of_host_.end()) return StoreOpOutcome::kNoStore;
  StoreSlot& slot = slots_[it->second];
  if (!slot.running) return StoreOpOutcome::kNotRunning;
  slot.process->Kill();
  slot.running = false;
  absl::MutexLock lock(&mu_);
  ++incarnations_[it->second];
  return StoreOpOutcome::kDone;
}

absl::StatusOr<StoreOpOutcome> Cluster::RestartStore(const HostId& host, StoreLaunch* launch) {
  const auto it = store_of_host_.find(host);
  if (it == store_of_host_.end()) return StoreOpOutcome::kNoStore;
  if (slots_[it->second].running) return StoreOpOutcome::kRunning;
  HS_ASSIGN_OR_RETURN(*launch, LaunchStore(it->second));
  return StoreOpOutcome::kDone;
}

absl::StatusOr<int64_t> Cluster::SetMode(DynamicReplicationMode mode) {
  if (master_ == nullptr || !master_->Running()) {
    return absl::UnavailableError(
        absl::StrCat("set_knob dynamic_replication_mode: heatsink-master is not running; see ",
                     (logs_ / "master.log").string()));
  }
  int64_t change = 0;
  {
    absl::MutexLock lock(&mu_);
    change = ++mode_changes_;
  }
  HS_RETURN_IF_ERROR(WriteMasterConfig(mode));
  master_->Signal(SIGHUP);
  return change;
}

absl::Status Cluster::WaitModeApplied(DynamicReplicationMode mode, int64_t change) {
  const double want = static_cast<double>(static_cast<int>(mode));
  const bool applied = WaitFor([&] {
    {
      absl::MutexLock lock(&mu_);
      if (mode_changes_ != change) return true;  // a later change took over
    }
    absl::StatusOr<std::map<std::string, double>> m = ScrapeMetrics(metrics_address_);
    if (!m.ok()) return false;
    const auto it = m->find("heatsink_dynamic_replication_mode");
    return it != m->end() && it->second == want;
  });
  if (applied) return absl::OkStatus();
  if (Stopped(options_)) return absl::CancelledError("stopped");
  return absl::UnavailableError(
      absl::StrCat("heatsink-master did not show dynamic_replication_mode ",
                   DynamicReplicationModeName(mode), " within ", options_.start_timeout_ms,
                   " ms of SIGHUP; see ", (logs_ / "master.log").string()));
}

void Cluster::StopAll() {
  for (StoreSlot& slot : slots_) {
    if (slot.process != nullptr) slot.process->Stop();
    slot.process.reset();
    slot.running = false;
  }
  admin_.reset();
  if (master_ != nullptr) master_->Stop();
  master_.reset();
}

absl::Status Cluster::NotStarted(const std::string& what, ChildProcess& process) {
  if (Stopped(options_)) return absl::CancelledError("stopped while the cluster was starting");
  return absl::UnavailableError(absl::StrCat(
      what, " did not start within ", options_.start_timeout_ms, " ms",
      process.Running() ? "" : " (it exited)", "; see ", process.log_path()));
}

// Thread-safe (it reads no ChildProcess): whether the store exited is left
// to its log.
absl::Status Cluster::NotServing(const ReplayStore& store, const std::string& log_path) {
  if (Stopped(options_)) return absl::CancelledError("stopped while a store was starting");
  return absl::UnavailableError(absl::StrCat("heatsink-store of host ", store.host,
                                             " did not serve its segments within ",
                                             options_.start_timeout_ms, " ms; see ", log_path));
}

absl::StatusOr<runtime::HeatsinkClient*> Clients::For(const std::string& client,
                                             const std::string& tenant) {
  absl::MutexLock lock(&mu_);
  const auto key = std::make_pair(client, tenant);
  if (auto it = clients_.find(key); it != clients_.end()) return it->second.client.get();
  const auto spec = plan_.clients.find(client);
  HS_CHECK_MSG(spec != plan_.clients.end(), client);  // the scenario loader checked the name
  runtime::RpcOptions rpc;
  rpc.caller_client_id = spec->second.client_id.value;
  Entry entry;
  HS_ASSIGN_OR_RETURN(entry.master,
                      runtime::GrpcMasterClient::Connect(clock_, master_address_, rpc));
  runtime::HeatsinkClientOptions options;
  options.client_id = spec->second.client_id;
  options.host = spec->second.host;
  options.domain = spec->second.domain;
  options.tenant = tenant;
  options.replica_selection_policy = plan_.replica_selection_policy;
  options.replica_selection_seed = plan_.replica_selection_seed;
  // As the simulator's clients (and Mooncake's): puts prefer the writer's
  // own host's segments.
  for (const ReplayStore& s : plan_.stores) {
    if (s.host != spec->second.host) continue;
    for (int64_t i = 0; i < s.segments; ++i) {
      options.preferred_segments.push_back(
          SegmentId(s.first_segment_id + static_cast<uint64_t>(i)));
    }
  }
  HS_RETURN_IF_ERROR(options.Validate());
  entry.client = std::make_unique<runtime::HeatsinkClient>(entry.master.get(), options);
  runtime::HeatsinkClient* out = entry.client.get();
  clients_.emplace(key, std::move(entry));
  return out;
}
absl::Status Clients::Warm(const std::set<std::string>& tenants) {
  for (const auto& [name, spec] : plan_.clients) {
    for (const std::string& tenant : tenants) {
      HS_RETURN_IF_ERROR(For(name, tenant).status());
    }
  }
  absl::MutexLock lock(&mu_);
  for (auto& [key, entry] : clients_) HS_RETURN_IF_ERROR(entry.master->Ping());
  return absl::OkStatus();
}
std::shared_ptr<const std::string> Clients::Payload(int64_t size) {
  absl::MutexLock lock(&mu_);
  auto& p = payloads_[size];
  if (p == nullptr) p = std::make_shared<const std::string>(static_cast<size_t>(size), 'h');
  return p;
}

}  // namespace heatsink::replay
