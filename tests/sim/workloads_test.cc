// Covers the workload generators (sim/workloads.h, sim/workloads_zipf.h):
// the portable log/exp/pow against the C library, Zipf determinism and skew,
// P/D expansion of a small hand-made trace (gets for cached prefix blocks,
// puts for new blocks after the compute time, no second put of a block in
// flight, decode reads), replay speed scaling, request limits, instance
// policies, the pending-ops bound, the synthetic generators (zipf, cross-domain
// reuse, cold start), scripted ops, the merged scenario stream's order and
// seed stability, and expansion of the full shipped conversation trace.
#include "tests/sim/repo_root.h"
#include "sim/workloads.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/workloads_zipf.h"

namespace heatsink::sim {
namespace {

using ::testing::ElementsAre;

TEST(DeterministicMath, MatchesTheCLibraryClosely) {
  for (double x : {1e-300, 1e-5, 0.3, 0.7071, 1.0, 1.5, 2.0, 10.0, 12345.678, 1e300}) {
    EXPECT_NEAR(DeterministicLog(x), std::log(x), 1e-13 * std::max(1.0, std::fabs(std::log(x))))
        << x;
  }
  for (double y : {-700.0, -20.5, -1.0, -1e-9, 0.0, 0.3465, 1.0, 5.5, 300.0}) {
    EXPECT_NEAR(DeterministicExp(y) / std::exp(y), 1.0, 1e-13) << y;
  }
  for (double k : {1.0, 2.0, 3.0, 1000.0, 1e6}) {
    for (double s : {0.5, 0.99, 1.2, 3.0}) {
      EXPECT_NEAR(DeterministicPow(k, -s) / std::pow(k, -s), 1.0, 1e-12) << k << " " << s;
    }
  }
}

TEST(Zipf, SameSeedSameDrawsDifferentSeedDifferentDraws) {
  absl::StatusOr<ZipfSampler> z = ZipfSampler::Make(1000, 0.99);
  ASSERT_TRUE(z.ok());
  Rng a(42), b(42), c(43);
  std::vector<int64_t> da, db, dc;
  for (int i = 0; i < 2000; ++i) {
    da.push_back(z->Sample(a));
    db.push_back(z->Sample(b));
    dc.push_back(z->Sample(c));
  }
  EXPECT_EQ(da, db);
  EXPECT_NE(da, dc);
  for (int64_t r : da) ASSERT_TRUE(r >= 0 && r < 1000);
}

// Golden values: the table and the draws must be bit-identical on every
// machine and at every optimisation level (they feed byte-identical runs).
// If this fails after a change to the sampler or the Rng, every scenario's
// decision log changes too.
TEST(Zipf, TableAndDrawsArePinned) {
  absl::StatusOr<ZipfSampler> z = ZipfSampler::Make(1000, 0.99);
  ASSERT_TRUE(z.ok());
  Rng rng(42);
  uint64_t draws = 0;
  for (int i = 0; i < 1000; ++i) {
    draws = StableHashCombine(draws, static_cast<uint64_t>(z->Sample(rng)));
  }
  uint64_t table = 0;
  for (int64_t k = 0; k < 1000; ++k) {
    const double p = z->Probability(k);
    uint64_t bits = 0;
    std::memcpy(&bits, &p, sizeof bits);
    table = StableHashCombine(table, bits);
  }
  EXPECT_EQ(draws, 0x3db896a1d068cf93ULL);
  EXPECT_EQ(table, 0x3be67e558172d238ULL);
}

TEST(Zipf, ProbabilitiesFollowTheSkew) {
  const int64_t n = 100;
  for (double s : {0.0, 0.8, 1.0, 2.0}) {
    absl::StatusOr<ZipfSampler> z = ZipfSampler::Make(n, s);
    ASSERT_TRUE(z.ok());
    double h = 0;
    for (int64_t k = 1; k <= n; ++k) h += std::pow(static_cast<double>(k), -s);
    for (int64_t k : {0, 1, 9, 99}) {
      EXPECT_NEAR(z->Probability(k), std::pow(static_cast<double>(k + 1), -s) / h, 1e-12)
          << "s=" << s << " k=" << k;
    }
  }
  // Empirically: with s = 1, rank 0 gets 1/H(100) = 19.28% of the draws and
  // rank 0 is drawn about twice as often as rank 1.
  absl::StatusOr<ZipfSampler> z = ZipfSampler::Make(n, 1.0);
  Rng rng(7);
  std::vector<int64_t> counts(n);
  const int draws = 200'000;
  for (int i = 0; i < draws; ++i) ++counts[static_cast<size_t>(z->Sample(rng))];
  EXPECT_NEAR(counts[0] / static_cast<double>(draws), z->Probability(0), 0.005);
  EXPECT_NEAR(counts[0] / static_cast<double>(counts[1]), 2.0, 0.1);
  EXPECT_GT(counts[1], counts[50]);
}

TEST(Zipf, RejectsBadArguments) {
  EXPECT_EQ(ZipfSampler::Make(0, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ZipfSampler::Make(10, -1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ZipfSampler::Make(11, 1, 10).status().code(), absl::StatusCode::kResourceExhausted);
}

// Domain "p" holds two prefill hosts, domain "d" two decode hosts.
constexpr absl::string_view kPd = R"({
  "name": "pd", "duration_s": DURATION,
  "topology": {"domains": [
    {"name": "p", "hosts": [
      {"name": "hp", "count": 2, "clients": [{"name": "c"}], "prefill_instances": [{"name": "i"}]}]},
    {"name": "d", "hosts": [
      {"name": "hd", "count": 2, "clients": [{"name": "c"}], "decode_instances": [{"name": "i"}]}]}
  ]},
  "workloads": [{"type": "trace", "path": "unused.jsonl", "tokens_per_block": 4,
                 "kv_bytes_per_token": 10, "prefill_ns_per_token": 1000 EXTRA}]
})";

Scenario PdScenario(absl::string_view extra = "", absl::string_view duration = "60") {
  ScenarioLoadOptions options;
  options.check_knob_names = false;
  absl::StatusOr<Scenario> s = ParseScenario(
      absl::StrReplaceAll(kPd, {{"EXTRA", extra}, {"DURATION", duration}}), "pd.json", "",
      options);
  EXPECT_TRUE(s.ok()) << s.status();
  return *std::move(s);
}

TraceRequest Req(int64_t ts, int64_t input, std::vector<int64_t> ids) {
  TraceRequest r;
  r.timestamp_ms = ts;
  r.input_length = input;
  r.output_length = 1;
  r.hash_ids = std::move(ids);
  return r;
}

std::vector<TraceRequest> SmallTrace() {
  return {Req(0, 8, {1, 2}), Req(1, 10, {1, 2, 3}), Req(1, 4, {1}), Req(1, 8, {1, 3})};
}

std::vector<SimOp> Expand(const Scenario& s, std::vector<TraceRequest> trace,
                          const ExpandOptions& options = ExpandOptions()) {
  absl::StatusOr<std::unique_ptr<OpStream>> stream =
      MakeTraceOpStream(s, 0, std::move(trace), Rng(1), options);
  EXPECT_TRUE(stream.ok()) << stream.status();
  absl::StatusOr<std::vector<SimOp>> ops = CollectOps(**stream, 1'000'000);
  EXPECT_TRUE(ops.ok()) << ops.status();
  return *std::move(ops);
}

std::string Describe(const SimOp& op) {
  return absl::StrCat(op.t_ns, " ", SimOpKindName(op.kind), " r", op.request, " ",
                      SimOpPhaseName(op.phase), " ", op.instance, " [",
                      absl::StrJoin(op.keys, ","), "]");
}

std::vector<std::string> DescribeAll(const std::vector<SimOp>& ops) {
  std::vector<std::string> out;
  for (const SimOp& op : ops) out.push_back(Describe(op));
  return out;
}

TEST(TraceExpansion, PutsNewBlocksGetsCachedPrefixAndDecodeReads) {
  const Scenario s = PdScenario();
  const std::vector<SimOp> ops = Expand(s, SmallTrace());
  // r0: nothing cached; 8 tokens x 1000 ns of compute, then both blocks put
  // in one batch and the decode instance reads them.
  // r1 (t = 1 ms): blocks 1, 2 cached -> one batch_get; 2 tokens computed;
  // block 3 put at 1 ms + 2 us; decode reads all three then.
  // r2: block 1 cached, nothing to compute: get and decode get at 1 ms.
  // r3: block 1 cached; block 3 is still being computed by r1, so r3
  // computes 4 tokens but does not put block 3 again, and its decode waits
  // for both its own compute (1 ms + 4 us) and r1's put.
  EXPECT_THAT(DescribeAll(ops),
              ElementsAre("8000 batch_put r0 prefill_put hp-0/i [blk-1,blk-2]",
                          "8000 batch_get r0 decode_read hd-0/i [blk-1,blk-2]",
                          "1000000 batch_get r1 prefill_read hp-1/i [blk-1,blk-2]",
                          "1000000 get r2 prefill_read hp-0/i [blk-1]",
                          "1000000 get r2 decode_read hd-0/i [blk-1]",
                          "1000000 get r3 prefill_read hp-1/i [blk-1]",
                          "1002000 put r1 prefill_put hp-1/i [blk-3]",
                          "1002000 batch_get r1 decode_read hd-1/i [blk-1,blk-2,blk-3]",
                          "1004000 batch_get r3 decode_read hd-1/i [blk-1,blk-3]"));
  for (const SimOp& op : ops) {
    EXPECT_EQ(op.tenant, "default");
    if (op.kind == SimOpKind::kPut || op.kind == SimOpKind::kBatchPut) {
      EXPECT_EQ(op.size_bytes, 40);  // 4 tokens x 10 bytes
      EXPECT_EQ(op.requester_domain, "p");
      EXPECT_EQ(op.client, op.instance.substr(0, 4) + "/c");
    }
    if (op.phase == SimOpPhase::kDecodeRead) {
      EXPECT_EQ(op.requester_domain, "d");
    }
  }
  EXPECT_EQ(ops[0].compute_ns, 8000);
}

TEST(TraceExpansion, ReplaySpeedScalesArrivalsNotComputeTime) {
  const Scenario fast = PdScenario(R"(, "replay_speed": 4, "start_s": 0.5)");
  const std::vector<SimOp> ops = Expand(fast, SmallTrace());
  // Trace time 1 ms at 4x arrives 250 us after the workload's start (0.5 s);
  // compute still takes 2 us.
  ASSERT_EQ(ops.size(), 9u);
  EXPECT_EQ(ops[0].t_ns, 500'000'000 + 8000);
  EXPECT_EQ(ops[2].t_ns, 500'250'000);
  EXPECT_EQ(ops[6].t_ns, 500'252'000);
  const Scenario slow = PdScenario(R"(, "replay_speed": 0.5)");
  EXPECT_EQ(Expand(slow, SmallTrace())[2].t_ns, 2'000'000);
}

TEST(TraceExpansion, RequestLimitAndRunEnd) {
  const std::vector<SimOp> limited = Expand(PdScenario(R"(, "request_limit": 1)"), SmallTrace());
  ASSERT_EQ(limited.size(), 2u);  // r0's batch_put and decode batch_get
  for (const SimOp& op : limited) EXPECT_EQ(op.request, 0);
  // A run of 1 ms keeps only what happens before its end.
  std::vector<TraceRequest> trace = SmallTrace();
  trace.push_back(Req(5000, 4, {77}));
  const Scenario short_run = PdScenario("", "0.001");
  const std::vector<SimOp> cut = Expand(short_run, trace);
  ASSERT_EQ(cut.size(), 2u);
  for (const SimOp& op : cut) EXPECT_LT(op.t_ns, 1'000'000);
}

TEST(TraceExpansion, InstancePolicies) {
  std::vector<TraceRequest> trace;
  for (int i = 0; i < 8; ++i) trace.push_back(Req(i, 4, {100 + i % 2}));
  // hash: requests with the same first block go to the same instance.
  std::map<int64_t, std::set<std::string>> by_block;
  for (const SimOp& op :
       Expand(PdScenario(R"(, "prefill": {"policy": "hash"}, "decode": {"policy": "hash"})"),
              trace)) {
    if (op.phase == SimOpPhase::kPrefillRead || op.phase == SimOpPhase::kPrefillPut) {
      by_block[op.keys[0] == "blk-100" ? 100 : 101].insert(op.instance);
    }
  }
  EXPECT_EQ(by_block[100].size(), 1u);
  EXPECT_EQ(by_block[101].size(), 1u);
  // weights: only the weighted domain is used.
  const Scenario weighted = PdScenario(R"(, "decode": {"policy": "weights", "weights": {"d": 1}})");
  for (const SimOp& op : Expand(weighted, trace)) {
    if (op.phase == SimOpPhase::kDecodeRead) {
      EXPECT_EQ(op.requester_domain, "d");
    }
  }
}

TEST(TraceExpansion, PendingOperationsAreBounded) {
  ExpandOptions options;
  options.pending_ops_max = 1;  // the request below needs two: batch_put, batch_get
  const Scenario s = PdScenario();
  absl::StatusOr<std::unique_ptr<OpStream>> stream =
      MakeTraceOpStream(s, 0, {Req(0, 12, {1, 2, 3})}, Rng(1), options);
  ASSERT_TRUE(stream.ok());
  SimOp op;
  absl::StatusOr<bool> next = (*stream)->Next(&op);
  EXPECT_EQ(next.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(TraceExpansion, HandBuiltScenariosAreCheckedToo) {
  Scenario s = PdScenario();
  s.workloads[0].trace.decode_policy = InstancePolicy::kSameDomain;  // "p" has no decoders
  EXPECT_EQ(MakeTraceOpStream(s, 0, SmallTrace(), Rng(1)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  s = PdScenario();
  s.workloads[0].trace.prefill_policy = InstancePolicy::kWeights;
  s.workloads[0].trace.prefill_weights = {{"d", 1.0}};  // "d" has no prefill instances
  EXPECT_EQ(MakeTraceOpStream(s, 0, SmallTrace(), Rng(1)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  std::vector<TraceRequest> unsorted = SmallTrace();
  std::swap(unsorted[0], unsorted[1]);
  const Scenario plain = PdScenario();
  EXPECT_EQ(MakeTraceOpStream(plain, 0, unsorted, Rng(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TraceExpansion, FullConversationTrace) {
  const std::filesystem::path path = testing_paths::RepoRoot() / "scenarios/traces/conversation_trace.jsonl";
  absl::StatusOr<std::vector<TraceRequest>> trace = ReadTraceFile(path.string());
  ASSERT_TRUE(trace.ok()) << trace.status();
  std::set<int64_t> distinct;
  for (const TraceRequest& r : *trace) distinct.insert(r.hash_ids.begin(), r.hash_ids.end());
  // A run long enough for the whole trace (59 minutes).
  const Scenario s = PdScenario("", "4000");
  absl::StatusOr<std::unique_ptr<OpStream>> stream = MakeTraceOpStream(s, 0, *trace, Rng(1));
  ASSERT_TRUE(stream.ok());
  int64_t puts = 0, put_ops = 0, decodes = 0, ops = 0;
  TimeNs last = 0;
  SimOp op;
  while (true) {
    absl::StatusOr<bool> more = (*stream)->Next(&op);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    ASSERT_GE(op.t_ns, last);
    last = op.t_ns;
    ++ops;
    if (op.kind == SimOpKind::kPut || op.kind == SimOpKind::kBatchPut) {
      ++put_ops;
      puts += static_cast<int64_t>(op.keys.size());
    }
    decodes += op.phase == SimOpPhase::kDecodeRead;
  }
  EXPECT_EQ(puts, static_cast<int64_t>(distinct.size()));  // each block put exactly once
  // A request's new blocks go in one batch: far fewer put operations than blocks.
  EXPECT_LE(put_ops, static_cast<int64_t>(trace->size()));
  EXPECT_LT(put_ops * 10, puts);
  EXPECT_EQ(decodes, static_cast<int64_t>(trace->size()));
}

// ---- synthetic, scripted, merged ---------------------------------------

constexpr absl::string_view kSynthetic = R"({
  "name": "syn", "duration_s": 10, "seed": 3,
  "topology": {"domains": [
    {"name": "a", "hosts": [{"name": "ha", "count": 3, "clients": [{"name": "c"}],
                             "segments": [{"name": "s", "capacity_bytes": "1GiB"}]}]},
    {"name": "b", "join_at_s": 2, "hosts": [{"name": "hb", "count": 2, "clients": [{"name": "c"}]}]}
  ]},
  "workloads": [WORKLOADS],
  "faults": {"worker_crashes": [{"host": "ha-1", "at_s": 1, "restart_at_s": 1.5}]}
})";

Scenario Synthetic(absl::string_view workloads) {
  ScenarioLoadOptions options;
  options.check_knob_names = false;
  absl::StatusOr<Scenario> s = ParseScenario(
      absl::StrReplaceAll(kSynthetic, {{"WORKLOADS", workloads}}), "syn.json", "", options);
  EXPECT_TRUE(s.ok()) << s.status();
  return *std::move(s);
}

std::vector<SimOp> All(const Scenario& s, uint64_t seed = 9) {
  absl::StatusOr<std::unique_ptr<OpStream>> stream = MakeScenarioOpStream(s, Rng(seed));
  EXPECT_TRUE(stream.ok()) << stream.status();
  absl::StatusOr<std::vector<SimOp>> ops = CollectOps(**stream, 10'000'000);
  EXPECT_TRUE(ops.ok()) << ops.status();
  return *std::move(ops);
}

TEST(SyntheticWorkloads, ZipfPutsThenJitteredReads) {
  const Scenario s = Synthetic(R"({"type": "zipf", "name": "z", "objects": 50, "rate_per_s": 1000,
      "reader_domains": ["a"], "readers_per_domain": 6, "batch_size": 3, "duration_s": 2})");
  const std::vector<SimOp> ops = All(s);
  int64_t puts = 0, reads = 0;
  TimeNs prev_read = -1;
  std::set<std::string> clients;
  for (const SimOp& op : ops) {
    if (op.workload == kFaultSource) continue;
    if (op.kind == SimOpKind::kPut) {
      EXPECT_EQ(reads, 0) << "puts come first";
      EXPECT_EQ(op.t_ns, 0);
      EXPECT_EQ(op.keys[0], absl::StrCat("z-", puts));
      ++puts;
      continue;
    }
    ASSERT_EQ(op.kind, SimOpKind::kBatchGet);
    ASSERT_EQ(op.keys.size(), 3u);
    EXPECT_EQ(std::set<std::string>(op.keys.begin(), op.keys.end()).size(), 3u);
    EXPECT_EQ(op.requester_domain, "a");
    clients.insert(op.client);
    if (prev_read >= 0) {
      EXPECT_GE(op.t_ns - prev_read, 500'000);    // mean 1 ms, +-50%
      EXPECT_LE(op.t_ns - prev_read, 1'500'000);
    } else {
      EXPECT_EQ(op.t_ns, 100 * kNsPerMs);         // after settle_ms
    }
    prev_read = op.t_ns;
    ++reads;
  }
  EXPECT_EQ(puts, 50);
  EXPECT_NEAR(reads, 2000, 100);  // 2 s at 1000/s
  EXPECT_EQ(clients, (std::set<std::string>{"ha-0/c", "ha-1/c", "ha-2/c"}));
  EXPECT_EQ(DescribeAll(All(s)), DescribeAll(ops)) << "same seed, same stream";
  EXPECT_NE(DescribeAll(All(s, 10)), DescribeAll(ops)) << "another seed, another stream";
}

// put_batch_keys: the initial puts become batch_puts of that many keys (the
// last one holds the rest), each by the next writer in turn; the reads after
// them are the same draws as with one put per object.
TEST(SyntheticWorkloads, InitialPutsInBatchesByWritersInTurn) {
  const std::string zipf = R"({"type": "zipf", "name": "z", "objects": 50, "rate_per_s": 1000,
      "reader_domains": ["a"], "duration_s": 1)";
  const std::vector<SimOp> batched = All(Synthetic(zipf + R"(, "put_batch_keys": 16})"));
  const std::vector<SimOp> single = All(Synthetic(zipf + "}"));
  std::vector<std::vector<std::string>> batches;
  std::vector<std::string> writers;
  std::vector<SimOp> batched_reads;
  for (const SimOp& op : batched) {
    if (op.kind == SimOpKind::kBatchPut) {
      EXPECT_EQ(op.t_ns, 0);
      EXPECT_EQ(op.size_bytes, int64_t{1} << 20);
      batches.push_back(op.keys);
      writers.push_back(op.client);
    } else {
      ASSERT_NE(op.kind, SimOpKind::kPut);
      batched_reads.push_back(op);
    }
  }
  ASSERT_EQ(batches.size(), 4u);  // 16 + 16 + 16 + 2
  EXPECT_EQ(batches[3], (std::vector<std::string>{"z-48", "z-49"}));
  int64_t next = 0;
  for (const std::vector<std::string>& keys : batches) {
    for (const std::string& key : keys) EXPECT_EQ(key, absl::StrCat("z-", next++));
  }
  EXPECT_EQ(next, 50);
  EXPECT_EQ(writers, (std::vector<std::string>{"ha-0/c", "ha-1/c", "ha-2/c", "ha-0/c"}));
  std::vector<SimOp> single_reads;
  for (const SimOp& op : single) {
    if (op.kind != SimOpKind::kPut) single_reads.push_back(op);
  }
  EXPECT_EQ(DescribeAll(batched_reads), DescribeAll(single_reads));
}

TEST(SyntheticWorkloads, PutBatchKeysIsCheckedAndOnlyForSyntheticWorkloads) {
  ScenarioLoadOptions options;
  options.check_knob_names = false;
  auto parse = [&](absl::string_view workload) {
    return ParseScenario(absl::StrReplaceAll(kSynthetic, {{"WORKLOADS", workload}}), "syn.json", "",
                         options);
  };
  absl::StatusOr<Scenario> zero = parse(R"({"type": "zipf", "objects": 5, "rate_per_s": 1,
      "put_batch_keys": 0})");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("workloads[0].put_batch_keys"), std::string::npos)
      << zero.status();
  absl::StatusOr<Scenario> scripted = parse(R"({"type": "scripted", "put_batch_keys": 4,
      "ops": [{"op": "put", "client": "ha-0/c", "key": "k", "size_bytes": 1}]})");
  ASSERT_FALSE(scripted.ok());
  EXPECT_NE(scripted.status().message().find("put_batch_keys"), std::string::npos)
      << scripted.status();
}

TEST(SyntheticWorkloads, ZipfHotSetDriftsOneObjectPerStep) {
  // Skew 10: rank 0 is nearly every read. With drift_step_ms 100, a read at
  // t ms after the first read of rank r reads object (r + floor(t / 100)) mod 20.
  const Scenario s = Synthetic(R"({"type": "zipf", "name": "z", "objects": 20, "rate_per_s": 1000,
      "skew": 10, "reader_domains": ["a"], "duration_s": 3, "drift_step_ms": 100})");
  int64_t reads = 0, at_front = 0;
  TimeNs first = -1;
  for (const SimOp& op : All(s)) {
    if (op.workload == kFaultSource || op.kind == SimOpKind::kPut) continue;
    if (first < 0) first = op.t_ns;
    const int64_t steps = (op.t_ns - first) / (100 * kNsPerMs);
    ++reads;
    at_front += op.keys[0] == absl::StrCat("z-", steps % 20);
  }
  ASSERT_GT(reads, 2500);
  EXPECT_GT(at_front, reads * 99 / 100) << at_front << " of " << reads;
  // Without drift the same reads stay on object 0.
  const Scenario still = Synthetic(R"({"type": "zipf", "name": "z", "objects": 20,
      "rate_per_s": 1000, "skew": 10, "reader_domains": ["a"], "duration_s": 3})");
  int64_t on_zero = 0, still_reads = 0;
  for (const SimOp& op : All(still)) {
    if (op.workload == kFaultSource || op.kind == SimOpKind::kPut) continue;
    ++still_reads;
    on_zero += op.keys[0] == "z-0";
  }
  EXPECT_GT(on_zero, still_reads * 99 / 100);
}

TEST(SyntheticWorkloads, CrossDomainReuseReadsEveryObjectRepeatedlyFromTheReaderDomain) {
  const Scenario s = Synthetic(R"({"type": "cross_domain_reuse", "name": "x", "writer_domain": "a",
      "reader_domain": "b", "objects": 4, "reads_per_object": 3, "rate_per_s": 100,
      "readers": 2, "start_s": 2})");
  std::vector<std::string> read_keys;
  for (const SimOp& op : All(s)) {
    if (op.workload == kFaultSource) continue;
    if (op.kind == SimOpKind::kPut) {
      EXPECT_EQ(op.requester_domain, "a");
      continue;
    }
    EXPECT_EQ(op.requester_domain, "b");
    EXPECT_GE(op.t_ns, 2'100'000'000);
    read_keys.push_back(op.keys[0]);
  }
  EXPECT_THAT(read_keys, ElementsAre("x-0", "x-1", "x-2", "x-3", "x-0", "x-1", "x-2", "x-3",
                                     "x-0", "x-1", "x-2", "x-3"));
}

TEST(SyntheticWorkloads, ColdStartReadsBeginWhenTheDomainJoins) {
  const Scenario s = Synthetic(R"({"type": "cold_start", "name": "cs", "domain": "b",
      "working_set": 20, "read_rate_per_s": 50, "source_read_rate_per_s": 20})");
  TimeNs first_b = -1;
  int64_t source_reads_before_join = 0;
  for (const SimOp& op : All(s)) {
    if (op.workload == kFaultSource || op.kind == SimOpKind::kPut) continue;
    if (op.requester_domain == "b" && first_b < 0) first_b = op.t_ns;
    if (op.requester_domain == "a" && op.t_ns < 2 * kNsPerSec) ++source_reads_before_join;
  }
  EXPECT_EQ(first_b, 2 * kNsPerSec);
  EXPECT_NEAR(source_reads_before_join, 38, 4);  // 1.9 s at 20/s
}

TEST(ScenarioStream, MergesWorkloadsAndFaultsInTimeOrder) {
  const Scenario s = Synthetic(R"({"type": "scripted", "name": "s1", "ops": [
        {"op": "put", "client": "ha-0/c", "key": "k", "size_bytes": 10},
        {"op": "advance_time", "by_ms": 1000},
        {"op": "get", "client": "hb-1/c", "key": "k"},
        {"op": "set_knob", "name": "x", "value": 2, "at_ms": 1500}]},
      {"type": "scripted", "name": "s2", "ops": [
        {"op": "remove", "client": "ha-2/c", "key": "k", "at_ms": 1000}]})");
  EXPECT_THAT(DescribeAll(All(s)),
              ElementsAre("0 put r-1 none  [k]", "1000000000 get r-1 none  [k]",
                          "1000000000 remove r-1 none  [k]",
                          "1000000000 kill_worker r-1 none  []",
                          "1500000000 set_knob r-1 none  []",
                          "1500000000 restart_worker r-1 none  []"));
  const std::vector<SimOp> ops = All(s);
  EXPECT_EQ(ops[1].requester_domain, "b");
  EXPECT_EQ(ops[1].workload, 0);
  EXPECT_EQ(ops[2].workload, 1);
  EXPECT_EQ(ops[3].workload, kFaultSource);
  EXPECT_EQ(ops[3].host, "ha-1");
  EXPECT_EQ(ops[4].knob_value, "2");
  EXPECT_EQ(ops[4].where, "syn.json:12:9: $.workloads[0].ops[3]");
}

TEST(ScenarioStream, AddingAWorkloadDoesNotShiftAnothersDraws) {
  const std::string zipf =
      R"({"type": "zipf", "name": "z", "objects": 30, "rate_per_s": 200, "reader_domains": ["a"]})";
  const std::string other =
      R"({"type": "zipf", "name": "y", "objects": 5, "rate_per_s": 300, "reader_domains": ["a"]})";
  const auto only = [](const std::vector<SimOp>& ops, int32_t w) {
    std::vector<std::string> out;
    for (const SimOp& op : ops) {
      if (op.workload == w) out.push_back(Describe(op) + op.client);
    }
    return out;
  };
  EXPECT_EQ(only(All(Synthetic(zipf)), 0), only(All(Synthetic(other + ", " + zipf)), 1));
}

TEST(ScenarioStream, OpsMaxIsEnforced) {
  const Scenario s = Synthetic(
      R"({"type": "zipf", "objects": 10, "rate_per_s": 1000, "reader_domains": ["a"]})");
  ExpandOptions options;
  options.ops_max = 100;
  absl::StatusOr<std::unique_ptr<OpStream>> stream = MakeScenarioOpStream(s, Rng(1), options);
  ASSERT_TRUE(stream.ok());
  absl::StatusOr<std::vector<SimOp>> ops = CollectOps(**stream, 1'000'000);
  EXPECT_EQ(ops.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(ScenarioStream, EveryShippedScenarioExpandsInTimeOrder) {
  const std::filesystem::path root = testing_paths::RepoRoot();
  std::vector<std::filesystem::path> files;
  for (const char* dir : {"scenarios", "scenarios/admission"}) {
    for (const auto& e : std::filesystem::directory_iterator(root / dir)) {
      if (e.path().extension() == ".json") files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  ScenarioLoadOptions options;
  options.check_knob_names = false;  // knob names are scenario_test's business
  for (const auto& path : files) {
    absl::StatusOr<Scenario> s = LoadScenarioFile(path.string(), options);
    ASSERT_TRUE(s.ok()) << s.status();
    absl::StatusOr<std::unique_ptr<OpStream>> stream = MakeScenarioOpStream(*s, Rng(s->seed));
    ASSERT_TRUE(stream.ok()) << path << ": " << stream.status();
    int64_t ops = 0;
    TimeNs last = 0;
    SimOp op;
    // A prefix keeps the debug suite quick; the generators' later behaviour
    // is the same code (FullConversationTrace drains a whole trace).
    while (ops < 20'000) {
      absl::StatusOr<bool> more = (*stream)->Next(&op);
      ASSERT_TRUE(more.ok()) << path << ": " << more.status();
      if (!*more) break;
      ASSERT_GE(op.t_ns, last) << path;
      ASSERT_LT(op.t_ns, s->duration_ns) << path;
      last = op.t_ns;
      ++ops;
    }
    EXPECT_GT(ops, 0) << path;
  }
}

}  // namespace
}  // namespace heatsink::sim
