// File: runtime/numa/mempolicy.h
//
// Thin, status-returning wrappers over the Linux NUMA memory-policy calls
// (mbind, set_mempolicy, get_mempolicy, move_pages) and CPU affinity, as
// ADR-0019 uses them:
//   - head regions are bound to their node with mbind(MPOL_BIND);
//   - the serving process takes a strict inherited default,
//     set_mempolicy(MPOL_BIND | MPOL_F_STATIC_NODES), before the index and
//     the workers exist, so every ordinary allocation is node-local;
//   - per-node promotion workers bind their thread (CPUs and memory) to their
//     node.
//
// Two kernel details handled here once:
//   - Debian 12's numaif.h lacks MPOL_F_STATIC_NODES (kernel value 1 << 15).
//   - The kernel reads one bit fewer than `maxnode` says, so a mask for node
//     N passes maxnode >= N + 2.
//
// Policies set with set_mempolicy apply to the calling thread and to threads
// it creates afterwards; that is why the serving process sets its policy
// before starting any thread.
#ifndef HEATSINK_RUNTIME_NUMA_MEMPOLICY_H_
#define HEATSINK_RUNTIME_NUMA_MEMPOLICY_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace heatsink::runtime {

inline constexpr int kMpolBind = 2;                 // MPOL_BIND
inline constexpr int kMpolFStaticNodes = 1 << 15;   // MPOL_F_STATIC_NODES

// A memory policy as get_mempolicy reports it: the mode with its flags ORed
// in (e.g. kMpolBind | kMpolFStaticNodes), and the node set.
struct MemPolicy {
  int mode = 0;
  std::vector<int> nodes;  // ascending
};

// The highest node id the kernel may know (numa_max_possible_node()).
int MaxPossibleNode();
// True when the kernel has NUMA policy support (get_mempolicy works).
bool NumaAvailable();

// mbind(MPOL_BIND) of [addr, addr + len) to `node`. `addr` page-aligned.
// INVALID_ARGUMENT for a node the kernel does not have online or with no
// memory; the error names the node.
[[nodiscard]] absl::Status BindRange(void* addr, size_t len, int node);

// mbind(MPOL_BIND, MPOL_MF_MOVE | MPOL_MF_STRICT) of [addr, addr + len) to
// `node`: the range's pages already in memory move there now (this process's
// own pages; the kernel reports EIO for one it cannot move), later ones are
// taken there. `addr` page-aligned. INVALID_ARGUMENT for a node the kernel
// does not have; the error names the node.
[[nodiscard]] absl::Status MoveRangeToNode(void* addr, size_t len, int node);

// set_mempolicy(MPOL_BIND | MPOL_F_STATIC_NODES, {node}) for the calling
// thread (and the threads it creates afterwards).
[[nodiscard]] absl::Status SetThreadBindPolicy(int node);

// get_mempolicy of the calling thread.
[[nodiscard]] absl::StatusOr<MemPolicy> ThreadMemPolicy();
// get_mempolicy(MPOL_F_ADDR) of the mapping holding `addr`.
[[nodiscard]] absl::StatusOr<MemPolicy> AddressMemPolicy(const void* addr);

// The node of every page of [addr, addr + len) (move_pages query with no
// target nodes; nothing moves). A page that is not resident reports a
// negative errno (e.g. -ENOENT) in its place.
[[nodiscard]] absl::StatusOr<std::vector<int>> PageNodes(const void* addr, size_t len);

// Restricts the calling thread to `cpus` (sched_setaffinity).
// INVALID_ARGUMENT when the set is empty or none of them is usable.
[[nodiscard]] absl::Status PinThreadToCpus(const std::vector<int>& cpus);

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_NUMA_MEMPOLICY_H_
