#include "core/base/check.h"

#include <cstdlib>

#include "absl/base/internal/raw_logging.h"

namespace heatsink {

void CheckFailed(const char* file, int line, const char* condition, absl::string_view detail) {
  // raw logging writes with write(2) to stderr without allocating; it is the
  // process's last word, not a core I/O path.
  ABSL_RAW_LOG(ERROR, "%s:%d: check failed: %s %.*s", file, line, condition,
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

}  // namespace heatsink
