// File: bench/resident_bytes.h
//
// The process's resident memory, for the memory benchmarks: freed heap pages
// are handed back to the system first (malloc_trim), so that garbage left by
// earlier benchmarks neither hides nor absorbs the growth being measured.
//
// Example:
//   const int64_t before = heatsink::ResidentBytes();
//   ... build the structure ...
//   const double per_key = double(heatsink::ResidentBytes() - before) / keys;
#ifndef HEATSINK_BENCH_RESIDENT_BYTES_H_
#define HEATSINK_BENCH_RESIDENT_BYTES_H_

#include <malloc.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>

#include "core/base/check.h"

namespace heatsink {

// Resident bytes (/proc/self/statm) after malloc_trim(0).
inline int64_t ResidentBytes() {
  malloc_trim(0);
  std::ifstream statm("/proc/self/statm");
  int64_t size_pages = 0;
  int64_t resident_pages = 0;
  statm >> size_pages >> resident_pages;
  HS_CHECK_MSG(statm.good(), "cannot read /proc/self/statm");
  return resident_pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace heatsink

#endif  // HEATSINK_BENCH_RESIDENT_BYTES_H_
