// File: runtime/transport/ucx_worker.h
//
// One UCP context and worker driven by a dedicated progress thread. Every UCX
// call of the process's data plane happens on that thread (the worker is
// created UCS_THREAD_MODE_SINGLE), so other threads hand work to it with
// Post(). The thread sleeps on the worker's event fd (UCP_FEATURE_WAKEUP) and
// an eventfd of its own, with a short poll timeout as a guard against missed
// wakeups.
//
// It also keeps what is worth doing once: memory registrations (ucp_mem_map
// plus the packed remote key) per segment, and endpoints per remote worker
// address, created with peer error handling so a dead peer fails requests
// with an error status instead of hanging. An endpoint that reports an error
// is dropped from the cache and force-closed; the next copy reconnects.
//
// UCX configuration comes from the environment (UCX_TLS, UCX_NET_DEVICES, ...)
// plus `config_overrides` (names without the UCX_ prefix). On this kind of
// machine: UCX_TLS=tcp,self UCX_NET_DEVICES=lo (loopback must be named, and
// shared-memory transports may need capabilities a container lacks). For
// sanitizer runs also export UCX_HANDLE_ERRORS=none UCX_ERROR_SIGNALS=
// UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_EVENTS=no:
// UCX's signal handlers and malloc/mmap hooks fight the sanitizers' (under
// ThreadSanitizer, UCX's madvise hook crashes at the first thread exit, even
// in a process that never creates a context). These are global options read
// when the UCX libraries load, so they must be in the environment before the
// process starts; setenv() in main() is too late. UCX_TLS and
// UCX_NET_DEVICES, by contrast, are read per context by ucp_config_read.
#ifndef HEATSINK_RUNTIME_TRANSPORT_UCX_WORKER_H_
#define HEATSINK_RUNTIME_TRANSPORT_UCX_WORKER_H_

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/model/ids.h"
#include "runtime/memory/segment_memory.h"

namespace heatsink::runtime {

struct UcxOptions {
  // Applied with ucp_config_modify on top of the environment, e.g.
  // {{"TLS", "tcp,self"}, {"NET_DEVICES", "lo"}}.
  std::vector<std::pair<std::string, std::string>> config_overrides;
  // Applied only where the environment sets neither UCX_<name> nor
  // UCX_TCP_<name>. UCX's TCP transport (the only one with these options)
  // sends puts in 8 KiB segments and receives in 64 KiB ones by default;
  // 1 MiB segments more than double its loopback put bandwidth here (see
  // runtime/bench/data_mover_bench.cc).
  std::vector<std::pair<std::string, std::string>> config_defaults = {
      {"TX_SEG_SIZE", "1M"}, {"RX_SEG_SIZE", "1M"}};
  size_t endpoints_max = 256;
  size_t registrations_max = 64;

  [[nodiscard]] absl::Status Validate() const;
};

// UNAVAILABLE carrying UCX's description of `status`.
absl::Status UcsToStatus(ucs_status_t status, absl::string_view what);

class UcxWorker {
 public:
  struct Registration {
    std::shared_ptr<SegmentBuffer> buffer;  // keeps the memory alive while mapped
    ucp_mem_h memh = nullptr;
    std::string packed_rkey;
  };

  [[nodiscard]] static absl::StatusOr<std::unique_ptr<UcxWorker>> Create(
      const UcxOptions& options);
  ~UcxWorker();  // calls Stop()
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  // Runs `op(true)` on the progress thread, in post order; once the thread
  // has stopped, runs `op(false)` at once on the caller's thread (the op must
  // then not touch UCX). Thread-safe.
  void Post(absl::AnyInvocable<void(bool live) &&> op);

  // Force-closes every endpoint, unmaps every registration, destroys the
  // worker and context and joins the thread. Idempotent. Outstanding requests
  // complete (with errors) before it returns.
  void Stop();

  // This worker's address, for peers' ucp_ep_create. Immutable; any thread.
  const std::string& address() const { return address_; }

  // --- progress thread only ---
  // The registration of `id` over `buffer` (mapped on first use; remapped if
  // the segment was re-created with new memory). RESOURCE_EXHAUSTED at
  // registrations_max.
  [[nodiscard]] absl::StatusOr<const Registration*> Register(
      SegmentId id, std::shared_ptr<SegmentBuffer> buffer);
  void Unregister(SegmentId id);
  // The cached endpoint to `remote_address`, created on first use.
  [[nodiscard]] absl::StatusOr<ucp_ep_h> Endpoint(const std::string& remote_address);
  // Force-closes every endpoint; their outstanding requests fail.
  void CloseAllEndpoints();
  size_t endpoints() const { return endpoints_.size(); }

 private:
  struct EndpointEntry {
    UcxWorker* owner = nullptr;
    std::string key;
    ucp_ep_h ep = nullptr;
  };

  UcxWorker(const UcxOptions& options, ucp_context_h context, ucp_worker_h worker,
            std::string address, int event_fd, int wake_fd);
  static void OnEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);
  void Loop();
  void CloseEndpoint(std::unique_ptr<EndpointEntry> entry);
  void CloseFailedEndpoints();
  void ReapClosing(bool wait);

  const UcxOptions options_;
  ucp_context_h context_;
  ucp_worker_h worker_;
  const std::string address_;
  const int event_fd_;  // the worker's, or -1 when wakeup is unsupported
  const int wake_fd_;   // our eventfd

  Mutex mu_;
  std::vector<absl::AnyInvocable<void(bool) &&>> ops_ ABSL_GUARDED_BY(mu_);
  bool stop_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool exited_ ABSL_GUARDED_BY(mu_) = false;
  Mutex stop_mu_;  // serialises Stop callers
  bool stopped_ ABSL_GUARDED_BY(stop_mu_) = false;
  std::thread thread_;

  // Progress thread only.
  std::map<SegmentId, std::unique_ptr<Registration>> registrations_;
  std::map<std::string, std::unique_ptr<EndpointEntry>> endpoints_;
  std::vector<std::unique_ptr<EndpointEntry>> failed_;
  // Endpoints whose ucp_ep_close_nbx request is not complete yet; the entry
  // (the error handler's argument) lives until then.
  std::vector<std::pair<void*, std::unique_ptr<EndpointEntry>>> closing_;
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_TRANSPORT_UCX_WORKER_H_
