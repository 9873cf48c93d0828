// Helpers shared by the master fuzz targets (fuzz/master.cc and
// fuzz/replicated_master.cc): the small universe of names the decoded
// operations draw from, and input reading with a fixed layout.
#ifndef HEATSINK_FUZZ_FUZZ_UTIL_H_
#define HEATSINK_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include <fuzzer/FuzzedDataProvider.h>

#include "absl/strings/str_cat.h"
#include "core/model/ids.h"

namespace heatsink::fuzz {

inline constexpr uint64_t kClients = 4;
inline constexpr uint64_t kSegments = 6;
inline constexpr int kKeys = 6;
// Keys times tenants: "", "t1" and "default" (the first and the last name
// the same tenant once normalised).
inline constexpr int kNames = kKeys * 3;

// An index below n (n > 0) from exactly one input byte, so the input layout
// does not depend on how many choices there are.
inline size_t Pick(FuzzedDataProvider& in, size_t n) { return in.ConsumeIntegral<uint8_t>() % n; }

inline ObjectName NameOf(int index) {
  static const char* const kTenants[] = {"", "t1", "default"};
  return ObjectName{kTenants[(index / kKeys) % 3], absl::StrCat("k", index % kKeys)};
}

// The normalised name, as the master reports it to observers.
inline ObjectName Normal(const ObjectName& n) {
  return ObjectName{n.tenant.empty() ? std::string(kDefaultTenant) : n.tenant, n.key};
}

// Client c lives on host "h<c>"; odd clients are in domain "d1", even ones in
// the default domain (written as "").
inline std::string HostOf(uint64_t client) { return absl::StrCat("h", client); }
inline std::string DomainOf(uint64_t client) { return client % 2 == 0 ? "" : "d1"; }

}  // namespace heatsink::fuzz

#endif  // HEATSINK_FUZZ_FUZZ_UTIL_H_
