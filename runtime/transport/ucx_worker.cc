#include "runtime/transport/ucx_worker.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"

namespace heatsink::runtime {
namespace {

// Poll timeout of the progress thread: a guard against a missed wakeup, not
// the normal way to notice work.
constexpr int kPollTimeoutMs = 50;

}  // namespace

absl::Status UcxOptions::Validate() const {
  if (endpoints_max == 0) return absl::InvalidArgumentError("endpoints_max must be positive");
  if (registrations_max == 0) {
    return absl::InvalidArgumentError("registrations_max must be positive");
  }
  return absl::OkStatus();
}

absl::Status UcsToStatus(ucs_status_t status, absl::string_view what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", ucs_status_string(status)));
}

absl::StatusOr<std::unique_ptr<UcxWorker>> UcxWorker::Create(const UcxOptions& options) {
  HS_RETURN_IF_ERROR(options.Validate());
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return UcsToStatus(st, "ucp_config_read");
  std::vector<std::pair<std::string, std::string>> settings;
  for (const auto& [name, value] : options.config_defaults) {
    if (std::getenv(absl::StrCat("UCX_", name).c_str()) == nullptr &&
        std::getenv(absl::StrCat("UCX_TCP_", name).c_str()) == nullptr) {
      settings.emplace_back(name, value);
    }
  }
  settings.insert(settings.end(), options.config_overrides.begin(),
                  options.config_overrides.end());
  for (const auto& [name, value] : settings) {
    st = ucp_config_modify(config, name.c_str(), value.c_str());
    if (st != UCS_OK) {
      ucp_config_release(config);
      return absl::InvalidArgumentError(absl::StrCat("UCX option ", name, "=", value, ": ",
                                                     ucs_status_string(st)));
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
  params.name = "heatsink";
  ucp_context_h context = nullptr;
  st = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (st != UCS_OK) return UcsToStatus(st, "ucp_init");

  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucp_worker_h worker = nullptr;
  st = ucp_worker_create(context, &worker_params, &worker);
  if (st != UCS_OK) {
    ucp_cleanup(context);
    return UcsToStatus(st, "ucp_worker_create");
  }
  ucp_address_t* address = nullptr;
  size_t address_bytes = 0;
  st = ucp_worker_get_address(worker, &address, &address_bytes);
  if (st != UCS_OK) {
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    return UcsToStatus(st, "ucp_worker_get_address");
  }
  std::string address_copy(reinterpret_cast<const char*>(address), address_bytes);
  ucp_worker_release_address(worker, address);

  int event_fd = -1;
  if (ucp_worker_get_efd(worker, &event_fd) != UCS_OK) event_fd = -1;
  const int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) {
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    return absl::UnavailableError("eventfd failed");
  }
  return std::unique_ptr<UcxWorker>(
      new UcxWorker(options, context, worker, std::move(address_copy), event_fd, wake_fd));
}

UcxWorker::UcxWorker(const UcxOptions& options, ucp_context_h context, ucp_worker_h worker,
                     std::string address, int event_fd, int wake_fd)
    : options_(options),
      context_(context),
      worker_(worker),
      address_(std::move(address)),
      event_fd_(event_fd),
      wake_fd_(wake_fd) {
  thread_ = std::thread([this] { Loop(); });
}

UcxWorker::~UcxWorker() { Stop(); }

void UcxWorker::Post(absl::AnyInvocable<void(bool live) &&> op) {
  {
    MutexLock lock(&mu_);
    if (!exited_) {
      ops_.push_back(std::move(op));
      const uint64_t one = 1;
      // A full eventfd counter still wakes the poll, so a failed write is harmless.
      (void)!::write(wake_fd_, &one, sizeof(one));
      return;
    }
  }
  std::move(op)(false);
}

void UcxWorker::Stop() {
  MutexLock stop_lock(&stop_mu_);
  if (stopped_) return;
  {
    MutexLock lock(&mu_);
    stop_requested_ = true;
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
  }
  thread_.join();
  ucp_cleanup(context_);
  context_ = nullptr;
  ::close(wake_fd_);
  stopped_ = true;
}

void UcxWorker::Loop() {
  while (true) {
    std::vector<absl::AnyInvocable<void(bool) &&>> ops;
    {
      MutexLock lock(&mu_);
      ops.swap(ops_);
      if (ops.empty() && stop_requested_) {
        exited_ = true;  // later Posts run inline with live=false
        break;
      }
    }
    for (auto& op : ops) std::move(op)(true);
    ops.clear();
    while (ucp_worker_progress(worker_) != 0) {
    }
    CloseFailedEndpoints();
    ReapClosing(/*wait=*/false);
    {
      MutexLock lock(&mu_);
      if (!ops_.empty() || stop_requested_) continue;
    }
    if (event_fd_ >= 0) {
      const ucs_status_t st = ucp_worker_arm(worker_);
      if (st == UCS_ERR_BUSY) continue;
    }
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {event_fd_, POLLIN, 0}};
    const int rc = ::poll(fds, event_fd_ >= 0 ? 2 : 1, event_fd_ >= 0 ? kPollTimeoutMs : 1);
    if (rc > 0 && (fds[0].revents & POLLIN) != 0) {
      uint64_t drained = 0;
      (void)!::read(wake_fd_, &drained, sizeof(drained));
    }
  }
  // Teardown, still on the progress thread.
  CloseAllEndpoints();
  CloseFailedEndpoints();
  ReapClosing(/*wait=*/true);
  for (auto& [id, registration] : registrations_) ucp_mem_unmap(context_, registration->memh);
  registrations_.clear();
  ucp_worker_destroy(worker_);
  worker_ = nullptr;
}

absl::StatusOr<const UcxWorker::Registration*> UcxWorker::Register(
    SegmentId id, std::shared_ptr<SegmentBuffer> buffer) {
  auto it = registrations_.find(id);
  if (it != registrations_.end()) {
    if (it->second->buffer == buffer) return it->second.get();
    Unregister(id);  // the segment was re-created with new memory
  }
  if (registrations_.size() >= options_.registrations_max) {
    return absl::ResourceExhaustedError(
        absl::StrCat("UCX registrations_max=", options_.registrations_max, " reached"));
  }
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = buffer->data();
  params.length = buffer->size_bytes();
  auto registration = std::make_unique<Registration>();
  ucs_status_t st = ucp_mem_map(context_, &params, &registration->memh);
  if (st != UCS_OK) return UcsToStatus(st, "ucp_mem_map");
  void* packed = nullptr;
  size_t packed_bytes = 0;
  st = ucp_rkey_pack(context_, registration->memh, &packed, &packed_bytes);
  if (st != UCS_OK) {
    ucp_mem_unmap(context_, registration->memh);
    return UcsToStatus(st, "ucp_rkey_pack");
  }
  registration->packed_rkey.assign(static_cast<const char*>(packed), packed_bytes);
  ucp_rkey_buffer_release(packed);
  registration->buffer = std::move(buffer);
  const Registration* raw = registration.get();
  registrations_.emplace(id, std::move(registration));
  return raw;
}

void UcxWorker::Unregister(SegmentId id) {
  auto it = registrations_.find(id);
  if (it == registrations_.end()) return;
  ucp_mem_unmap(context_, it->second->memh);
  registrations_.erase(it);
}

absl::StatusOr<ucp_ep_h> UcxWorker::Endpoint(const std::string& remote_address) {
  auto it = endpoints_.find(remote_address);
  if (it != endpoints_.end()) return it->second->ep;
  if (endpoints_.size() >= options_.endpoints_max) {
    return absl::ResourceExhaustedError(
        absl::StrCat("UCX endpoints_max=", options_.endpoints_max, " reached"));
  }
  auto entry = std::make_unique<EndpointEntry>();
  entry->owner = this;
  entry->key = remote_address;
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(entry->key.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &UcxWorker::OnEndpointError;
  params.err_handler.arg = entry.get();
  const ucs_status_t st = ucp_ep_create(worker_, &params, &entry->ep);
  if (st != UCS_OK) return UcsToStatus(st, "ucp_ep_create");
  ucp_ep_h ep = entry->ep;
  endpoints_.emplace(remote_address, std::move(entry));
  return ep;
}

void UcxWorker::OnEndpointError(void* arg, ucp_ep_h /*ep*/, ucs_status_t /*status*/) {
  auto* entry = static_cast<EndpointEntry*>(arg);
  UcxWorker* self = entry->owner;
  // Runs inside ucp_worker_progress: only move the entry aside here, close it
  // after progress returns.
  auto it = self->endpoints_.find(entry->key);
  if (it != self->endpoints_.end() && it->second.get() == entry) {
    self->failed_.push_back(std::move(it->second));
    self->endpoints_.erase(it);
  }
}

void UcxWorker::CloseEndpoint(std::unique_ptr<EndpointEntry> entry) {
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  params.flags = UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t request = ucp_ep_close_nbx(entry->ep, &params);
  if (request != nullptr && !UCS_PTR_IS_ERR(request)) {
    closing_.emplace_back(request, std::move(entry));
  }
}

void UcxWorker::CloseFailedEndpoints() {
  std::vector<std::unique_ptr<EndpointEntry>> failed;
  failed.swap(failed_);
  for (auto& entry : failed) CloseEndpoint(std::move(entry));
}

void UcxWorker::CloseAllEndpoints() {
  std::map<std::string, std::unique_ptr<EndpointEntry>> all;
  all.swap(endpoints_);
  for (auto& [key, entry] : all) CloseEndpoint(std::move(entry));
}

void UcxWorker::ReapClosing(bool wait) {
  while (true) {
    for (auto it = closing_.begin(); it != closing_.end();) {
      if (ucp_request_check_status(it->first) != UCS_INPROGRESS) {
        ucp_request_free(it->first);
        it = closing_.erase(it);
      } else {
        ++it;
      }
    }
    if (!wait || closing_.empty()) return;
    ucp_worker_progress(worker_);
    CloseFailedEndpoints();
  }
}

}  // namespace heatsink::runtime
