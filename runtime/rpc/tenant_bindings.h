// File: runtime/rpc/tenant_bindings.h
//
// Which tenant each caller may name, enforced by the master's gRPC server at
// the RPC boundary. The operator binds client ids to tenants
// (heatsink-master --tenant ID=TENANT, repeatable). With at least one binding
// the master is in bound mode:
//
//   - every call that names objects (PutStart, PutEnd, PutRevoke, the three
//     BatchPut calls, GetReplicaList, BatchGetReplicaList, Remove) must
//     carry the caller's identity (UNAUTHENTICATED otherwise);
//   - a caller bound to no tenant may name no object, and a caller may name
//     only its own tenant's objects: anything else is PERMISSION_DENIED
//     (not NOT_FOUND: tenant names are configuration, not secrets, and the
//     caller learns only that it asked outside its tenant), and the call
//     changes nothing (a batch with one foreign name is refused whole);
//   - a read's `requester` must be the caller itself, so nobody feeds the
//     heat window in another client's name.
//
// Without bindings (the default) the master trusts its callers, as before:
// any caller may name any tenant. Tenant names are normalised (empty = the
// default tenant). The identity is the `heatsink-client-id` metadata; give the
// master `--tls-client-ca` so that only holders of a certificate signed by
// that CA can call at all.
//
// Thread safety: immutable once built; safe to share.
#ifndef HEATSINK_RUNTIME_RPC_TENANT_BINDINGS_H_
#define HEATSINK_RUNTIME_RPC_TENANT_BINDINGS_H_

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model/ids.h"

namespace heatsink::runtime {

inline constexpr size_t kTenantBindingsMax = 65'536;

class TenantBindings {
 public:
  // Binds `client` to `tenant`. INVALID_ARGUMENT for client 0,
  // ALREADY_EXISTS when `client` is bound to another tenant,
  // RESOURCE_EXHAUSTED beyond kTenantBindingsMax.
  [[nodiscard]] absl::Status Bind(ClientId client, absl::string_view tenant);
  // Parses "CLIENT_ID=TENANT" (the --tenant flag) and binds it.
  [[nodiscard]] absl::Status BindFromFlag(absl::string_view text);

  bool enabled() const { return !tenants_.empty(); }
  size_t size() const { return tenants_.size(); }
  // The bound tenants (normalised), sorted, without repeats.
  std::vector<std::string> Tenants() const;

  // OK when `caller` may name objects of `tenant`; PERMISSION_DENIED when
  // bindings are enabled and `caller` is not bound to `tenant`.
  [[nodiscard]] absl::Status Check(ClientId caller, absl::string_view tenant) const;

 private:
  std::map<uint64_t, std::string> tenants_;  // client id -> normalised tenant
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_RPC_TENANT_BINDINGS_H_
