// File: tools/runtime_flags.h
//
// Command-line pieces shared by heatsink-master, heatsink-store and
// heatsink-load: `--set name=value` and config files over knob registries,
// the gRPC transport flags, termination signals and port files.
#ifndef HEATSINK_TOOLS_RUNTIME_FLAGS_H_
#define HEATSINK_TOOLS_RUNTIME_FLAGS_H_

#include <signal.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "runtime/etcd/etcd_client.h"
#include "runtime/rpc/rpc_options.h"

namespace heatsink::tools {

// Tries one knob registry: NOT_FOUND when the name is not its own.
using KnobSetter = std::function<absl::Status(absl::string_view name, absl::string_view value)>;

// Applies "name=value" settings, each to the first registry that knows the
// name. INVALID_ARGUMENT for a malformed setting or an unknown name (the
// message names `origin`, e.g. "--set" or "config.txt:3").
inline absl::Status ApplySetting(const std::string& setting, const std::string& origin,
                                 const std::vector<KnobSetter>& registries) {
  const size_t eq = setting.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": expected name=value, got '", setting, "'"));
  }
  const absl::string_view name = absl::StripAsciiWhitespace(absl::string_view(setting).substr(0, eq));
  const absl::string_view value = absl::StripAsciiWhitespace(absl::string_view(setting).substr(eq + 1));
  for (const KnobSetter& set : registries) {
    absl::Status status = set(name, value);
    if (status.code() == absl::StatusCode::kNotFound) continue;
    if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat(origin, ": ", status.message()));
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(origin, ": unknown knob '", name,
                                                 "' (--list-knobs prints every name)"));
}

// A config file holds one `name = value` per line; blank lines and lines
// starting with '#' are skipped. Names are the same as for --set.
inline absl::Status ApplyConfigFile(const std::string& path,
                                    const std::vector<KnobSetter>& registries) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read config file '", path, "'"));
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text[0] == '#') continue;
    absl::Status status =
        ApplySetting(std::string(text), absl::StrCat(path, ":", number), registries);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

// Prints every knob of `registry` with its current value and help.
template <typename Knobs, typename Registry>
void PrintKnobs(const Knobs& knobs, const Registry& registry) {
  for (const auto& entry : registry.entries()) {
    std::printf("%-56s %-16s %s\n", entry.name.c_str(), entry.get(knobs).c_str(),
                entry.help.c_str());
  }
}

inline void AddRpcFlags(CLI::App& app, runtime::RpcOptions& rpc, bool server) {
  app.add_option("--message-bytes-max", rpc.message_bytes_max,
                 "largest gRPC message sent or accepted, in bytes")
      ->capture_default_str();
  app.add_option("--call-timeout-ms", rpc.call_timeout_ms,
                 "deadline of every control-plane call, in milliseconds")
      ->capture_default_str();
  app.add_option("--tls-cert", rpc.tls.cert_path,
                 server ? "PEM certificate chain of this server (enables TLS)"
                        : "PEM client certificate (when the master requires one)");
  app.add_option("--tls-key", rpc.tls.key_path, "PEM private key matching --tls-cert");
  if (server) {
    app.add_option("--server-threads-max", rpc.server_threads_max,
                   "threads serving gRPC calls at most (the store's data service)")
        ->capture_default_str();
    app.add_option("--calls-in-flight-max", rpc.calls_in_flight_max,
                   "master: puts, reads and removes in flight at once; more are refused at once "
                   "with RESOURCE_EXHAUSTED (the stores' heartbeats, tasks and copies are always "
                   "admitted)")
        ->capture_default_str();
    app.add_option("--streams-per-connection-max", rpc.streams_per_connection_max,
                   "master: calls one client connection may have open at once; more wait on "
                   "the client's side")
        ->capture_default_str();
    app.add_option("--server-memory-bytes-max", rpc.server_memory_bytes_max,
                   "master: memory gRPC may hold for calls and buffers, in bytes")
        ->capture_default_str();
    app.add_option("--tls-client-ca", rpc.tls.client_ca_path,
                   "PEM CA for client certificates (requires and verifies them)");
    app.add_option("--tls-trust-domain", rpc.tls.trust_domain,
                   "with --tls-client-ca: the trust domain of the callers' identities, "
                   "URI SANs spiffe://DOMAIN/heatsink/client/ID")
        ->capture_default_str();
  } else {
    app.add_option("--tls-ca", rpc.tls.ca_path,
                   "PEM CA that signed the master's certificate (enables TLS)");
  }
}

// Abseil's mutex deadlock detection (on in Debian's build) looks every lock
// acquisition up in one process-wide lock graph, which serialises the
// processes' hot paths. They turn it off unless --keep-deadlock-detection
// asks for it (to debug lock order); the test builds keep it on.
inline void AddDeadlockDetectionFlag(CLI::App& app, bool& keep) {
  app.add_flag("--keep-deadlock-detection", keep,
               "keep Abseil's mutex deadlock detection on (a global lock-graph lookup on every "
               "lock; for debugging lock order)");
}
// Call right after parsing, before any thread starts.
inline void ApplyDeadlockDetection(bool keep) {
  if (!keep) absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

// The set of the given signals.
inline sigset_t SignalSet(std::initializer_list<int> signals) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : signals) sigaddset(&set, s);
  return set;
}

// Blocks until one of `signals` (blocked beforehand) arrives; returns it.
inline int WaitForSignal(std::initializer_list<int> signals) {
  const sigset_t set = SignalSet(signals);
  int signal = 0;
  sigwait(&set, &signal);
  return signal;
}

// Call first in main(), before any thread starts, so that every thread
// inherits the mask and the signals wait for WaitForTerminationSignal().
inline void BlockTerminationSignals() {
  const sigset_t set = SignalSet({SIGINT, SIGTERM});
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

// Blocks until SIGINT or SIGTERM; returns the signal.
inline int WaitForTerminationSignal() { return WaitForSignal({SIGINT, SIGTERM}); }

// Adds SIGHUP to the blocked signals (call with BlockTerminationSignals,
// before any thread starts), for a process that reloads on SIGHUP.
inline void BlockReloadSignal() {
  const sigset_t set = SignalSet({SIGHUP});
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

// Blocks until SIGINT, SIGTERM or SIGHUP; returns the signal.
inline int WaitForTerminationOrReloadSignal() { return WaitForSignal({SIGINT, SIGTERM, SIGHUP}); }

// `--master` (heatsink-store, heatsink-load): a master's host:port, or
// etcd://host:port[,host:port][/prefix] to follow the leader elected there.
// INVALID_ARGUMENT naming the flag when an etcd address is malformed.
inline absl::Status CheckMasterFlag(const std::string& address) {
  if (!absl::StartsWith(address, "etcd:")) return absl::OkStatus();
  absl::StatusOr<runtime::EtcdTarget> target = runtime::ParseEtcdTarget(address);
  if (target.ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--master: ", target.status().message()));
}

// Like WaitForTerminationSignal, but gives up after `timeout_ms` and returns 0.
// `reload`: SIGHUP ends the wait too (BlockReloadSignal first).
inline int WaitForTerminationSignalFor(int64_t timeout_ms, bool reload = false) {
  const sigset_t set = reload ? SignalSet({SIGINT, SIGTERM, SIGHUP}) : SignalSet({SIGINT, SIGTERM});
  timespec timeout{};
  timeout.tv_sec = static_cast<time_t>(timeout_ms / 1000);
  timeout.tv_nsec = static_cast<long>(timeout_ms % 1000) * 1'000'000;
  const int signal = sigtimedwait(&set, nullptr, &timeout);
  return signal > 0 ? signal : 0;
}

// Writes `text` to `path` through a temporary file and a rename, so a reader
// polling for the file never sees it half written.
inline absl::Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    if (!out) return absl::UnavailableError(absl::StrCat("cannot write '", temporary, "'"));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot rename to '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace heatsink::tools

#endif  // HEATSINK_TOOLS_RUNTIME_FLAGS_H_
