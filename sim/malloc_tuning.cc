#include "sim/malloc_tuning.h"

#include <unistd.h>

#include <cstdlib>

#include "absl/strings/match.h"

namespace heatsink::sim {

std::optional<std::string> MallocTunablesToSet(const char* glibc_tunables,
                                               const char* heatsink_sim_malloc_tuning,
                                               const char* ld_preload) {
  if (glibc_tunables != nullptr) return std::nullopt;
  if (heatsink_sim_malloc_tuning != nullptr &&
      absl::string_view(heatsink_sim_malloc_tuning) == "0") {
    return std::nullopt;
  }
  // Valgrind preloads its own libraries into the program it runs and would
  // not follow the exec: the program would run on without it.
  if (ld_preload != nullptr && absl::StrContains(ld_preload, "valgrind")) return std::nullopt;
  return std::string(kSimMallocTunables);
}

void ReexecWithMallocTunables(char** argv) {
  const std::optional<std::string> tunables =
      MallocTunablesToSet(std::getenv("GLIBC_TUNABLES"), std::getenv("HEATSINK_SIM_MALLOC_TUNING"),
                          std::getenv("LD_PRELOAD"));
  if (!tunables.has_value()) return;
  if (::setenv("GLIBC_TUNABLES", tunables->c_str(), 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  // The exec failed: run on with glibc's defaults, and leave no setting
  // behind for the processes this one starts.
  ::unsetenv("GLIBC_TUNABLES");
}

}  // namespace heatsink::sim
