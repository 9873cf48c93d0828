// File: sim/malloc_tuning.h
//
// The simulator's allocator settings. A simulation allocates and frees
// millions of small records (events, puts, flows, object metadata) over a
// heap of hundreds of MB; with glibc's defaults a heap that shrinks after a
// burst gives its pages back to the kernel and faults them in again at the
// next. The heap here keeps its top (trim threshold 1 GiB, top pad 64 MiB,
// mmap threshold 32 MiB). Transparent huge pages for the heap
// (glibc.malloc.hugetlb=1), part of this set until 2026-12-08, are left
// out: on the 2-core VMs the project is measured on, faulting in a 2 MiB
// page cost up to 30% of a run's time in the kernel's page clearing, and
// the same runs took 0.70-0.80x the time without it (docs/performance.md).
// Outputs do not change: no decision or output depends on where a record
// lives.
//
// glibc reads its tunables once, when a process starts, so the only way for a
// program to choose them is to start again: ReexecWithMallocTunables sets
// GLIBC_TUNABLES to kSimMallocTunables and executes /proc/self/exe with the
// same arguments. It does nothing (the process runs on with glibc's
// defaults) when GLIBC_TUNABLES is already set -- the user's choice, or the
// second start -- when HEATSINK_SIM_MALLOC_TUNING=0, under valgrind (whose
// tools would not follow the exec), or when the exec fails.
//
// Example (first thing in main):
//   heatsink::sim::ReexecWithMallocTunables(argv);
#ifndef HEATSINK_SIM_MALLOC_TUNING_H_
#define HEATSINK_SIM_MALLOC_TUNING_H_

#include <optional>
#include <string>

namespace heatsink::sim {

inline constexpr char kSimMallocTunables[] =
    "glibc.malloc.trim_threshold=1073741824:glibc.malloc.top_pad=67108864:"
    "glibc.malloc.mmap_threshold=33554432";

// The GLIBC_TUNABLES value to start again with, given the environment's
// GLIBC_TUNABLES, HEATSINK_SIM_MALLOC_TUNING and LD_PRELOAD (nullptr when
// unset); nullopt when the process should run on as it is.
std::optional<std::string> MallocTunablesToSet(const char* glibc_tunables,
                                               const char* heatsink_sim_malloc_tuning,
                                               const char* ld_preload);

// See the file comment. Returns only when it does not start again.
// REQUIRES: argv is main's, null-terminated.
void ReexecWithMallocTunables(char** argv);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_MALLOC_TUNING_H_
