#include "runtime/numa/bound_mapping.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/numa/mempolicy.h"

namespace heatsink::runtime {
namespace {

uint64_t RoundUp(uint64_t value, uint64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// Faults every page in, writable, under the range's (already set) policy.
// MADV_POPULATE_WRITE reports a node that cannot supply the pages as an
// error; touching them instead would end in SIGBUS or the OOM killer.
absl::Status Populate(uint8_t* data, uint64_t bytes, int node, bool huge_pages) {
  if (madvise(data, bytes, MADV_POPULATE_WRITE) == 0) return absl::OkStatus();
  const int err = errno;
  // Touching huge pages the node cannot supply would raise SIGBUS, so only
  // ordinary pages fall back to touching.
  if (err == EINVAL && !huge_pages) {
    // A kernel before 5.14: no MADV_POPULATE_WRITE; touch one byte per page.
    for (uint64_t off = 0; off < bytes; off += 4096) data[off] = 0;
    return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(absl::StrCat("NUMA node ", node, " cannot supply ",
                                                   bytes >> 20, " MiB: ", std::strerror(err)));
}

// Maps `size_bytes` (rounded up to 2 MiB) at a 2 MiB aligned address, then
// binds every (offset, bytes, node) range of `binds`, populates and locks.
struct BindRun {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  int node = 0;
};

absl::StatusOr<BoundMapping> MapAndBind(uint64_t size_bytes, absl::Span<const BindRun> binds,
                                        const NumaMemoryOptions& options) {
  BoundMapping region;
  region.size_bytes = size_bytes;
  region.mapped_bytes = RoundUp(size_bytes, kHugePageBytes);
  region.node = binds.front().node;
  if (options.huge_pages) {
    void* p = mmap(nullptr, region.mapped_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      return absl::ResourceExhaustedError(
          absl::StrCat("mmap(MAP_HUGETLB) of ", region.mapped_bytes >> 20,
                       " MiB failed: ", std::strerror(errno), " (reserve 2 MiB huge pages)"));
    }
    region.data = static_cast<uint8_t*>(p);
  } else {
    // Over-allocate by one huge page and trim, for a 2 MiB aligned start.
    const uint64_t span = region.mapped_bytes + kHugePageBytes;
    void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      return absl::ResourceExhaustedError(absl::StrCat("mmap of ", region.mapped_bytes >> 20,
                                                       " MiB failed: ", std::strerror(errno)));
    }
    const uintptr_t raw = reinterpret_cast<uintptr_t>(p);
    const uintptr_t aligned = RoundUp(raw, kHugePageBytes);
    if (aligned > raw) munmap(p, aligned - raw);
    const uintptr_t tail = raw + span - (aligned + region.mapped_bytes);
    if (tail > 0) munmap(reinterpret_cast<void*>(aligned + region.mapped_bytes), tail);
    region.data = reinterpret_cast<uint8_t*>(aligned);
  }
  // From here on the mapping is ours: release it on every error path.
  auto unmap = [&region] { munmap(region.data, region.mapped_bytes); };
  for (size_t i = 0; i < binds.size(); ++i) {
    // The last run also covers the rounding up to 2 MiB.
    const uint64_t bytes =
        i + 1 == binds.size() ? region.mapped_bytes - binds[i].offset : binds[i].bytes;
    if (absl::Status s = BindRange(region.data + binds[i].offset, bytes, binds[i].node); !s.ok()) {
      unmap();
      return s;
    }
  }
  for (const BindRun& run : binds) {
    if (absl::Status s =
            Populate(region.data + run.offset, run.bytes, run.node, options.huge_pages);
        !s.ok()) {
      unmap();
      return s;
    }
  }
  if (options.mlock) {
    if (mlock(region.data, region.mapped_bytes) != 0) {
      const int err = errno;
      unmap();
      return absl::ResourceExhaustedError(absl::StrCat("mlock of ", region.mapped_bytes >> 20,
                                                       " MiB failed: ", std::strerror(err),
                                                       " (raise RLIMIT_MEMLOCK)"));
    }
    region.locked = true;
  }
  return region;
}

}  // namespace

absl::StatusOr<BoundMapping> MapBoundMemory(uint64_t size_bytes, int node,
                                            const NumaMemoryOptions& options) {
  if (size_bytes == 0) return absl::InvalidArgumentError("bound memory: 0 bytes");
  const BindRun run{0, RoundUp(size_bytes, kHugePageBytes), node};
  return MapAndBind(size_bytes, absl::MakeConstSpan(&run, 1), options);
}

absl::StatusOr<BoundMapping> MapBoundBlocks(uint64_t block_bytes, absl::Span<const int> block_nodes,
                                            const NumaMemoryOptions& options) {
  if (block_nodes.empty()) return absl::InvalidArgumentError("bound memory: no blocks");
  const uint64_t page = options.huge_pages ? kHugePageBytes : 4096;
  if (block_bytes == 0 || block_bytes % page != 0) {
    return absl::InvalidArgumentError(absl::StrCat("bound memory: block of ", block_bytes,
                                                   " bytes is not a multiple of the ", page,
                                                   "-byte page"));
  }
  std::vector<BindRun> runs;
  for (size_t i = 0; i < block_nodes.size(); ++i) {
    if (!runs.empty() && runs.back().node == block_nodes[i]) {
      runs.back().bytes += block_bytes;
    } else {
      runs.push_back(BindRun{i * block_bytes, block_bytes, block_nodes[i]});
    }
  }
  return MapAndBind(block_bytes * block_nodes.size(), runs, options);
}

void UnmapBoundMemory(BoundMapping& mapping) {
  if (mapping.data == nullptr) return;
  if (mapping.locked) munlock(mapping.data, mapping.mapped_bytes);
  munmap(mapping.data, mapping.mapped_bytes);
  mapping = BoundMapping{};
}

}  // namespace heatsink::runtime
