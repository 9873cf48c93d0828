// File: tools/replay/child_process.h
//
// A process the replay starts (heatsink-master, heatsink-store), with its
// stdout and stderr in a log file, that never outlives the replay:
//
//   - Stop() (and the destructor) sends SIGTERM, waits up to a grace period,
//     then SIGKILL, and reaps the child;
//   - the child is started with PR_SET_PDEATHSIG = SIGKILL, so the kernel
//     kills it when the thread that started it ends, even when the replay
//     itself is killed with SIGKILL and runs no clean-up. Start children from
//     a thread that lives as long as they should (the main thread);
//   - the child gets an empty signal mask, whatever the replay blocks.
//
// Everything the child needs is prepared before fork(): between fork and
// exec a multi-threaded parent's child may only make async-signal-safe calls.
#ifndef HEATSINK_TOOLS_REPLAY_CHILD_PROCESS_H_
#define HEATSINK_TOOLS_REPLAY_CHILD_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace heatsink::replay {

class ChildProcess {
 public:
  // Starts argv[0] (a path) with `argv`; UNAVAILABLE when fork fails or the
  // log cannot be opened. An exec failure shows as exit code 127.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(
      const std::vector<std::string>& argv, const std::string& log_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // True until the child has been reaped (polls without blocking).
  bool Running();
  // Waits up to `timeout_ms` for the child to exit by itself; its exit code
  // (or 128 + signal), or -1 when it still runs.
  int Wait(int64_t timeout_ms);
  // Sends `signal` unless the child has been reaped.
  void Signal(int signal);
  // SIGTERM, up to `grace_ms` for it to exit, then SIGKILL; reaps it.
  // Returns the exit code, or 128 + signal.
  int Stop(int64_t grace_ms = 3'000);
  // SIGKILL at once (a crash: the child runs no clean-up) and reaps it.
  // Returns the exit code, or 128 + signal.
  int Kill();
  const std::string& log_path() const { return log_path_; }

 private:
  ChildProcess(pid_t pid, std::string log_path) : pid_(pid), log_path_(std::move(log_path)) {}
  bool Reap(bool block);

  pid_t pid_;
  std::string log_path_;
  bool reaped_ = false;
  int code_ = -1;
};

}  // namespace heatsink::replay

#endif  // HEATSINK_TOOLS_REPLAY_CHILD_PROCESS_H_
