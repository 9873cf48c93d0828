// File: core/worker/local_master_client.h
//
// An in-process MasterClient over a MasterEndpoint (a ReplicatedMaster):
// each call is posted to the Executor, runs on the endpoint there, and hands
// the result to `done` in the same posted work, so no caller ever re-enters
// itself through a callback. No latency is modelled (the simulator's
// SimMasterClient does that over the same adapter, MasterEndpointClient).
//
// Thread safety: as the Executor. REQUIRES: the endpoint and executor
// outlive every posted call.
#ifndef HEATSINK_CORE_WORKER_LOCAL_MASTER_CLIENT_H_
#define HEATSINK_CORE_WORKER_LOCAL_MASTER_CLIENT_H_

#include <utility>

#include "core/base/check.h"
#include "core/env/executor.h"
#include "core/master/master_endpoint.h"
#include "core/worker/master_endpoint_client.h"

namespace heatsink {

// MasterEndpointClient's Transport for LocalMasterClient.
class ExecutorCallTransport {
 public:
  ExecutorCallTransport(MasterEndpoint* master, Executor* executor)
      : master_(master), executor_(executor) {
    HS_CHECK(master_ != nullptr && executor_ != nullptr);
  }

  template <typename Result, typename Run, typename Done>
  void Call(Run run, Done done) {
    executor_->Post([m = master_, run = std::move(run), done = std::move(done)]() mutable {
      std::move(done)(run(*m));
    });
  }

 private:
  MasterEndpoint* const master_;
  Executor* const executor_;
};

class LocalMasterClient final : public MasterEndpointClient<ExecutorCallTransport> {
 public:
  LocalMasterClient(MasterEndpoint* master, Executor* executor)
      : MasterEndpointClient(master, executor) {}
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_WORKER_LOCAL_MASTER_CLIENT_H_
