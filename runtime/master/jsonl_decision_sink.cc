#include "runtime/master/jsonl_decision_sink.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace heatsink::runtime {

absl::StatusOr<std::unique_ptr<JsonlDecisionSink>> JsonlDecisionSink::Open(
    const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot open '", path, "' for writing: ", std::strerror(errno)));
  }
  return std::unique_ptr<JsonlDecisionSink>(new JsonlDecisionSink(file));
}

JsonlDecisionSink::~JsonlDecisionSink() {
  MutexLock lock(&mu_);
  std::fclose(file_);
}

void JsonlDecisionSink::Record(const DecisionRecord& record) {
  std::string line = FormatDecisionJson(record);
  line.push_back('\n');
  MutexLock lock(&mu_);
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    ++errors_;
    return;
  }
  ++lines_;
}

int64_t JsonlDecisionSink::lines_written() const {
  MutexLock lock(&mu_);
  return lines_;
}

int64_t JsonlDecisionSink::write_errors() const {
  MutexLock lock(&mu_);
  return errors_;
}

}  // namespace heatsink::runtime
