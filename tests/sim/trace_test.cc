// Covers the Mooncake trace reader (sim/trace.h): well-formed lines, blank
// lines and CRLF, ignored extra fields, and one malformed-line case per rule
// (not JSON, missing field, wrong type, negative value, decreasing
// timestamp, limits), each naming the file and line; request_limit stops
// early; file reading in chunks matches text parsing, including the shipped
// copy of the conversation trace; the plain-shape reader agrees with the
// JSON reader wherever it answers; the writer (FormatTraceLine) produces the
// public traces' exact bytes.
#include "sim/trace.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/sim/repo_root.h"

namespace heatsink::sim {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(absl::string_view text, const TraceLimits& limits = TraceLimits()) {
  absl::StatusOr<std::vector<TraceRequest>> r = ParseTrace(text, "t.jsonl", limits);
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : std::string(r.status().message());
}

TEST(Trace, ParsesRequestsSkippingBlankLines) {
  const std::string text =
      "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 5, \"hash_ids\": [0, 1, 2]}\n"
      "\n"
      "   \r\n"
      "{\"timestamp\": 27, \"input_length\": 10, \"output_length\": 0, \"hash_ids\": [7],"
      " \"session\": \"x\"}\r\n"
      "{\"timestamp\": 27, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": []}";
  absl::StatusOr<std::vector<TraceRequest>> r = ParseTrace(text, "t.jsonl");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].timestamp_ms, 0);
  EXPECT_EQ((*r)[0].input_length, 1100);
  EXPECT_EQ((*r)[0].output_length, 5);
  EXPECT_EQ((*r)[0].hash_ids, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ((*r)[0].line, 1);
  EXPECT_EQ((*r)[1].line, 4);
  EXPECT_EQ((*r)[1].hash_ids, (std::vector<int64_t>{7}));
  EXPECT_EQ((*r)[2].line, 5);
  EXPECT_TRUE((*r)[2].hash_ids.empty());
}

constexpr absl::string_view kGood =
    "{\"timestamp\": 5, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n";

TEST(Trace, MalformedLinesNameTheLine) {
  const std::string prefix = absl::StrCat(kGood, kGood);  // the bad line is line 3
  EXPECT_EQ(ErrorOf(prefix + "{\"timestamp\": 5, \"input_length\": 10,\n"),
            "t.jsonl:3:37: unterminated object: expected a key, got end of input");
  EXPECT_EQ(ErrorOf(prefix + "not json\n"), "t.jsonl:3:1: expected a value, got 'n'");
  EXPECT_EQ(ErrorOf(prefix + "[1, 2]\n"), "t.jsonl:3:1: $: expected a request object, got array");
  EXPECT_EQ(ErrorOf(prefix + "{\"timestamp\": 5, \"output_length\": 1, \"hash_ids\": []}\n"),
            "t.jsonl:3:1: $: missing required field \"input_length\"");
  EXPECT_EQ(ErrorOf(prefix +
                    "{\"timestamp\": \"5\", \"input_length\": 1, \"output_length\": 1, "
                    "\"hash_ids\": []}\n"),
            "t.jsonl:3:15: $.timestamp: expected an integer, got string");
  EXPECT_EQ(ErrorOf(prefix +
                    "{\"timestamp\": 5, \"input_length\": -1, \"output_length\": 1, "
                    "\"hash_ids\": []}\n"),
            "t.jsonl:3:34: $.input_length: must be at least 0, got -1");
  EXPECT_EQ(ErrorOf(prefix +
                    "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1, "
                    "\"hash_ids\": [3, -4]}\n"),
            "t.jsonl:3:73: $.hash_ids[1]: must be at least 0, got -4");
  EXPECT_EQ(ErrorOf(prefix +
                    "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1, "
                    "\"hash_ids\": 3}\n"),
            "t.jsonl:3:69: $.hash_ids: expected an array, got number");
  EXPECT_EQ(ErrorOf(prefix +
                    "{\"timestamp\": 5.5, \"input_length\": 1, \"output_length\": 1, "
                    "\"hash_ids\": []}\n"),
            "t.jsonl:3:15: $.timestamp: expected an integer, got 5.5");
  EXPECT_EQ(ErrorOf(prefix +
                    "{\"timestamp\": 4, \"input_length\": 1, \"output_length\": 1, "
                    "\"hash_ids\": []}\n"),
            "t.jsonl:3: timestamp 4 is earlier than the previous request's 5 (line 2); a trace "
            "must be sorted by timestamp");
  EXPECT_EQ(ErrorOf(prefix +
                    "{\"timestamp\": 5, \"timestamp\": 6, \"input_length\": 1, "
                    "\"output_length\": 1, \"hash_ids\": []}\n"),
            "t.jsonl:3:18: duplicate key \"timestamp\"");
}

TEST(Trace, LimitsAreResourceExhausted) {
  TraceLimits limits;
  limits.requests_max = 2;
  absl::StatusOr<std::vector<TraceRequest>> r =
      ParseTrace(absl::StrCat(kGood, kGood, kGood), "t.jsonl", limits);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(r.status().message(), "t.jsonl:3: more than 2 requests in the trace");

  limits = TraceLimits();
  limits.line_bytes_max = 40;
  r = ParseTrace(absl::StrCat("\n", kGood), "t.jsonl", limits);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(r.status().message(), "t.jsonl:2: line longer than 40 bytes");

  limits = TraceLimits();
  limits.hash_ids_per_request_max = 2;
  r = ParseTrace(
      "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}",
      "t.jsonl", limits);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(), HasSubstr("t.jsonl:1:69: $.hash_ids: 3 elements"));
}

TEST(Trace, RequestLimitStopsEarly) {
  TraceLimits limits;
  limits.request_limit = 2;
  // The third line is malformed, but reading stops before it.
  absl::StatusOr<std::vector<TraceRequest>> r =
      ParseTrace(absl::StrCat(kGood, "\n", kGood, "garbage\n"), "t.jsonl", limits);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->size(), 2u);
}

class TraceFileTest : public ::testing::Test {
 protected:
  std::string WriteFile(absl::string_view text) {
    const std::string path = (std::filesystem::temp_directory_path() /
                              absl::StrCat("trace_test_", ::getpid(), "_", counter_++, ".jsonl"))
                                 .string();
    std::ofstream(path, std::ios::binary) << text;
    paths_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const std::string& p : paths_) std::remove(p.c_str());
  }
  std::vector<std::string> paths_;
  int counter_ = 0;
};

TEST_F(TraceFileTest, FileMatchesTextAcrossChunkBoundaries) {
  std::string text;
  for (int i = 0; i < 3000; ++i) {
    text += absl::StrCat("{\"timestamp\": ", i, ", \"input_length\": ", 512 * (i % 7 + 1),
                         ", \"output_length\": 3, \"hash_ids\": [", i, ", ", i + 1, "]}\n");
    if (i % 100 == 0) text += "\r\n";
  }
  text += "{\"timestamp\": 3000, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [9]}";
  const std::string path = WriteFile(text);
  absl::StatusOr<std::vector<TraceRequest>> from_file = ReadTraceFile(path);
  absl::StatusOr<std::vector<TraceRequest>> from_text = ParseTrace(text, path);
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  ASSERT_TRUE(from_text.ok()) << from_text.status();
  ASSERT_EQ(from_file->size(), 3001u);
  ASSERT_EQ(from_file->size(), from_text->size());
  for (size_t i = 0; i < from_file->size(); ++i) {
    EXPECT_EQ((*from_file)[i].line, (*from_text)[i].line);
    EXPECT_EQ((*from_file)[i].hash_ids, (*from_text)[i].hash_ids);
  }
}

TEST_F(TraceFileTest, FileErrorsNameTheLine) {
  std::string text = absl::StrCat(kGood, kGood);
  text += std::string(70000, ' ') + "{\"timestamp\": 1}\n";  // spans two read chunks
  const std::string path = WriteFile(text);
  absl::StatusOr<std::vector<TraceRequest>> r = ReadTraceFile(path);
  EXPECT_EQ(r.status().message(), absl::StrCat(path, ":3:70001: $: missing required field "
                                                     "\"input_length\""));
  TraceLimits limits;
  limits.line_bytes_max = 1000;
  r = ReadTraceFile(path, limits);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(r.status().message(), absl::StrCat(path, ":3: line longer than 1000 bytes"));
  EXPECT_EQ(ReadTraceFile("/nonexistent/t.jsonl").status().code(), absl::StatusCode::kNotFound);
}

TEST(Trace, ShippedConversationTraceLoads) {
  const std::filesystem::path path = testing_paths::RepoRoot() / "scenarios/traces/conversation_trace.jsonl";
  absl::StatusOr<std::vector<TraceRequest>> r = ReadTraceFile(path.string());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 12031u);
  EXPECT_EQ(r->front().hash_ids.size(), 14u);
  EXPECT_EQ(r->back().timestamp_ms, 3536999);
  // The public traces use 512-token blocks: one id per started block.
  for (const TraceRequest& q : *r) {
    ASSERT_EQ(static_cast<int64_t>(q.hash_ids.size()), (q.input_length + 511) / 512) << q.line;
  }
}

TEST(TraceWriter, WritesThePublicTracesShape) {
  TraceRequest r;
  r.timestamp_ms = 27;
  r.input_length = 6758;
  r.output_length = 500;
  r.hash_ids = {0, 1, 2};
  r.line = 9;  // not written
  EXPECT_EQ(FormatTraceLine(r),
            "{\"timestamp\": 27, \"input_length\": 6758, \"output_length\": 500, "
            "\"hash_ids\": [0, 1, 2]}");
  r.hash_ids.clear();
  std::string text;
  AppendTraceJsonl({r, r}, &text);
  const std::string line =
      "{\"timestamp\": 27, \"input_length\": 6758, \"output_length\": 500, \"hash_ids\": []}\n";
  EXPECT_EQ(text, line + line);
}

// Reading the public trace and writing it again gives the file's bytes back.
TEST(TraceWriter, ShippedConversationTraceRoundTripsByteForByte) {
  const std::filesystem::path path =
      testing_paths::RepoRoot() / "scenarios/traces/conversation_trace.jsonl";
  absl::StatusOr<std::vector<TraceRequest>> r = ReadTraceFile(path.string());
  ASSERT_TRUE(r.ok()) << r.status();
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string text;
  AppendTraceJsonl(*r, &text);
  EXPECT_TRUE(text == bytes) << "the writer's text differs from the shipped trace";
}

// The plain-shape reader answers exactly where the JSON reader accepts a
// line of that shape, and gives the same request; anything else it leaves to
// the JSON reader (nullopt), including every line the JSON reader refuses.
void ExpectReadersAgree(absl::string_view line, const TraceLimits& limits) {
  SCOPED_TRACE(line);
  const std::optional<TraceRequest> plain = trace_internal::ParsePlainTraceLine(line, 9, limits);
  const absl::StatusOr<TraceRequest> json =
      trace_internal::ParseTraceLineJson(line, "t.jsonl", 9, limits);
  if (!json.ok()) {
    EXPECT_FALSE(plain.has_value());
    return;
  }
  if (!plain.has_value()) return;
  EXPECT_EQ(plain->timestamp_ms, json->timestamp_ms);
  EXPECT_EQ(plain->input_length, json->input_length);
  EXPECT_EQ(plain->output_length, json->output_length);
  EXPECT_EQ(plain->hash_ids, json->hash_ids);
  EXPECT_EQ(plain->line, json->line);
}

TEST(Trace, PlainReaderAgreesWithJsonReader) {
  TraceLimits limits;
  limits.hash_ids_per_request_max = 3;
  limits.line_bytes_max = 120;
  const std::string fields = R"("input_length": 10, "output_length": 1)";
  // Lines of the plain shape: the plain reader must answer them.
  for (const std::string& line : {
           absl::StrCat(R"({"timestamp": 5, )", fields, R"(, "hash_ids": [1, 2, 3]})"),
           absl::StrCat(R"({ "hash_ids":[],)", fields, R"(,"timestamp":0 } )"),
           absl::StrCat("\t{\"timestamp\":\r\n9223372036854,", fields, R"(,"hash_ids":[0]})"),
           absl::StrCat(R"({"timestamp": 7, )", fields, R"(, "hash_ids": [999999999999999999]})"),
       }) {
    EXPECT_TRUE(trace_internal::ParsePlainTraceLine(line, 1, limits).has_value()) << line;
    ExpectReadersAgree(line, limits);
  }
  // Everything else goes to the JSON reader, valid or not.
  for (const std::string& line : {
           absl::StrCat(R"({"timestamp": 5, )", fields, R"(, "hash_ids": [1, 2, 3, 4]})"),
           absl::StrCat(R"({"timestamp": 5, )", fields, R"(, "hash_ids": [1], "x": 1})"),
           absl::StrCat(R"({"timestamp": 5, "timestamp": 6, )", fields, R"(, "hash_ids": [1]})"),
           absl::StrCat(R"({"timestamp": 5, )", fields, R"(, "hash_ids": [01]})"),
           absl::StrCat(R"({"timestamp": 5, )", fields, R"(, "hash_ids": [1.0]})"),
           absl::StrCat(R"({"timestamp": 5, )", fields, R"(, "hash_ids": [1e2]})"),
           absl::StrCat(R"({"timestamp": 5, )", fields, R"(, "hash_ids": [-1]})"),
           absl::StrCat(R"({"timestamp": 5, )", fields, R"(, "hash_ids": [1,]})"),
           absl::StrCat(R"({"timestamp": 5, )", fields, R"(, "hash_ids": [1]} x)"),
           absl::StrCat(R"({"timestamp": 5, )", fields, R"(, "hash_ids": [1]},)"),
           absl::StrCat(R"({"timestamp": 5, )", fields, R"(})"),
           absl::StrCat(R"({"timestamp": 9223372036854776, )", fields, R"(, "hash_ids": []})"),
           absl::StrCat(R"({"timestamp": 1000000000000000000, )", fields, R"(, "hash_ids": []})"),
           absl::StrCat(R"({"time\u0073tamp": 5, )", fields, R"(, "hash_ids": [1]})"),
           absl::StrCat("\xEF\xBB\xBF{\"timestamp\": 5, ", fields, R"(, "hash_ids": [1]})"),
           absl::StrCat("{\"timestamp\":\f5, ", fields, R"(, "hash_ids": [1]})"),
           std::string(R"({"timestamp": 5, "input_length": 10, "output_length": 1, )"
                       R"("hash_ids": [1],                                          })"),
       }) {
    EXPECT_FALSE(trace_internal::ParsePlainTraceLine(line, 1, limits).has_value()) << line;
    ExpectReadersAgree(line, limits);
  }
  // Random byte edits of a plain line: whatever the plain reader accepts,
  // the JSON reader accepts the same way.
  const std::string base =
      absl::StrCat(R"({"timestamp": 15, )", fields, R"(, "hash_ids": [10, 2, 31]})");
  const std::string alphabet = "0123456789 ,:[]{}\"-.e\t\r";
  uint64_t state = 7;
  const auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  int plain_answers = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string line = base;
    for (int edits = 1 + static_cast<int>(next() % 3); edits > 0; --edits) {
      const size_t at = next() % (line.size() + 1);
      const char c = alphabet[next() % alphabet.size()];
      switch (next() % 3) {
        case 0:
          if (at < line.size()) line[at] = c;
          break;
        case 1:
          line.insert(at, 1, c);
          break;
        default:
          if (at < line.size()) line.erase(at, 1);
          break;
      }
    }
    plain_answers += trace_internal::ParsePlainTraceLine(line, 9, limits).has_value() ? 1 : 0;
    ExpectReadersAgree(line, limits);
  }
  // The edits keep some lines plain (spaces, digits), so both paths ran.
  EXPECT_GT(plain_answers, 100);
}

}  // namespace
}  // namespace heatsink::sim
