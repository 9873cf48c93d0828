// Helpers of the tests that run the production processes: a child process
// with its output in a log file, polling, and reading /metrics.
#ifndef HEATSINK_TESTS_RUNTIME_RPC_PROCESS_TEST_UTIL_H_
#define HEATSINK_TESTS_RUNTIME_RPC_PROCESS_TEST_UTIL_H_

#include <fcntl.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "runtime/transport/socket.h"

namespace heatsink::runtime {
namespace test {

namespace fs = std::filesystem;

// A child process with stdout and stderr in `log`.
class Process {
 public:
  // Everything the child needs is prepared before fork(): between fork and
  // exec a multi-threaded parent's child may only make async-signal-safe
  // calls (no allocation).
  Process(const std::vector<std::string>& argv, const std::vector<std::string>& env,
          const fs::path& log)
      : argv_(argv), env_(env) {
    std::vector<char*> args;
    for (std::string& a : argv_) args.push_back(a.data());
    args.push_back(nullptr);
    std::vector<char*> envp;
    for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
    for (std::string& kv : env_) envp.push_back(kv.data());
    envp.push_back(nullptr);
    const std::string log_path = log.string();
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ == 0) {
      // Dies with the test: a test binary that crashes or is killed (a
      // ctest timeout) leaves no master, store or etcd running behind it.
      // (The signal comes when the thread that forked exits, so processes
      // are started from the test's own thread.)
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      execve(args[0], args.data(), envp.data());
      _exit(127);
    }
  }
  ~Process() {
    if (running()) {
      kill(pid_, SIGKILL);
      (void)Wait();
    }
  }
  bool running() const { return pid_ > 0 && !exited_; }
  void Signal(int signal) const { kill(pid_, signal); }
  // Still running (reaps it when it exited).
  bool Alive() {
    if (!running()) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) != pid_) return true;
    exited_ = true;
    code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return false;
  }
  // Exit status (or 128 + signal), waiting up to 20 s; -1 on timeout.
  int Wait() {
    for (int i = 0; i < 2000 && !exited_; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return exited_ ? code_ : -1;
  }

 private:
  std::vector<std::string> argv_;
  std::vector<std::string> env_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
};

template <typename Fn>
inline bool WaitFor(Fn condition, absl::Duration timeout = absl::Seconds(30)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

inline std::vector<std::string> ReadLines(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

inline std::string HttpGet(const std::string& endpoint, const std::string& path) {
  absl::StatusOr<Socket> socket = ConnectTcp(endpoint, 2000, 5000);
  if (!socket.ok()) return "";
  const std::string request = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: x\r\n\r\n");
  if (!SendAll(*socket, request.data(), request.size()).ok()) return "";
  std::string response;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::recv(socket->fd(), buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    response.append(buffer, static_cast<size_t>(n));
  }
  return response;
}

// The value of an unlabelled sample `name` in Prometheus text, or -1.
inline int64_t MetricValue(const std::string& text, const std::string& name) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, name + " ")) continue;
    double value = 0;
    if (absl::SimpleAtod(line.substr(name.size() + 1), &value)) return static_cast<int64_t>(value);
  }
  return -1;
}

}  // namespace test
}  // namespace heatsink::runtime

#endif  // HEATSINK_TESTS_RUNTIME_RPC_PROCESS_TEST_UTIL_H_
