// File: tests/sim/repo_root.h
//
// Where the repository is, for tests that read shipped files (scenarios,
// traces) or run the heatsink-sim binary. __FILE__ may be relative to the
// build directory (compiler launchers rewrite it), and ctest runs each test
// from its own binary directory, so the root is HEATSINK_SOURCE_DIR when the
// build defines it, else the first directory holding scenarios/ and sim/
// among this header's directory's ancestors and the working directory's.
#ifndef HEATSINK_TESTS_SIM_REPO_ROOT_H_
#define HEATSINK_TESTS_SIM_REPO_ROOT_H_

#include <filesystem>
#include <vector>

namespace heatsink::sim::testing_paths {

inline std::filesystem::path RepoRoot() {
  namespace fs = std::filesystem;
#ifdef HEATSINK_SOURCE_DIR
  if (fs::exists(fs::path(HEATSINK_SOURCE_DIR) / "scenarios")) return HEATSINK_SOURCE_DIR;
#endif
  std::vector<fs::path> starts = {fs::absolute(fs::path(__FILE__)).parent_path(),
                                  fs::current_path()};
  for (const fs::path& start : starts) {
    for (fs::path dir = start;; dir = dir.parent_path()) {
      if (fs::exists(dir / "scenarios") && fs::exists(dir / "sim" / "runner.h")) return dir;
      if (dir == dir.parent_path()) break;
    }
  }
  return fs::current_path();
}

}  // namespace heatsink::sim::testing_paths

#endif  // HEATSINK_TESTS_SIM_REPO_ROOT_H_
