// File: core/base/check.h
//
// Always-on checks for programmer errors: HS_CHECK(cond), HS_CHECK_MSG(cond,
// detail) and HS_CHECK_OK(status). A failed check writes the file, line,
// condition and detail to stderr and aborts. Operating errors (bad input,
// exhausted limits, races with other clients) are never checks: they return
// absl::Status.
//
// The message is written by CheckFailed with Abseil's raw logging (a write(2)
// that does not allocate): the process's last word, not a core I/O path.
// There is no failure handler to install; a test expects a failed check with
// EXPECT_DEATH.
#ifndef HEATSINK_CORE_BASE_CHECK_H_
#define HEATSINK_CORE_BASE_CHECK_H_

#include "absl/strings/string_view.h"

namespace heatsink {

// Called with a formatted message just before abort(). Never returns.
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition,
                              absl::string_view detail);

}  // namespace heatsink

#define HS_CHECK(cond)                                          \
  do {                                                          \
    if (!(cond)) [[unlikely]] {                                 \
      ::heatsink::CheckFailed(__FILE__, __LINE__, #cond, "");   \
    }                                                           \
  } while (false)

#define HS_CHECK_MSG(cond, detail)                                  \
  do {                                                              \
    if (!(cond)) [[unlikely]] {                                     \
      ::heatsink::CheckFailed(__FILE__, __LINE__, #cond, (detail)); \
    }                                                               \
  } while (false)

#define HS_CHECK_OK(expr)                                                         \
  do {                                                                            \
    const ::absl::Status hs_check_ok_status_ = (expr);                            \
    if (!hs_check_ok_status_.ok()) [[unlikely]] {                                 \
      ::heatsink::CheckFailed(__FILE__, __LINE__, #expr,                          \
                              hs_check_ok_status_.ToString());                    \
    }                                                                             \
  } while (false)

#endif  // HEATSINK_CORE_BASE_CHECK_H_
