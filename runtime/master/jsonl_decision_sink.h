// File: runtime/master/jsonl_decision_sink.h
//
// Writes the master's decision records to a file as JSONL, one
// FormatDecisionJson line per record: the simulator's decisions.jsonl format,
// with `t_ns` on the master's steady clock. Lines are flushed as written so a
// killed master leaves every complete line behind.
//
// Thread safety: Record may be called from any thread; lines never interleave.
#ifndef HEATSINK_RUNTIME_MASTER_JSONL_DECISION_SINK_H_
#define HEATSINK_RUNTIME_MASTER_JSONL_DECISION_SINK_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/replication/decision.h"

namespace heatsink::runtime {

class JsonlDecisionSink final : public DecisionSink {
 public:
  // Creates or truncates `path`. NOT_FOUND / PERMISSION_DENIED style errors
  // come back as UNAVAILABLE with the path and errno text.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<JsonlDecisionSink>> Open(
      const std::string& path);
  ~JsonlDecisionSink() override;
  JsonlDecisionSink(const JsonlDecisionSink&) = delete;
  JsonlDecisionSink& operator=(const JsonlDecisionSink&) = delete;

  void Record(const DecisionRecord& record) override;
  int64_t lines_written() const;
  int64_t write_errors() const;

 private:
  explicit JsonlDecisionSink(std::FILE* file) : file_(file) {}

  mutable Mutex mu_;
  std::FILE* file_ ABSL_GUARDED_BY(mu_);
  int64_t lines_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t errors_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_MASTER_JSONL_DECISION_SINK_H_
