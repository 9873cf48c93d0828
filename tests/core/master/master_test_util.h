// Shared helpers for the master tests: a MasterService on a ManualEnv with
// TestMin-sized knobs, client/segment setup, and status assertions.
#ifndef HEATSINK_TESTS_CORE_MASTER_MASTER_TEST_UTIL_H_
#define HEATSINK_TESTS_CORE_MASTER_MASTER_TEST_UTIL_H_

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/env/manual_env.h"
#include "core/master/master_observers.h"
#include "core/master/master_service.h"
#include "gtest/gtest.h"

namespace heatsink::testing {

inline absl::Status ToStatus(const absl::Status& s) { return s; }
template <typename T>
absl::Status ToStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

#define HS_EXPECT_OK(expr)                                             \
  do {                                                                 \
    const ::absl::Status hs_s_ = ::heatsink::testing::ToStatus(expr);  \
    EXPECT_TRUE(hs_s_.ok()) << hs_s_;                                  \
  } while (false)
#define HS_ASSERT_OK(expr)                                             \
  do {                                                                 \
    const ::absl::Status hs_s_ = ::heatsink::testing::ToStatus(expr);  \
    ASSERT_TRUE(hs_s_.ok()) << hs_s_;                                  \
  } while (false)
#define HS_EXPECT_CODE(expr, code_name)                                \
  do {                                                                 \
    const ::absl::Status hs_s_ = ::heatsink::testing::ToStatus(expr);  \
    EXPECT_EQ(hs_s_.code(), ::absl::StatusCode::code_name) << hs_s_;   \
  } while (false)

// TestMin with enough room for multi-object scenarios.
inline MasterKnobs TestKnobs() {
  MasterKnobs k = MasterKnobs::TestMin();
  k.objects_max = 64;
  k.segments_max = 8;
  k.clients_max = 8;
  k.segments_per_client_max = 4;
  k.tasks_max = 8;
  return k;
}

inline ObjectName Name(const std::string& key, const std::string& tenant = "") {
  return ObjectName{tenant, key};
}

// Records every removal the master reports.
class RemovalLog final : public ReplicaRemovalObserver {
 public:
  void OnReplicaRemoved(const ReplicaRemoval& r) override { removals.push_back(r); }
  std::vector<ReplicaRemoval> removals;
};

// Records every read the master reports.
class ReadLog final : public ReadObserver {
 public:
  struct Entry {
    std::string tenant, key, domain;
    ClientId requester;
    Version version;
    size_t readable;
  };
  void OnKeyRead(const ReadObservation& r) override {
    entries.push_back(Entry{std::string(r.tenant), std::string(r.key),
                            std::string(r.requester_domain), r.requester, r.version,
                            r.readable_replicas.size()});
  }
  std::vector<Entry> entries;
};

class MasterHarness {
 public:
  explicit MasterHarness(const MasterKnobs& knobs = TestKnobs(), uint64_t seed = 7)
      : env_(seed), master_(std::make_unique<MasterService>(env_.env(), knobs)) {}

  ManualEnv& env() { return env_; }
  MasterService& master() { return *master_; }

  absl::Status AddClient(uint64_t client, const std::string& host = "host",
                         const std::string& domain = "") {
    clients_.insert(client);
    return master_->RegisterClient(RegisterClientRequest{ClientId(client), host, domain});
  }

  absl::Status Mount(uint64_t client, uint64_t segment, uint64_t capacity,
                     const std::string& host = "host", const std::string& domain = "",
                     bool allocatable = true) {
    MountSegmentRequest req;
    req.segment_id = SegmentId(segment);
    req.name = "seg" + std::to_string(segment);
    req.host = host;
    req.domain = domain;
    req.capacity_bytes = capacity;
    req.transport_endpoint = "tcp://" + host + ":" + std::to_string(segment);
    req.allocatable = allocatable;
    return master_->MountSegment(ClientId(client), req);
  }

  // A client with one segment of its own (client id == segment id).
  absl::Status AddStore(uint64_t id, uint64_t capacity, const std::string& host = "",
                        const std::string& domain = "") {
    const std::string h = host.empty() ? "host" + std::to_string(id) : host;
    if (absl::Status s = AddClient(id, h, domain); !s.ok()) return s;
    return Mount(id, id, capacity, h, domain);
  }

  absl::StatusOr<PutStartResponse> Start(const std::string& key, uint64_t size,
                                         uint32_t replicas = 1,
                                         std::vector<SegmentId> preferred = {},
                                         uint64_t writer = 100, const std::string& tenant = "") {
    PutStartRequest req;
    req.name = Name(key, tenant);
    req.size_bytes = size;
    req.replica_num = replicas;
    req.preferred_segments = std::move(preferred);
    return master_->PutStart(ClientId(writer), req);
  }

  // PutStart + PutEnd; returns the version.
  absl::StatusOr<Version> Put(const std::string& key, uint64_t size, uint32_t replicas = 1,
                              std::vector<SegmentId> preferred = {},
                              const std::string& tenant = "") {
    absl::StatusOr<PutStartResponse> started =
        Start(key, size, replicas, std::move(preferred), 100, tenant);
    if (!started.ok()) return started.status();
    absl::Status ended =
        master_->PutEnd(ClientId(100), PutEndRequest{Name(key, tenant), started->version});
    if (!ended.ok()) return ended;
    return started->version;
  }

  absl::StatusOr<GetReplicaListResponse> Get(const std::string& key,
                                             const std::string& tenant = "",
                                             const std::string& domain = "") {
    return master_->GetReplicaList(GetReplicaListRequest{Name(key, tenant), ClientId(100), domain});
  }

  // Advances time in steps, heartbeating every registered client between
  // steps so that only clients the test stops heartbeating die.
  void Advance(DurationNs d) {
    const DurationNs step = MsToNs(250);
    while (d > 0) {
      const DurationNs s = std::min(d, step);
      env_.AdvanceBy(s);
      d -= s;
      for (uint64_t c : clients_) (void)master_->Heartbeat(ClientId(c));
    }
  }
  void StopHeartbeats(uint64_t client) { clients_.erase(client); }

  std::vector<SegmentId> SegmentsOf(const GetReplicaListResponse& r) {
    std::vector<SegmentId> out;
    for (const ReplicaDescriptor& d : r.replicas) out.push_back(d.segment_id);
    return out;
  }

 private:
  ManualEnv env_;
  std::set<uint64_t> clients_;
  std::unique_ptr<MasterService> master_;
};

}  // namespace heatsink::testing

#endif  // HEATSINK_TESTS_CORE_MASTER_MASTER_TEST_UTIL_H_
