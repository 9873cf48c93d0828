// Covers the synthetic trace generator (sim/trace_gen.h): the same spec
// gives the same bytes and another seed other bytes; every line reads back
// through ParseTraceLine; the rules every shape keeps (sorted timestamps
// inside the window, input_length from the block count, output_length range,
// ids numbered by first appearance); each shape's documented property
// (agentic: a turn extends the previous turn's blocks, gaps spread over
// minutes; hot-shift: the hot sets of different periods share no block;
// one-shot-flood: a system prompt in every request, unique blocks never seen
// again, bursts inside their windows); the default traces' size and span;
// parameter checks naming the flag; limits as RESOURCE_EXHAUSTED; every
// parameter documented in docs/gen-trace.md with its default.
#include "sim/trace_gen.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/sim/repo_root.h"

namespace heatsink::sim {
namespace {

using ::testing::HasSubstr;

TraceGenSpec Spec(TraceShape shape, uint64_t seed = 1) {
  TraceGenSpec spec;
  spec.shape = shape;
  spec.seed = seed;
  return spec;
}

std::vector<TraceRequest> MustGenerate(const TraceGenSpec& spec) {
  absl::StatusOr<std::vector<TraceRequest>> r = GenerateTrace(spec);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : std::vector<TraceRequest>{};
}

std::string Text(const TraceGenSpec& spec) {
  std::string text;
  AppendTraceJsonl(MustGenerate(spec), &text);
  return text;
}

std::vector<int64_t> Slice(const std::vector<int64_t>& v, size_t begin, size_t end) {
  return std::vector<int64_t>(v.begin() + static_cast<ptrdiff_t>(begin),
                              v.begin() + static_cast<ptrdiff_t>(end));
}

class EveryShape : public ::testing::TestWithParam<TraceShape> {};

INSTANTIATE_TEST_SUITE_P(TraceGen, EveryShape,
                         ::testing::Values(TraceShape::kAgentic, TraceShape::kHotShift,
                                           TraceShape::kOneShotFlood),
                         [](const ::testing::TestParamInfo<TraceShape>& info) {
                           std::string name(TraceShapeName(info.param));
                           name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
                           return name;
                         });

TEST_P(EveryShape, SameSeedSameBytesOtherSeedOtherBytes) {
  const std::string a = Text(Spec(GetParam(), 1));
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, Text(Spec(GetParam(), 1)));
  EXPECT_NE(a, Text(Spec(GetParam(), 2)));
}

TEST_P(EveryShape, EveryLineReadsBack) {
  const std::vector<TraceRequest> trace = MustGenerate(Spec(GetParam()));
  std::string text;
  AppendTraceJsonl(trace, &text);
  const std::vector<absl::string_view> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), trace.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    absl::StatusOr<TraceRequest> r =
        ParseTraceLine(lines[i], "gen.jsonl", static_cast<int64_t>(i) + 1);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->timestamp_ms, trace[i].timestamp_ms);
    EXPECT_EQ(r->input_length, trace[i].input_length);
    EXPECT_EQ(r->output_length, trace[i].output_length);
    EXPECT_EQ(r->hash_ids, trace[i].hash_ids);
    EXPECT_EQ(r->line, trace[i].line);
  }
  absl::StatusOr<std::vector<TraceRequest>> whole = ParseTrace(text, "gen.jsonl");
  ASSERT_TRUE(whole.ok()) << whole.status();  // sorted, within the reader's limits
}

TEST_P(EveryShape, KeepsTheCommonRules) {
  const TraceGenSpec spec = Spec(GetParam());
  const std::vector<TraceRequest> trace = MustGenerate(spec);
  int64_t next_new_id = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    const TraceRequest& r = trace[i];
    SCOPED_TRACE(i);
    if (i > 0) {
      ASSERT_GE(r.timestamp_ms, trace[i - 1].timestamp_ms);
    }
    ASSERT_GE(r.timestamp_ms, 0);
    ASSERT_LT(r.timestamp_ms, spec.duration_s * 1000);
    const auto blocks = static_cast<int64_t>(r.hash_ids.size());
    ASSERT_GE(blocks, 1);
    ASSERT_LE(r.input_length, blocks * 512);
    ASSERT_GT(r.input_length, (blocks - 1) * 512);
    ASSERT_GE(r.output_length, 1);
    ASSERT_LE(r.output_length, 2 * spec.output_length_mean - 1);
    EXPECT_EQ(r.line, static_cast<int64_t>(i) + 1);
    std::vector<int64_t> sorted = r.hash_ids;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "repeated id";
    // Ids are numbered by first appearance: a new id is the next number.
    for (int64_t id : r.hash_ids) {
      ASSERT_LE(id, next_new_id);
      if (id == next_new_id) ++next_new_id;
    }
  }
  const TraceStats stats = ComputeTraceStats(trace);
  EXPECT_EQ(stats.distinct_blocks, next_new_id);
  EXPECT_EQ(stats.requests, static_cast<int64_t>(trace.size()));
}

// The documented defaults: 5 to 15 minutes, well under 2 MB of JSONL.
TEST_P(EveryShape, DefaultTraceIsSmallAndMinutesLong) {
  const std::vector<TraceRequest> trace = MustGenerate(Spec(GetParam()));
  std::string text;
  AppendTraceJsonl(trace, &text);
  EXPECT_LT(text.size(), 1'500'000u);
  ASSERT_FALSE(trace.empty());
  EXPECT_GE(trace.back().timestamp_ms - trace.front().timestamp_ms, 5 * 60 * 1000);
  EXPECT_LE(trace.back().timestamp_ms, 15 * 60 * 1000);
}

// Turns of one session: grouped by the first fresh block of the first turn,
// which only that session has.
std::map<int64_t, std::vector<const TraceRequest*>> Sessions(const std::vector<TraceRequest>& trace,
                                                             const TraceGenSpec& spec) {
  std::map<int64_t, std::vector<const TraceRequest*>> sessions;
  for (const TraceRequest& r : trace) {
    sessions[r.hash_ids.at(static_cast<size_t>(spec.tool_prompt_blocks))].push_back(&r);
  }
  return sessions;
}

TEST(TraceGenAgentic, EachTurnExtendsThePreviousTurn) {
  const TraceGenSpec spec = Spec(TraceShape::kAgentic);
  const std::vector<TraceRequest> trace = MustGenerate(spec);
  const auto tool_blocks = static_cast<size_t>(spec.tool_prompt_blocks);
  const auto new_blocks = static_cast<size_t>(spec.new_blocks_per_turn);
  std::set<std::vector<int64_t>> tool_prompts;
  const auto sessions = Sessions(trace, spec);
  EXPECT_GT(sessions.size(), 200u);
  for (const auto& [key, turns] : sessions) {
    SCOPED_TRACE(key);
    ASSERT_LE(static_cast<int64_t>(turns.size()), 2 * spec.turns_mean - 1);
    tool_prompts.insert(Slice(turns[0]->hash_ids, 0, tool_blocks));
    ASSERT_EQ(turns[0]->hash_ids.size(), tool_blocks + new_blocks);
    for (size_t k = 1; k < turns.size(); ++k) {
      const std::vector<int64_t>& prev = turns[k - 1]->hash_ids;
      const std::vector<int64_t>& cur = turns[k]->hash_ids;
      ASSERT_EQ(cur.size(), prev.size() + new_blocks);
      ASSERT_EQ(Slice(cur, 0, prev.size()), prev) << "turn " << k;
    }
  }
  EXPECT_LE(static_cast<int64_t>(tool_prompts.size()), spec.tool_prompts);
  EXPECT_GE(tool_prompts.size(), 4u);
}

TEST(TraceGenAgentic, TurnGapsAreSpreadOverMinutes) {
  const TraceGenSpec spec = Spec(TraceShape::kAgentic);
  const std::vector<TraceRequest> trace = MustGenerate(spec);
  std::vector<int64_t> gaps_ms;
  int64_t long_sessions = 0;
  int64_t multi_turn = 0;
  for (const auto& [key, turns] : Sessions(trace, spec)) {
    for (size_t k = 1; k < turns.size(); ++k) {
      gaps_ms.push_back(turns[k]->timestamp_ms - turns[k - 1]->timestamp_ms);
    }
    if (turns.size() < 2) continue;
    ++multi_turn;
    if (turns.back()->timestamp_ms - turns.front()->timestamp_ms > 60'000) ++long_sessions;
  }
  ASSERT_GT(gaps_ms.size(), 1000u);
  std::sort(gaps_ms.begin(), gaps_ms.end());
  int64_t sum = 0;
  for (int64_t g : gaps_ms) sum += g;
  const double mean_s = static_cast<double>(sum) / static_cast<double>(gaps_ms.size()) / 1000;
  // Exponential with mean turn_gap_s: the sample mean is within a few
  // standard errors (30 s / sqrt(n) < 1 s), and the gaps range from seconds
  // to minutes.
  EXPECT_NEAR(mean_s, static_cast<double>(spec.turn_gap_s), 3.0);
  EXPECT_LT(gaps_ms[gaps_ms.size() / 10], 5'000);
  EXPECT_GT(gaps_ms[gaps_ms.size() * 9 / 10], 60'000);
  EXPECT_GT(gaps_ms.back(), 120'000);
  // Reuse of a session's blocks lasts minutes: most multi-turn sessions span
  // more than one.
  EXPECT_GT(long_sessions * 2, multi_turn);
}

TEST(TraceGenAgentic, PopularToolPromptLeads) {
  const TraceGenSpec spec = Spec(TraceShape::kAgentic);
  const std::vector<TraceRequest> trace = MustGenerate(spec);
  std::map<int64_t, int64_t> sessions_by_tool;  // first block of the tool prompt -> sessions
  for (const auto& [key, turns] : Sessions(trace, spec)) {
    ++sessions_by_tool[turns[0]->hash_ids[0]];
  }
  int64_t top = 0;
  int64_t total = 0;
  for (const auto& [tool, n] : sessions_by_tool) {
    top = std::max(top, n);
    total += n;
  }
  // zipf 1 over 8: the first rank has about 37%.
  EXPECT_GT(top * 4, total);
}

TEST(TraceGenHotShift, PeriodsUseDisjointHotSets) {
  const TraceGenSpec spec = Spec(TraceShape::kHotShift);
  const std::vector<TraceRequest> trace = MustGenerate(spec);
  const auto prefix = static_cast<size_t>(spec.prefix_blocks);
  std::map<int64_t, std::set<int64_t>> blocks_by_period;
  std::map<int64_t, std::map<std::vector<int64_t>, int64_t>> prefixes_by_period;
  std::map<int64_t, int64_t> uses;
  for (const TraceRequest& r : trace) {
    const int64_t period = r.timestamp_ms / (spec.shift_period_s * 1000);
    ASSERT_EQ(static_cast<int64_t>(r.hash_ids.size()), spec.prefix_blocks + spec.unique_blocks);
    const std::vector<int64_t> p = Slice(r.hash_ids, 0, prefix);
    ++prefixes_by_period[period][p];
    blocks_by_period[period].insert(p.begin(), p.end());
    for (size_t k = prefix; k < r.hash_ids.size(); ++k) ++uses[r.hash_ids[k]];
  }
  ASSERT_EQ(static_cast<int64_t>(blocks_by_period.size()), spec.duration_s / spec.shift_period_s);
  std::set<int64_t> seen;
  for (const auto& [period, blocks] : blocks_by_period) {
    SCOPED_TRACE(period);
    for (int64_t id : blocks) ASSERT_TRUE(seen.insert(id).second) << "block " << id;
    const auto& prefixes = prefixes_by_period[period];
    EXPECT_LE(static_cast<int64_t>(prefixes.size()), spec.hot_prefixes);
    int64_t hottest = 0;
    for (const auto& [p, n] : prefixes) hottest = std::max(hottest, n);
    EXPECT_GT(hottest, 100);  // zipf: one prefix takes a large share of ~960 requests
  }
  for (const auto& [id, n] : uses) {
    ASSERT_EQ(n, 1) << "suffix block " << id << " reused";
    ASSERT_EQ(seen.count(id), 0u) << "suffix block " << id << " also in a prefix";
  }
}

TEST(TraceGenFlood, SharedPrefixInEveryRequestUniqueBlocksNeverAgain) {
  const TraceGenSpec spec = Spec(TraceShape::kOneShotFlood);
  const std::vector<TraceRequest> trace = MustGenerate(spec);
  const auto prefix = static_cast<size_t>(spec.shared_prefix_blocks);
  std::map<std::vector<int64_t>, int64_t> prompts;
  std::map<int64_t, int64_t> uses;
  for (const TraceRequest& r : trace) {
    ASSERT_EQ(static_cast<int64_t>(r.hash_ids.size()),
              spec.shared_prefix_blocks + spec.unique_blocks);
    ++prompts[Slice(r.hash_ids, 0, prefix)];
    for (int64_t id : r.hash_ids) ++uses[id];
  }
  EXPECT_EQ(static_cast<int64_t>(prompts.size()), spec.system_prompts);
  std::set<int64_t> prompt_blocks;
  for (const auto& [p, n] : prompts) prompt_blocks.insert(p.begin(), p.end());
  EXPECT_EQ(prompt_blocks.size(), prefix * prompts.size());  // distinct prompts share nothing
  for (const TraceRequest& r : trace) {
    for (size_t k = prefix; k < r.hash_ids.size(); ++k) {
      ASSERT_EQ(uses[r.hash_ids[k]], 1) << "unique block " << r.hash_ids[k] << " reused";
    }
  }
  // Mean rate: Poisson at rate_per_s over the window.
  const double expected = spec.rate_per_s * static_cast<double>(spec.duration_s);
  EXPECT_NEAR(static_cast<double>(trace.size()), expected, expected * 0.05);
}

TEST(TraceGenFlood, BurstsArriveOnlyInTheirWindowsAtTheSameMeanRate) {
  TraceGenSpec spec = Spec(TraceShape::kOneShotFlood);
  spec.burst_period_s = 60;
  spec.burst_on_s = 10;
  const std::vector<TraceRequest> trace = MustGenerate(spec);
  std::set<int64_t> bursts;
  for (const TraceRequest& r : trace) {
    ASSERT_LT(r.timestamp_ms % 60'000, 10'000) << r.timestamp_ms;
    bursts.insert(r.timestamp_ms / 60'000);
  }
  EXPECT_EQ(bursts.size(), 10u);
  const double expected = spec.rate_per_s * static_cast<double>(spec.duration_s);
  EXPECT_NEAR(static_cast<double>(trace.size()), expected, expected * 0.05);
}

TEST(TraceGenParams, DefaultsAreValidAndNamesUnique) {
  EXPECT_TRUE(ValidateTraceGenSpec(TraceGenSpec()).ok());
  std::set<std::string> names;
  for (const TraceGenParam& p : TraceGenParams()) {
    EXPECT_TRUE(names.insert(std::string(p.name)).second) << p.name;
    EXPECT_NE(p.integer == nullptr, p.decimal == nullptr) << p.name;
    EXPECT_NE(p.shapes, 0u) << p.name;
    EXPECT_FALSE(p.help.empty()) << p.name;
    EXPECT_EQ(FindTraceGenParam(p.name), &p);
    // Setting a parameter to its default value changes nothing.
    TraceGenSpec spec;
    EXPECT_TRUE(SetTraceGenParam(&spec, p.name, TraceGenParamValue(p, TraceGenSpec())).ok())
        << p.name;
  }
  EXPECT_EQ(FindTraceGenParam("no-such"), nullptr);
  for (TraceShape shape : AllTraceShapes()) {
    EXPECT_EQ(ParseTraceShape(TraceShapeName(shape)), shape);
  }
  EXPECT_EQ(ParseTraceShape("flood"), std::nullopt);
}

// docs/gen-trace.md lists every parameter in a table row
// "| `--name` | default | rule |" with today's default.
TEST(TraceGenParams, DocumentedWithTheirDefaults) {
  std::ifstream in(testing_paths::RepoRoot() / "docs" / "gen-trace.md");
  ASSERT_TRUE(in);
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const TraceGenParam& p : TraceGenParams()) {
    const std::string row = absl::StrCat("| `--", p.name, "` | ");
    const size_t at = doc.find(row);
    ASSERT_NE(at, std::string::npos) << p.name << " has no row in docs/gen-trace.md";
    const size_t begin = at + row.size();
    std::string cell = doc.substr(begin, doc.find(" |", begin) - begin);
    cell.erase(std::remove(cell.begin(), cell.end(), ','), cell.end());
    const std::vector<std::string> words = absl::StrSplit(cell, ' ');
    EXPECT_EQ(words[0], TraceGenParamValue(p, TraceGenSpec())) << p.name;
  }
}

TEST(TraceGenParams, ImpossibleValuesNameTheFlag) {
  const struct {
    const char* name;
    const char* value;
    const char* message;
  } cases[] = {
      {"session-rate-per-s", "-1", "--session-rate-per-s: must be > 0, got -1"},
      {"session-rate-per-s", "0", "--session-rate-per-s: must be > 0, got 0"},
      {"rate-per-s", "nan", "--rate-per-s: must be > 0, got nan"},
      {"turns-mean", "0", "--turns-mean: must be >= 1, got 0"},
      {"tool-prompts", "0", "--tool-prompts: must be >= 1, got 0"},
      {"prefix-blocks", "0", "--prefix-blocks: must be >= 1, got 0"},
      {"zipf-s", "-0.5", "--zipf-s: must be >= 0, got -0.5"},
      {"zipf-s", "11", "--zipf-s: must be <= 10, got 11"},
      {"duration-s", "1.5", "--duration-s: expected an integer, got \"1.5\""},
      {"rate-per-s", "fast", "--rate-per-s: expected a number, got \"fast\""},
      {"blocks-per-request-max", "1000000", "--blocks-per-request-max: must be <= 65536"},
      {"no-such", "1", "--no-such: no such parameter"},
  };
  for (const auto& c : cases) {
    TraceGenSpec spec;
    const absl::Status st = SetTraceGenParam(&spec, c.name, c.value);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.name << "=" << c.value;
    EXPECT_THAT(st.message(), HasSubstr(c.message));
    EXPECT_EQ(spec.session_rate_per_s, TraceGenSpec().session_rate_per_s);  // unchanged
  }
  // A spec filled in directly is checked by GenerateTrace.
  TraceGenSpec spec;
  spec.new_blocks_per_turn = 0;
  EXPECT_EQ(GenerateTrace(spec).status().message(), "--new-blocks-per-turn: must be >= 1, got 0");
  spec = Spec(TraceShape::kOneShotFlood);
  spec.burst_period_s = 5;
  EXPECT_EQ(GenerateTrace(spec).status().message(),
            "--burst-on-s: must be <= --burst-period-s (5), got 10");
}

TEST(TraceGenLimits, ExceedingALimitIsAnErrorNotACut) {
  TraceGenSpec spec = Spec(TraceShape::kHotShift);
  spec.requests_max = 100;
  absl::StatusOr<std::vector<TraceRequest>> r = GenerateTrace(spec);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(), HasSubstr("--requests-max"));

  spec = Spec(TraceShape::kAgentic);
  spec.blocks_per_request_max = 40;  // a session of 9+ turns grows past 8 + 8 x 4 blocks
  r = GenerateTrace(spec);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(), HasSubstr("--blocks-per-request-max"));

  spec = Spec(TraceShape::kOneShotFlood);
  spec.hash_ids_max = 1000;
  r = GenerateTrace(spec);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(), HasSubstr("--hash-ids-max"));

  // At the limit exactly is fine.
  spec = Spec(TraceShape::kHotShift);
  const auto n = static_cast<int64_t>(MustGenerate(spec).size());
  spec.requests_max = n;
  EXPECT_TRUE(GenerateTrace(spec).ok());
}

// A tiny rate or a huge gap ends the trace instead of overflowing the clock.
TEST(TraceGenLimits, ExtremeRatesStayBounded) {
  TraceGenSpec spec = Spec(TraceShape::kAgentic);
  spec.session_rate_per_s = 1e-300;
  absl::StatusOr<std::vector<TraceRequest>> r = GenerateTrace(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->empty());
  spec = Spec(TraceShape::kOneShotFlood);
  spec.rate_per_s = 100'000;
  spec.duration_s = 1;
  spec.burst_period_s = 1;
  spec.burst_on_s = 1;
  spec.requests_max = 200'000;
  r = GenerateTrace(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(static_cast<double>(r->size()), 100'000, 2'000);
}

}  // namespace
}  // namespace heatsink::sim
