#include "tools/replay/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"

extern char** environ;

namespace heatsink::replay {

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(
    const std::vector<std::string>& argv, const std::string& log_path) {
  if (argv.empty()) return absl::InvalidArgumentError("ChildProcess: empty argv");
  std::vector<std::string> args_storage = argv;
  std::vector<char*> args;
  for (std::string& a : args_storage) args.push_back(a.data());
  args.push_back(nullptr);
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot open log ", log_path, ": ", std::strerror(errno)));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Async-signal-safe calls only from here to exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(126);  // the parent died before prctl
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::execve(args[0], args.data(), environ);
    _exit(127);
  }
  ::close(log_fd);
  if (pid < 0) {
    return absl::UnavailableError(absl::StrCat("fork for ", argv[0], ": ", std::strerror(errno)));
  }
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, log_path));
}

ChildProcess::~ChildProcess() { Stop(); }

bool ChildProcess::Reap(bool block) {
  if (reaped_) return true;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  } else if (r < 0 && errno == ECHILD) {
    reaped_ = true;  // reaped elsewhere; nothing left to stop
  }
  return reaped_;
}

bool ChildProcess::Running() { return !Reap(false); }

int ChildProcess::Wait(int64_t timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!Reap(false)) {
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return code_;
}

void ChildProcess::Signal(int signal) {
  if (!Reap(false)) ::kill(pid_, signal);
}

int ChildProcess::Stop(int64_t grace_ms) {
  if (Reap(false)) return code_;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (Reap(false)) return code_;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid_, SIGKILL);
  Reap(true);
  return code_;
}

int ChildProcess::Kill() {
  if (Reap(false)) return code_;
  ::kill(pid_, SIGKILL);
  Reap(true);
  return code_;
}

}  // namespace heatsink::replay
