// File: tests/core/replication/replicated_master_test_peer.h
//
// Tests reach the MasterService under a ReplicatedMaster, to set up states
// that no endpoint or operator call makes (foreign copy tasks, a leased task
// without its lease, ...) and to read it as the master's own tests do.
#ifndef HEATSINK_TESTS_CORE_REPLICATION_REPLICATED_MASTER_TEST_PEER_H_
#define HEATSINK_TESTS_CORE_REPLICATION_REPLICATED_MASTER_TEST_PEER_H_

#include "core/master/master_service.h"
#include "core/replication/replicated_master.h"

namespace heatsink {

class ReplicatedMasterTestPeer {
 public:
  static MasterService& master(ReplicatedMaster& m) { return *m.master_; }
};

}  // namespace heatsink

#endif  // HEATSINK_TESTS_CORE_REPLICATION_REPLICATED_MASTER_TEST_PEER_H_
