#include "tools/replay/cluster.h"

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
  return options.stop != nullptr && options.stop->load(std::memory_order_relaxed);
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

absl::Status Cluster::StartMaster() {
  fs::create_directories(logs_);
  const fs::path address_file = logs_ / "master.address";
  fs::remove(address_file);
  std::vector<std::string> argv = {
      (fs::path(options_.binaries_dir) / "heatsink-master").string(),
      "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
      "--address-file", address_file.string(),
      "--decisions", (fs::path(options_.out_dir) / "decisions.jsonl").string(),
      "--seed", absl::StrCat(seed_)};
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
  return absl::OkStatus();
}
absl::Status Cluster::StartStore(const ReplayStore& store) {
  const fs::path endpoint_file = logs_ / (store.host + ".endpoint");
  fs::remove(endpoint_file);
  std::vector<std::string> argv = {
      (fs::path(options_.binaries_dir) / "heatsink-store").string(),
      "--master", master_address_,
      "--client-id", absl::StrCat(store.client_id.value),
      "--host", store.host,
      "--domain", store.domain,
      "--segments", absl::StrCat(store.segments),
      "--segment-mib", absl::StrCat(store.segment_mib),
      "--data-host", "127.0.0.1",
      "--heartbeat-interval-ms", absl::StrCat(plan_.heartbeat_interval_ms),
      "--fetch-interval-ms", absl::StrCat(plan_.fetch_interval_ms),
      "--endpoint-file", endpoint_file.string()};
  HS_ASSIGN_OR_RETURN(std::unique_ptr<ChildProcess> process,
                      ChildProcess::Start(argv, (logs_ / (store.host + ".log")).string()));
  stores_.push_back(std::move(process));
  segments_expected_ += store.segments;
  if (!WaitFor([&] { return fs::exists(endpoint_file); })) {
    return NotStarted(absl::StrCat("heatsink-store of host ", store.host), *stores_.back());
  }
  // The master lists the store's segments once they are mounted.
  const bool mounted = WaitFor([&] {
    absl::StatusOr<std::map<std::string, double>> m = ScrapeMetrics(metrics_address_);
    return m.ok() && (*m)["heatsink_master_segments"] >= static_cast<double>(segments_expected_);
  });
  if (!mounted) {
    return NotStarted(absl::StrCat("heatsink-store of host ", store.host, " (segments)"),
                      *stores_.back());
  }
  return absl::OkStatus();
}
void Cluster::StopAll() {
  for (auto& s : stores_) s->Stop();
  stores_.clear();
  if (master_ != nullptr) master_->Stop();
  master_.reset();
}
absl::Status Cluster::NotStarted(const std::string& what, ChildProcess& process) {
  if (Stopped(options_)) return absl::CancelledError("stopped while the cluster was starting");
  return absl::UnavailableError(absl::StrCat(
      what, " did not start within ", options_.start_timeout_ms, " ms",
      process.Running() ? "" : " (it exited)", "; see ", process.log_path()));
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
          SegmentId(s.client_id.value * 256 + static_cast<uint64_t>(i) + 1));
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
