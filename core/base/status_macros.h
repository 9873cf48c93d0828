// File: core/base/status_macros.h
//
// Debian 12's Abseil (20220623) has no status macros; these are the project's.
//
// Example:
//   absl::StatusOr<Lease> Grant(...) {
//     HS_RETURN_IF_ERROR(Validate(...));
//     HS_ASSIGN_OR_RETURN(const Segment* target, PickTarget(...));
//     ...
//   }
#ifndef HEATSINK_CORE_BASE_STATUS_MACROS_H_
#define HEATSINK_CORE_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define HS_RETURN_IF_ERROR(expr)                       \
  do {                                                 \
    ::absl::Status hs_status_ = (expr);                \
    if (!hs_status_.ok()) [[unlikely]] return hs_status_; \
  } while (false)

#define HS_STATUS_CONCAT_INNER_(a, b) a##b
#define HS_STATUS_CONCAT_(a, b) HS_STATUS_CONCAT_INNER_(a, b)

#define HS_ASSIGN_OR_RETURN(lhs, expr) \
  HS_ASSIGN_OR_RETURN_IMPL_(HS_STATUS_CONCAT_(hs_statusor_, __LINE__), lhs, expr)

#define HS_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr)   \
  auto statusor = (expr);                                \
  if (!statusor.ok()) [[unlikely]] return statusor.status(); \
  lhs = std::move(statusor).value()

#endif  // HEATSINK_CORE_BASE_STATUS_MACROS_H_
