// File: runtime/rpc/read_access.h
//
// A store's read rules (issue 32; docs/runtime.md, "Who may read a range"):
// the ReadGate both of its data services ask (the framed TCP/TLS endpoint and
// the gRPC store service) when the store requires client certificates. A
// reader is the client its verified certificate proves (the SPIFFE URI SAN of
// certificate_identity.h, under the store's trust domain), and it may read
// [offset, offset + size) of a segment when
//
//   1. it is the store itself (the owner of every segment the store serves);
//   2. or the read carries a copy lease that the master confirms
//      (Master::CheckCopyLease): live, held by this reader (the copy's
//      source store or the owner of its target segment), naming this
//      segment and a source range that contains the read. A confirmation is
//      reused for the same read until the lease's expiry, at most
//      lease_answer_ttl_ms (a revoked lease is seen within that bound);
//   3. or the range lies wholly within objects of the store's manifest (the
//      replicas the master recorded on this store's segments, complete or
//      not) that all belong to one tenant, and the reader belongs to it: the
//      tenant its certificate names, else the tenant the store's --tenant
//      bindings give it, else the default tenant.
//
// Anything else is PERMISSION_DENIED: a range with bytes outside every
// object, objects of two tenants, another tenant's object, a lease that is
// not live or not the reader's. A reader without a verified certificate, or
// whose certificate's heatsink URI is malformed, is UNAUTHENTICATED.
//
// The manifest reaches the store with FetchTasks, one fetch interval after
// the master records a put (100 ms by default). A read that the manifest does
// not cover waits, once and for at most manifest_wait_ms, for the next fetch
// to be answered, and is then decided on what the manifest holds.
//
// Thread safety: thread-safe; Allow() blocks for at most one master call
// (the RPC deadline) or manifest_wait_ms.
#ifndef HEATSINK_RUNTIME_RPC_READ_ACCESS_H_
#define HEATSINK_RUNTIME_RPC_READ_ACCESS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/env/env.h"
#include "core/master/master_types.h"
#include "core/worker/store_worker.h"
#include "runtime/rpc/certificate_identity.h"
#include "runtime/rpc/tenant_bindings.h"
#include "runtime/transport/read_gate.h"

namespace heatsink::runtime {

struct ReadAccessOptions {
  ClientId owner;  // the store's own client id
  std::string trust_domain = kDefaultTrustDomain;
  // heatsink-store --tenant ID=TENANT, as the master's.
  TenantBindings tenants;
  // How long a read the manifest does not cover waits for the next fetch.
  int64_t manifest_wait_ms = 1'000;
  // Upper bound of how long a confirmed copy lease is reused.
  int64_t lease_answer_ttl_ms = 1'000;
  // Confirmations kept at once; beyond, a read asks the master again.
  size_t lease_answers_max = 4'096;
  // Manifest entries one read may span.
  size_t entries_per_read_max = 1'024;
};

class ReadAccess final : public ReadGate {
 public:
  // Master::CheckCopyLease as the store (GrpcMasterClient::CheckCopyLease).
  using LeaseCheck = std::function<absl::StatusOr<CopyLeaseGrant>(const CopyLeaseQuery&)>;

  // REQUIRES: `env` outlives the gate; a valid owner and trust domain.
  ReadAccess(Env* env, ReadAccessOptions options, LeaseCheck check_lease);
  ReadAccess(const ReadAccess&) = delete;
  ReadAccess& operator=(const ReadAccess&) = delete;

  // The worker whose manifest maps ranges to objects (it starts after the
  // data services; until then every read rule 3 would allow is refused).
  // REQUIRES: `worker` outlives the gate.
  void AttachWorker(StoreWorker* worker) { worker_.store(worker); }

  absl::Status Allow(const ReadPeer& peer, const ReadQuery& query) override;

  // Refusals, all data services together.
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  absl::Status Decide(const ReadPeer& peer, const ReadQuery& query);
  absl::Status CheckLease(ClientId reader, const ReadQuery& query);
  absl::Status CheckTenant(const CertificateIdentity& reader, const ReadQuery& query);
  // The manifest entries overlapping the range, waiting once for a fetch
  // when they do not cover it.
  std::vector<ManifestEntry> Entries(const ReadQuery& query);

  // (lease, reader, segment, offset, size) -> confirmation expiry (ns).
  using LeaseKey = std::tuple<uint64_t, uint64_t, uint64_t, uint64_t, uint64_t>;

  Env* const env_;
  const ReadAccessOptions options_;
  const LeaseCheck check_lease_;
  std::atomic<StoreWorker*> worker_{nullptr};
  std::atomic<uint64_t> refused_{0};
  Mutex mu_;
  std::map<LeaseKey, TimeNs> lease_answers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_RPC_READ_ACCESS_H_
