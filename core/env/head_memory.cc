#include "core/env/head_memory.h"

#include "absl/strings/str_cat.h"

namespace heatsink {

absl::Status CheckMemoryRange(int region, int region_count, uint64_t region_bytes,
                              uint64_t offset, uint64_t size_bytes) {
  if (region < 0 || region >= region_count) {
    return absl::OutOfRangeError(
        absl::StrCat("head memory: region ", region, " does not exist (", region_count,
                     " regions)"));
  }
  if (offset > region_bytes || size_bytes > region_bytes - offset) {
    return absl::OutOfRangeError(absl::StrCat("head memory: range [", offset, ", +", size_bytes,
                                              ") outside region ", region, " of ",
                                              region_bytes, " bytes"));
  }
  return absl::OkStatus();
}

}  // namespace heatsink
