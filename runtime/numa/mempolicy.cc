#include "runtime/numa/mempolicy.h"

#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace heatsink::runtime {
namespace {

static_assert(kMpolBind == MPOL_BIND, "MPOL_BIND differs from the kernel's");
#ifdef MPOL_F_STATIC_NODES
static_assert(kMpolFStaticNodes == MPOL_F_STATIC_NODES, "MPOL_F_STATIC_NODES differs");
#endif

constexpr int kBitsPerWord = static_cast<int>(sizeof(unsigned long) * CHAR_BIT);

// A node mask wide enough for `node` and for every node the kernel may have
// (get_mempolicy rejects a maxnode below the kernel's node count).
struct NodeMask {
  explicit NodeMask(int highest_node) {
    maxnode = static_cast<unsigned long>(std::max(highest_node, MaxPossibleNode()) + 2);
    words.assign((maxnode + kBitsPerWord - 1) / kBitsPerWord, 0);
  }
  void Set(int node) {
    words[node / kBitsPerWord] |= 1UL << (node % kBitsPerWord);
  }
  std::vector<int> Nodes() const {
    std::vector<int> nodes;
    for (size_t w = 0; w < words.size(); ++w) {
      for (int b = 0; b < kBitsPerWord; ++b) {
        if (words[w] & (1UL << b)) nodes.push_back(static_cast<int>(w) * kBitsPerWord + b);
      }
    }
    return nodes;
  }
  std::vector<unsigned long> words;
  unsigned long maxnode = 0;
};

absl::Status NodeError(const char* call, int node, int err) {
  const std::string text = absl::StrCat(call, " to NUMA node ", node, " failed: ",
                                        std::strerror(err));
  if (err == EINVAL || err == ENODEV || err == EXDEV) {
    return absl::InvalidArgumentError(
        absl::StrCat(text, " (the node does not exist, is offline, or has no memory)"));
  }
  if (err == ENOMEM) return absl::ResourceExhaustedError(text);
  if (err == EPERM) return absl::PermissionDeniedError(text);
  return absl::InternalError(text);
}

absl::Status CheckNode(int node) {
  if (node < 0 || node > MaxPossibleNode()) {
    return absl::InvalidArgumentError(absl::StrCat("NUMA node ", node,
                                                   " is outside this kernel's node range 0..",
                                                   MaxPossibleNode()));
  }
  return absl::OkStatus();
}

}  // namespace

int MaxPossibleNode() {
  static const int max_node = numa_max_possible_node();
  return max_node;
}

bool NumaAvailable() { return numa_available() >= 0; }

absl::Status BindRange(void* addr, size_t len, int node) {
  if (absl::Status s = CheckNode(node); !s.ok()) return s;
  NodeMask mask(node);
  mask.Set(node);
  if (mbind(addr, len, MPOL_BIND, mask.words.data(), mask.maxnode, MPOL_MF_STRICT) != 0) {
    return NodeError("mbind(MPOL_BIND)", node, errno);
  }
  return absl::OkStatus();
}

absl::Status MoveRangeToNode(void* addr, size_t len, int node) {
  if (absl::Status s = CheckNode(node); !s.ok()) return s;
  NodeMask mask(node);
  mask.Set(node);
  if (mbind(addr, len, MPOL_BIND, mask.words.data(), mask.maxnode, MPOL_MF_MOVE | MPOL_MF_STRICT) !=
      0) {
    return NodeError("mbind(MPOL_BIND, MPOL_MF_MOVE)", node, errno);
  }
  return absl::OkStatus();
}

absl::Status SetThreadBindPolicy(int node) {
  if (absl::Status s = CheckNode(node); !s.ok()) return s;
  NodeMask mask(node);
  mask.Set(node);
  if (set_mempolicy(kMpolBind | kMpolFStaticNodes, mask.words.data(), mask.maxnode) != 0) {
    return NodeError("set_mempolicy(MPOL_BIND|MPOL_F_STATIC_NODES)", node, errno);
  }
  return absl::OkStatus();
}

absl::StatusOr<MemPolicy> ThreadMemPolicy() {
  NodeMask mask(0);
  int mode = 0;
  if (get_mempolicy(&mode, mask.words.data(), mask.maxnode, nullptr, 0) != 0) {
    return absl::InternalError(absl::StrCat("get_mempolicy: ", std::strerror(errno)));
  }
  return MemPolicy{mode, mask.Nodes()};
}

absl::StatusOr<MemPolicy> AddressMemPolicy(const void* addr) {
  NodeMask mask(0);
  int mode = 0;
  if (get_mempolicy(&mode, mask.words.data(), mask.maxnode, const_cast<void*>(addr),
                    MPOL_F_ADDR) != 0) {
    return absl::InternalError(absl::StrCat("get_mempolicy(MPOL_F_ADDR): ", std::strerror(errno)));
  }
  return MemPolicy{mode, mask.Nodes()};
}

absl::StatusOr<std::vector<int>> PageNodes(const void* addr, size_t len) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(addr) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(addr) + len;
  std::vector<void*> pages;
  for (uintptr_t p = begin; p < end; p += page) pages.push_back(reinterpret_cast<void*>(p));
  std::vector<int> status(pages.size(), 0);
  if (!pages.empty() &&
      move_pages(0, pages.size(), pages.data(), nullptr, status.data(), 0) != 0) {
    return absl::InternalError(absl::StrCat("move_pages (query): ", std::strerror(errno)));
  }
  return status;
}

absl::Status PinThreadToCpus(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  int usable = 0;
  for (int cpu : cpus) {
    if (cpu >= 0 && cpu < CPU_SETSIZE) {
      CPU_SET(cpu, &set);
      ++usable;
    }
  }
  if (usable == 0) return absl::InvalidArgumentError("no CPU to pin the thread to");
  const int err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (err != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sched_setaffinity: ", std::strerror(err), " (cpus not online?)"));
  }
  return absl::OkStatus();
}

}  // namespace heatsink::runtime
