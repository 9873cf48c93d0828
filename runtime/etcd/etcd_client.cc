#include "runtime/etcd/etcd_client.h"

#include <chrono>
#include <exception>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/status_macros.h"
#include "etcd/etcd_subset.grpc.pb.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace heatsink::runtime {

namespace pb = ::etcdserverpb;

bool IsEtcdAddress(absl::string_view address) { return absl::StartsWith(address, kEtcdScheme); }

namespace {

absl::Status CheckEndpoint(absl::string_view endpoint) {
  const size_t colon = endpoint.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", endpoint, "' is not host:port"));
  }
  int port = 0;
  if (!absl::SimpleAtoi(endpoint.substr(colon + 1), &port) || port < 1 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", endpoint, "' has no port in 1..65535"));
  }
  return absl::OkStatus();
}

absl::Status EtcdError(const grpc::Status& status, absl::string_view endpoint) {
  const int code = static_cast<int>(status.error_code());
  const absl::StatusCode mapped =
      code >= 0 && code <= 16 ? static_cast<absl::StatusCode>(code) : absl::StatusCode::kUnknown;
  return absl::Status(mapped, absl::StrCat("etcd ", endpoint, ": ", status.error_message()));
}

bool TryNext(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status);
}

}  // namespace

absl::StatusOr<EtcdTarget> ParseEtcdTarget(absl::string_view text, bool scheme_optional) {
  absl::string_view rest = text;
  const bool has_scheme = absl::ConsumePrefix(&rest, kEtcdScheme);
  if (!has_scheme && !scheme_optional) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not etcd://host:port[,host:port][/prefix]"));
  }
  EtcdTarget target;
  const size_t slash = rest.find('/');
  if (slash != absl::string_view::npos) {
    if (!has_scheme) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", text, "': a prefix needs the etcd:// form"));
    }
    const absl::string_view prefix = rest.substr(slash);
    rest = rest.substr(0, slash);
    if (prefix.size() > 1) {
      if (absl::EndsWith(prefix, "/") || absl::StrContains(prefix, "//")) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", text, "': the prefix '", prefix,
                         "' has an empty segment or a trailing '/'"));
      }
      target.prefix = std::string(prefix);
    }
  }
  if (rest.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' names no etcd endpoint"));
  }
  for (absl::string_view endpoint : absl::StrSplit(rest, ',')) {
    if (absl::Status st = CheckEndpoint(endpoint); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("'", text, "': ", st.message()));
    }
    target.endpoints.emplace_back(endpoint);
  }
  return target;
}

std::string LeaderKey(absl::string_view prefix) { return absl::StrCat(prefix, "/master/leader"); }

// One channel per endpoint. A channel whose calls failed with UNAVAILABLE or
// DEADLINE_EXCEEDED is replaced by a fresh one (at most once per
// kRebuildIntervalMs): gRPC 1.51's channel to etcd 3.4 that first connected
// before the member served kept failing its handshakes afterwards, while a
// new channel in the same process connected at once.
struct EtcdClient::Channels {
  static constexpr int64_t kRebuildIntervalMs = 500;
  struct Endpoint {
    std::shared_ptr<pb::KV::Stub> kv;
    std::shared_ptr<pb::Lease::Stub> lease;
    std::chrono::steady_clock::time_point built;
  };

  static absl::StatusOr<Endpoint> Build(const std::string& endpoint) {
    grpc::ChannelArguments args;
    // Each client talks to etcd on its own connection (a stopped etcd must
    // not stall other channels of the process), and comes back soon after a
    // member returns.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 1'000);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1'000);
    std::shared_ptr<grpc::Channel> channel =
        grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args);
    if (channel == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("cannot create a channel to etcd ", endpoint));
    }
    return Endpoint{pb::KV::NewStub(channel), pb::Lease::NewStub(channel),
                    std::chrono::steady_clock::now()};
  }

  Endpoint Get(size_t i) {
    MutexLock lock(&mu);
    return endpoints[i];
  }

  // After a failed call on endpoint i (named `name`).
  void Failed(size_t i, const std::string& name) {
    const auto now = std::chrono::steady_clock::now();
    {
      MutexLock lock(&mu);
      if (now - endpoints[i].built < std::chrono::milliseconds(kRebuildIntervalMs)) return;
      endpoints[i].built = now;
    }
    absl::StatusOr<Endpoint> fresh = Build(name);
    if (!fresh.ok()) return;
    MutexLock lock(&mu);
    endpoints[i] = *std::move(fresh);
  }

  Mutex mu;
  std::vector<Endpoint> endpoints ABSL_GUARDED_BY(mu);
};

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Create(const EtcdClientOptions& options) {
  if (options.endpoints.empty()) return absl::InvalidArgumentError("no etcd endpoint");
  if (options.call_timeout_ms <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd call timeout must be positive, got ", options.call_timeout_ms));
  }
  std::vector<Channels::Endpoint> endpoints;
  for (const std::string& endpoint : options.endpoints) {
    HS_RETURN_IF_ERROR(CheckEndpoint(endpoint));
    HS_ASSIGN_OR_RETURN(Channels::Endpoint built, Channels::Build(endpoint));
    endpoints.push_back(std::move(built));
  }
  auto channels = std::make_unique<Channels>();
  {
    MutexLock lock(&channels->mu);
    channels->endpoints = std::move(endpoints);
  }
  return std::unique_ptr<EtcdClient>(new EtcdClient(options, std::move(channels)));
}

EtcdClient::EtcdClient(EtcdClientOptions options, std::unique_ptr<Channels> channels)
    : endpoints_(std::move(options.endpoints)),
      call_timeout_ms_(options.call_timeout_ms),
      channels_(std::move(channels)) {}

EtcdClient::~EtcdClient() = default;

template <typename Attempt>
auto EtcdClient::OnSomeEndpoint(Attempt attempt) -> decltype(attempt(size_t{0})) {
  size_t first = 0;
  {
    MutexLock lock(&mu_);
    first = current_;
  }
  decltype(attempt(size_t{0})) result = absl::UnavailableError("no etcd endpoint");
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    const size_t index = (first + i) % endpoints_.size();
    try {
      result = attempt(index);
    } catch (const std::exception& e) {
      result = absl::InternalError(absl::StrCat("etcd ", endpoints_[index], ": ", e.what()));
    }
    if (!TryNext(result.status())) {
      MutexLock lock(&mu_);
      current_ = index;
      return result;
    }
    channels_->Failed(index, endpoints_[index]);
  }
  return result;
}

namespace {

void SetDeadline(grpc::ClientContext* ctx, int64_t timeout_ms) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
}

}  // namespace

absl::StatusOr<std::optional<EtcdKeyValue>> EtcdClient::Get(const std::string& key) {
  return OnSomeEndpoint([&](size_t i) -> absl::StatusOr<std::optional<EtcdKeyValue>> {
    grpc::ClientContext ctx;
    SetDeadline(&ctx, call_timeout_ms_);
    pb::RangeRequest req;
    req.set_key(key);
    pb::RangeResponse resp;
    const grpc::Status status = channels_->Get(i).kv->Range(&ctx, req, &resp);
    if (!status.ok()) return EtcdError(status, endpoints_[i]);
    if (resp.kvs_size() == 0) return std::optional<EtcdKeyValue>();
    const pb::KeyValue& kv = resp.kvs(0);
    return std::optional<EtcdKeyValue>(
        EtcdKeyValue{kv.key(), kv.value(), kv.create_revision(), kv.mod_revision(), kv.lease()});
  });
}

absl::StatusOr<int64_t> EtcdClient::Put(const std::string& key, const std::string& value,
                                        int64_t lease) {
  return OnSomeEndpoint([&](size_t i) -> absl::StatusOr<int64_t> {
    grpc::ClientContext ctx;
    SetDeadline(&ctx, call_timeout_ms_);
    pb::PutRequest req;
    req.set_key(key);
    req.set_value(value);
    req.set_lease(lease);
    pb::PutResponse resp;
    const grpc::Status status = channels_->Get(i).kv->Put(&ctx, req, &resp);
    if (!status.ok()) return EtcdError(status, endpoints_[i]);
    return resp.header().revision();
  });
}

absl::StatusOr<int64_t> EtcdClient::Delete(const std::string& key) {
  return OnSomeEndpoint([&](size_t i) -> absl::StatusOr<int64_t> {
    grpc::ClientContext ctx;
    SetDeadline(&ctx, call_timeout_ms_);
    pb::DeleteRangeRequest req;
    req.set_key(key);
    pb::DeleteRangeResponse resp;
    const grpc::Status status = channels_->Get(i).kv->DeleteRange(&ctx, req, &resp);
    if (!status.ok()) return EtcdError(status, endpoints_[i]);
    return resp.deleted();
  });
}

absl::StatusOr<EtcdCreateResult> EtcdClient::CreateIfAbsent(const std::string& key,
                                                            const std::string& value,
                                                            int64_t lease) {
  return OnSomeEndpoint([&](size_t i) -> absl::StatusOr<EtcdCreateResult> {
    grpc::ClientContext ctx;
    SetDeadline(&ctx, call_timeout_ms_);
    pb::TxnRequest req;
    pb::Compare* never_created = req.add_compare();
    never_created->set_result(pb::Compare::EQUAL);
    never_created->set_target(pb::Compare::CREATE);
    never_created->set_key(key);
    never_created->set_create_revision(0);
    pb::PutRequest* put = req.add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value(value);
    put->set_lease(lease);
    pb::TxnResponse resp;
    const grpc::Status status = channels_->Get(i).kv->Txn(&ctx, req, &resp);
    if (!status.ok()) return EtcdError(status, endpoints_[i]);
    return EtcdCreateResult{resp.succeeded(), resp.header().revision()};
  });
}

absl::StatusOr<EtcdLease> EtcdClient::GrantLease(int64_t ttl_sec) {
  return OnSomeEndpoint([&](size_t i) -> absl::StatusOr<EtcdLease> {
    grpc::ClientContext ctx;
    SetDeadline(&ctx, call_timeout_ms_);
    pb::LeaseGrantRequest req;
    req.set_ttl(ttl_sec);
    pb::LeaseGrantResponse resp;
    const grpc::Status status = channels_->Get(i).lease->LeaseGrant(&ctx, req, &resp);
    if (!status.ok()) return EtcdError(status, endpoints_[i]);
    if (!resp.error().empty() || resp.id() == 0) {
      return absl::UnavailableError(
          absl::StrCat("etcd ", endpoints_[i], ": lease not granted: ", resp.error()));
    }
    return EtcdLease{resp.id(), resp.ttl()};
  });
}

absl::Status EtcdClient::RevokeLease(int64_t lease) {
  return OnSomeEndpoint([&](size_t i) -> absl::StatusOr<bool> {
           grpc::ClientContext ctx;
           SetDeadline(&ctx, call_timeout_ms_);
           pb::LeaseRevokeRequest req;
           req.set_id(lease);
           pb::LeaseRevokeResponse resp;
           const grpc::Status status = channels_->Get(i).lease->LeaseRevoke(&ctx, req, &resp);
           // etcd answers NOT_FOUND for a lease already gone: revoked either way.
           if (!status.ok() && status.error_code() != grpc::StatusCode::NOT_FOUND) {
             return EtcdError(status, endpoints_[i]);
           }
           return true;
         })
      .status();
}

absl::StatusOr<int64_t> EtcdClient::KeepAliveOnce(int64_t lease) {
  return OnSomeEndpoint([&](size_t i) -> absl::StatusOr<int64_t> {
    grpc::ClientContext ctx;
    SetDeadline(&ctx, call_timeout_ms_);
    std::unique_ptr<grpc::ClientReaderWriter<pb::LeaseKeepAliveRequest, pb::LeaseKeepAliveResponse>>
        stream = channels_->Get(i).lease->LeaseKeepAlive(&ctx);
    pb::LeaseKeepAliveRequest req;
    req.set_id(lease);
    pb::LeaseKeepAliveResponse resp;
    const bool answered = stream->Write(req) && stream->Read(&resp);
    stream->WritesDone();
    const grpc::Status status = stream->Finish();
    if (!answered) {
      return EtcdError(status.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                                  "keep-alive stream ended without an answer")
                                   : status,
                       endpoints_[i]);
    }
    if (resp.ttl() <= 0) {
      return absl::NotFoundError(
          absl::StrCat("etcd ", endpoints_[i], ": lease ", lease, " expired or revoked"));
    }
    return resp.ttl();
  });
}

}  // namespace heatsink::runtime
