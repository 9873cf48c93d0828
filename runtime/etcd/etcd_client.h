// File: runtime/etcd/etcd_client.h
//
// A small etcd v3 client over gRPC (proto/etcd/etcd_subset.proto): keys,
// leases and the one transaction leader election needs. Every call carries a
// deadline (EtcdClientOptions::call_timeout_ms); a call that fails with
// UNAVAILABLE or DEADLINE_EXCEEDED is tried on the next endpoint, once per
// endpoint, and the client keeps using the endpoint that answered. Errors are
// absl::Status with gRPC's code and a message naming the endpoint.
//
// Addresses. An etcd target is "host:port[,host:port]" or
// "etcd://host:port[,host:port]/prefix" (the form `--master` takes on stores
// and clients); the prefix (default "/heatsink") roots every Heatsink key.
//
// Example:
//   HS_ASSIGN_OR_RETURN(EtcdTarget target, ParseEtcdTarget("etcd://127.0.0.1:2379/hs"));
//   HS_ASSIGN_OR_RETURN(auto etcd, EtcdClient::Create({.endpoints = target.endpoints}));
//   HS_ASSIGN_OR_RETURN(std::optional<EtcdKeyValue> kv, etcd->Get(LeaderKey(target.prefix)));
//
// Not done: TLS and authentication towards etcd (plaintext, a trusted
// network). Thread-safe.
#ifndef HEATSINK_RUNTIME_ETCD_ETCD_CLIENT_H_
#define HEATSINK_RUNTIME_ETCD_ETCD_CLIENT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/mutex.h"

namespace heatsink::runtime {

inline constexpr char kEtcdScheme[] = "etcd://";
inline constexpr char kDefaultEtcdPrefix[] = "/heatsink";

struct EtcdTarget {
  std::vector<std::string> endpoints;  // host:port, at least one
  std::string prefix = kDefaultEtcdPrefix;  // starts with '/', no trailing '/'
};

// True when `address` names etcd (starts with "etcd://").
bool IsEtcdAddress(absl::string_view address);

// Parses "etcd://host:port[,host:port][/prefix]" or, when `scheme_optional`,
// also the bare "host:port[,host:port]". INVALID_ARGUMENT saying what is
// wrong (an empty host, a port outside 1..65535, an empty list, a prefix
// with an empty segment or a trailing '/').
[[nodiscard]] absl::StatusOr<EtcdTarget> ParseEtcdTarget(absl::string_view text,
                                                         bool scheme_optional = false);

// The key under which the leading master publishes its address.
std::string LeaderKey(absl::string_view prefix);

struct EtcdKeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t lease = 0;
};

struct EtcdLease {
  int64_t id = 0;
  int64_t ttl_sec = 0;  // as granted (etcd may raise a short TTL to its minimum)
};

// The outcome of CreateIfAbsent.
struct EtcdCreateResult {
  bool created = false;
  int64_t revision = 0;  // the store's revision after the transaction
};

struct EtcdClientOptions {
  std::vector<std::string> endpoints;
  // Deadline of each attempt of each call.
  int64_t call_timeout_ms = 1'000;
};

class EtcdClient {
 public:
  // INVALID_ARGUMENT without endpoints or with a non-positive timeout.
  // Channels connect lazily.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<EtcdClient>> Create(
      const EtcdClientOptions& options);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // The key's current value, or nullopt when absent (a linearizable read).
  [[nodiscard]] absl::StatusOr<std::optional<EtcdKeyValue>> Get(const std::string& key);
  // Puts `value` under `key`, attached to `lease` (0: none). Returns the
  // store's revision after the put.
  [[nodiscard]] absl::StatusOr<int64_t> Put(const std::string& key, const std::string& value,
                                            int64_t lease);
  // Deletes `key`; returns how many keys went (0 or 1).
  [[nodiscard]] absl::StatusOr<int64_t> Delete(const std::string& key);
  // One transaction: if `key` has never been created (create_revision == 0),
  // put `value` under it attached to `lease`.
  [[nodiscard]] absl::StatusOr<EtcdCreateResult> CreateIfAbsent(const std::string& key,
                                                                const std::string& value,
                                                                int64_t lease);
  [[nodiscard]] absl::StatusOr<EtcdLease> GrantLease(int64_t ttl_sec);
  // Revokes `lease`: its keys are deleted. OK when it was already gone.
  [[nodiscard]] absl::Status RevokeLease(int64_t lease);
  // One keep-alive of `lease` on its own LeaseKeepAlive stream, bounded by the
  // call deadline. Returns the TTL etcd restarted the lease with; NOT_FOUND
  // when the lease expired or was revoked.
  [[nodiscard]] absl::StatusOr<int64_t> KeepAliveOnce(int64_t lease);

  const std::vector<std::string>& endpoints() const { return endpoints_; }

  struct Channels;

 private:
  EtcdClient(EtcdClientOptions options, std::unique_ptr<Channels> channels);
  // Runs `attempt(endpoint index)` on the current endpoint and, on
  // UNAVAILABLE or DEADLINE_EXCEEDED, on each other one in turn.
  template <typename Attempt>
  auto OnSomeEndpoint(Attempt attempt) -> decltype(attempt(size_t{0}));

  const std::vector<std::string> endpoints_;
  const int64_t call_timeout_ms_;
  const std::unique_ptr<Channels> channels_;
  mutable Mutex mu_;
  size_t current_ ABSL_GUARDED_BY(mu_) = 0;  // the endpoint that answered last
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_ETCD_ETCD_CLIENT_H_
