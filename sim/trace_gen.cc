#include "sim/trace_gen.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/env/rng.h"
#include "sim/workloads_zipf.h"

namespace heatsink::sim {
namespace {

constexpr int64_t kUsPerS = 1'000'000;
constexpr int64_t kUsPerMs = 1'000;
// Longer than any window (30 days): an exponential gap is capped here so a
// tiny rate cannot overflow the clock.
constexpr double kGapCapUs = 1e15;

constexpr uint32_t Bit(TraceShape shape) { return uint32_t{1} << static_cast<int>(shape); }
constexpr uint32_t kEvery =
    Bit(TraceShape::kAgentic) | Bit(TraceShape::kHotShift) | Bit(TraceShape::kOneShotFlood);
constexpr uint32_t kAgentic = Bit(TraceShape::kAgentic);
constexpr uint32_t kHotShift = Bit(TraceShape::kHotShift);
constexpr uint32_t kFlood = Bit(TraceShape::kOneShotFlood);

constexpr double kDurationMaxS = 30 * 86'400;  // 30 days
constexpr double kBlocksMax = 65'536;          // sim/trace.h's hash_ids_per_request_max
constexpr double kPromptsMax = 100'000;

TraceGenParam Integer(absl::string_view name, uint32_t shapes, int64_t TraceGenSpec::*field,
                      double min, double max, absl::string_view help) {
  TraceGenParam p;
  p.name = name;
  p.shapes = shapes;
  p.integer = field;
  p.min = min;
  p.max = max;
  p.help = help;
  return p;
}

TraceGenParam Decimal(absl::string_view name, uint32_t shapes, double TraceGenSpec::*field,
                      double min, bool min_exclusive, double max, absl::string_view help) {
  TraceGenParam p;
  p.name = name;
  p.shapes = shapes;
  p.decimal = field;
  p.min = min;
  p.min_exclusive = min_exclusive;
  p.max = max;
  p.help = help;
  return p;
}

std::vector<TraceGenParam> MakeParams() {
  using S = TraceGenSpec;
  return {
      Integer("duration-s", kEvery, &S::duration_s, 1, kDurationMaxS,
              "Length of the trace window in seconds; every arrival falls in it"),
      Decimal("zipf-s", kEvery, &S::zipf_s, 0, false, 10,
              "Zipf exponent of prompt popularity (tool prompts, hot prefixes, system prompts); "
              "0 is uniform"),
      Integer("output-length-mean", kEvery, &S::output_length_mean, 1, 1'000'000,
              "Mean output_length in tokens; each is uniform in [1, 2 x mean - 1]"),
      Integer("requests-max", kEvery, &S::requests_max, 1, 20'000'000,
              "Most requests the trace may hold; a trace that would hold more is an error"),
      Integer("blocks-per-request-max", kEvery, &S::blocks_per_request_max, 1, kBlocksMax,
              "Most hash ids in one request; a longer request is an error"),
      Integer("hash-ids-max", kEvery, &S::hash_ids_max, 1, 1'000'000'000,
              "Most hash ids in the whole trace (summed over requests); more is an error"),
      Decimal("session-rate-per-s", kAgentic, &S::session_rate_per_s, 0, true, 1'000,
              "Sessions starting per second (Poisson arrivals)"),
      Integer("turns-mean", kAgentic, &S::turns_mean, 1, 10'000,
              "Mean turns per session; each session has a uniform count in [1, 2 x mean - 1]"),
      Integer("turn-gap-s", kAgentic, &S::turn_gap_s, 1, 86'400,
              "Mean think/tool time between a session's turns in seconds (exponential gaps)"),
      Integer("tool-prompts", kAgentic, &S::tool_prompts, 1, kPromptsMax,
              "Distinct shared tool prompts; each session uses one, chosen zipf-popular"),
      Integer("tool-prompt-blocks", kAgentic, &S::tool_prompt_blocks, 1, kBlocksMax,
              "Blocks of each tool prompt"),
      Integer("new-blocks-per-turn", kAgentic, &S::new_blocks_per_turn, 1, kBlocksMax,
              "Fresh blocks each turn appends to the session's history"),
      Decimal("rate-per-s", kHotShift | kFlood, &S::rate_per_s, 0, true, 100'000,
              "Requests per second (Poisson arrivals; with bursts, the mean over a period)"),
      Integer("unique-blocks", kHotShift | kFlood, &S::unique_blocks, 1, kBlocksMax,
              "Fresh blocks after the shared prefix, never used again"),
      Integer("hot-prefixes", kHotShift, &S::hot_prefixes, 1, kPromptsMax,
              "Prefixes in each hot set; each request picks one, zipf-popular"),
      Integer("prefix-blocks", kHotShift, &S::prefix_blocks, 1, kBlocksMax,
              "Blocks of each hot prefix"),
      Integer("shift-period-s", kHotShift, &S::shift_period_s, 1, kDurationMaxS,
              "Seconds between hot-set replacements; every period uses fresh prefixes"),
      Integer("system-prompts", kFlood, &S::system_prompts, 1, kPromptsMax,
              "Shared system prompts; each request starts with one, chosen zipf-popular"),
      Integer("shared-prefix-blocks", kFlood, &S::shared_prefix_blocks, 1, kBlocksMax,
              "Blocks of each system prompt"),
      Integer("burst-period-s", kFlood, &S::burst_period_s, 0, kDurationMaxS,
              "0: steady arrivals; else requests arrive only in the first --burst-on-s seconds "
              "of every period, faster by period / on so the mean rate stays --rate-per-s"),
      Integer("burst-on-s", kFlood, &S::burst_on_s, 1, kDurationMaxS,
              "Seconds of arrivals at the start of each burst period (<= --burst-period-s)"),
  };
}

// A bound as text: integral bounds without an exponent ("1000000", not "1e+06").
std::string Bound(double v) {
  if (v == static_cast<double>(static_cast<int64_t>(v))) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  return absl::StrCat(v);
}

absl::Status CheckRange(const TraceGenParam& p, double v, absl::string_view shown) {
  if (p.min_exclusive ? !(v > p.min) : !(v >= p.min)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", p.name, ": must be ", p.min_exclusive ? "> " : ">= ", Bound(p.min), ", got ", shown));
  }
  if (!(v <= p.max)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", p.name, ": must be <= ", Bound(p.max), ", got ", shown));
  }
  return absl::OkStatus();
}

absl::Status CheckParam(const TraceGenParam& p, const TraceGenSpec& spec) {
  if (p.integer != nullptr) {
    const int64_t v = spec.*p.integer;
    return CheckRange(p, static_cast<double>(v), absl::StrCat(v));
  }
  const double v = spec.*p.decimal;
  return CheckRange(p, v, absl::StrCat(v));
}

// An exponential gap of mean `mean_us`, in whole microseconds: -ln(1 - U)
// with U in [0, 1), through DeterministicLog (see the header).
int64_t ExponentialUs(Rng& rng, double mean_us) {
  const double x = -DeterministicLog(1.0 - rng.NextDouble01()) * mean_us;
  if (!(x < kGapCapUs)) return static_cast<int64_t>(kGapCapUs);
  return static_cast<int64_t>(x + 0.5);
}

// Collects requests as the shapes make them, enforces the limits, and
// orders and numbers them at the end.
class TraceBuilder {
 public:
  explicit TraceBuilder(const TraceGenSpec& spec)
      : spec_(spec),
        lengths_(Rng(spec.seed).Fork(absl::StrCat(TraceShapeName(spec.shape), "/lengths"))) {}
  TraceBuilder(const TraceBuilder&) = delete;
  TraceBuilder& operator=(const TraceBuilder&) = delete;

  // Appends `n` blocks never used before.
  void AppendNewBlocks(int64_t n, std::vector<int64_t>* blocks) {
    for (int64_t i = 0; i < n; ++i) blocks->push_back(next_block_++);
  }

  // A request arriving at `t_us` with prompt `blocks`; draws its lengths.
  absl::Status Add(int64_t t_us, std::vector<int64_t> blocks) {
    const auto n = static_cast<int64_t>(blocks.size());
    if (static_cast<int64_t>(drafts_.size()) >= spec_.requests_max) {
      return absl::ResourceExhaustedError(
          absl::StrCat("--requests-max: the trace would hold more than ", spec_.requests_max,
                       " requests (lower the arrival rate or --duration-s, or raise the limit)"));
    }
    if (n > spec_.blocks_per_request_max) {
      return absl::ResourceExhaustedError(
          absl::StrCat("--blocks-per-request-max: a request would have ", n, " blocks, more than ",
                       spec_.blocks_per_request_max, " (shorten the prompts or raise the limit)"));
    }
    if (hash_ids_ + n > spec_.hash_ids_max) {
      return absl::ResourceExhaustedError(
          absl::StrCat("--hash-ids-max: the trace would hold more than ", spec_.hash_ids_max,
                       " hash ids (shorten the trace or the prompts, or raise the limit)"));
    }
    hash_ids_ += n;
    TraceRequest r;
    r.input_length = n * kGenTokensPerBlock - lengths_.UniformRange(0, kGenTokensPerBlock - 1);
    r.output_length = lengths_.UniformRange(1, 2 * spec_.output_length_mean - 1);
    r.hash_ids = std::move(blocks);
    drafts_.push_back(Draft{t_us, std::move(r)});
    return absl::OkStatus();
  }

  // Sorted by arrival (ties in generation order), timestamps in ms, lines
  // numbered, block ids renumbered by first appearance.
  std::vector<TraceRequest> Finish() && {
    std::stable_sort(drafts_.begin(), drafts_.end(),
                     [](const Draft& a, const Draft& b) { return a.t_us < b.t_us; });
    std::vector<int64_t> renumbered(static_cast<size_t>(next_block_), -1);
    int64_t next = 0;
    std::vector<TraceRequest> out;
    out.reserve(drafts_.size());
    for (Draft& d : drafts_) {
      d.request.timestamp_ms = d.t_us / kUsPerMs;
      d.request.line = static_cast<int64_t>(out.size()) + 1;
      for (int64_t& id : d.request.hash_ids) {
        int64_t& to = renumbered[static_cast<size_t>(id)];
        if (to < 0) to = next++;
        id = to;
      }
      out.push_back(std::move(d.request));
    }
    return out;
  }

 private:
  struct Draft {
    int64_t t_us = 0;
    TraceRequest request;
  };
  const TraceGenSpec& spec_;
  Rng lengths_;
  int64_t next_block_ = 0;
  int64_t hash_ids_ = 0;
  std::vector<Draft> drafts_;
};

// A set of shared prefixes, each made of fresh blocks on first use.
class PrefixSet {
 public:
  PrefixSet(int64_t count, int64_t blocks)
      : blocks_(blocks), prefixes_(static_cast<size_t>(count)) {}

  const std::vector<int64_t>& Get(int64_t index, TraceBuilder& builder) {
    std::vector<int64_t>& p = prefixes_[static_cast<size_t>(index)];
    if (p.empty()) builder.AppendNewBlocks(blocks_, &p);
    return p;
  }
  // Forgets every prefix: later Gets make fresh ones.
  void Replace() {
    for (std::vector<int64_t>& p : prefixes_) p.clear();
  }

 private:
  const int64_t blocks_;
  std::vector<std::vector<int64_t>> prefixes_;
};

// The draws of one shape: forked by shape name, so two shapes with one seed
// are independent.
struct Streams {
  explicit Streams(const TraceGenSpec& spec)
      : arrivals(Rng(spec.seed).Fork(absl::StrCat(TraceShapeName(spec.shape), "/arrivals"))),
        content(Rng(spec.seed).Fork(absl::StrCat(TraceShapeName(spec.shape), "/content"))) {}
  Rng arrivals;
  Rng content;
};

absl::Status GenerateAgentic(const TraceGenSpec& spec, TraceBuilder& builder) {
  Streams rng(spec);
  HS_ASSIGN_OR_RETURN(ZipfSampler popularity, ZipfSampler::Make(spec.tool_prompts, spec.zipf_s));
  PrefixSet tool_prompts(spec.tool_prompts, spec.tool_prompt_blocks);
  const int64_t end_us = spec.duration_s * kUsPerS;
  const double session_gap_us = static_cast<double>(kUsPerS) / spec.session_rate_per_s;
  const auto turn_gap_us = static_cast<double>(spec.turn_gap_s * kUsPerS);
  for (int64_t t = ExponentialUs(rng.arrivals, session_gap_us); t < end_us;
       t += ExponentialUs(rng.arrivals, session_gap_us)) {
    std::vector<int64_t> history = tool_prompts.Get(popularity.Sample(rng.content), builder);
    const int64_t turns = rng.content.UniformRange(1, 2 * spec.turns_mean - 1);
    int64_t turn_t = t;
    for (int64_t k = 0; k < turns; ++k) {
      if (k > 0) turn_t += ExponentialUs(rng.content, turn_gap_us);
      if (turn_t >= end_us) break;  // the rest of the session is after the window
      builder.AppendNewBlocks(spec.new_blocks_per_turn, &history);
      HS_RETURN_IF_ERROR(builder.Add(turn_t, history));
    }
  }
  return absl::OkStatus();
}

absl::Status GenerateHotShift(const TraceGenSpec& spec, TraceBuilder& builder) {
  Streams rng(spec);
  HS_ASSIGN_OR_RETURN(ZipfSampler popularity, ZipfSampler::Make(spec.hot_prefixes, spec.zipf_s));
  PrefixSet hot(spec.hot_prefixes, spec.prefix_blocks);
  const int64_t end_us = spec.duration_s * kUsPerS;
  const int64_t shift_us = spec.shift_period_s * kUsPerS;
  const double gap_us = static_cast<double>(kUsPerS) / spec.rate_per_s;
  int64_t period = 0;
  for (int64_t t = ExponentialUs(rng.arrivals, gap_us); t < end_us;
       t += ExponentialUs(rng.arrivals, gap_us)) {
    if (t / shift_us != period) {
      period = t / shift_us;
      hot.Replace();
    }
    std::vector<int64_t> blocks = hot.Get(popularity.Sample(rng.content), builder);
    builder.AppendNewBlocks(spec.unique_blocks, &blocks);
    HS_RETURN_IF_ERROR(builder.Add(t, std::move(blocks)));
  }
  return absl::OkStatus();
}

absl::Status GenerateOneShotFlood(const TraceGenSpec& spec, TraceBuilder& builder) {
  Streams rng(spec);
  HS_ASSIGN_OR_RETURN(ZipfSampler popularity, ZipfSampler::Make(spec.system_prompts, spec.zipf_s));
  PrefixSet system_prompts(spec.system_prompts, spec.shared_prefix_blocks);
  const int64_t end_us = spec.duration_s * kUsPerS;
  // Arrivals run on a clock that counts only burst time, at the rate that
  // keeps the mean: rate x period / on. Steady arrivals are one long burst.
  const bool bursts = spec.burst_period_s > 0;
  const int64_t period_us = bursts ? spec.burst_period_s * kUsPerS : end_us;
  const int64_t on_us = bursts ? spec.burst_on_s * kUsPerS : end_us;
  const double gap_us = static_cast<double>(kUsPerS) * static_cast<double>(on_us) /
                        (spec.rate_per_s * static_cast<double>(period_us));
  for (int64_t on_t = ExponentialUs(rng.arrivals, gap_us);;
       on_t += ExponentialUs(rng.arrivals, gap_us)) {
    const int64_t burst = on_t / on_us;
    if (burst > end_us / period_us) break;
    const int64_t t = burst * period_us + on_t % on_us;
    if (t >= end_us) break;
    std::vector<int64_t> blocks = system_prompts.Get(popularity.Sample(rng.content), builder);
    builder.AppendNewBlocks(spec.unique_blocks, &blocks);
    HS_RETURN_IF_ERROR(builder.Add(t, std::move(blocks)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view TraceShapeName(TraceShape shape) {
  switch (shape) {
    case TraceShape::kAgentic:
      return "agentic";
    case TraceShape::kHotShift:
      return "hot-shift";
    case TraceShape::kOneShotFlood:
      return "one-shot-flood";
  }
  return "unknown";
}

std::optional<TraceShape> ParseTraceShape(absl::string_view word) {
  for (TraceShape shape : AllTraceShapes()) {
    if (TraceShapeName(shape) == word) return shape;
  }
  return std::nullopt;
}

std::vector<TraceShape> AllTraceShapes() {
  return {TraceShape::kAgentic, TraceShape::kHotShift, TraceShape::kOneShotFlood};
}

const std::vector<TraceGenParam>& TraceGenParams() {
  static const std::vector<TraceGenParam>* const params =
      new std::vector<TraceGenParam>(MakeParams());
  return *params;
}

const TraceGenParam* FindTraceGenParam(absl::string_view name) {
  for (const TraceGenParam& p : TraceGenParams()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string TraceGenParamValue(const TraceGenParam& param, const TraceGenSpec& spec) {
  if (param.integer != nullptr) return absl::StrCat(spec.*param.integer);
  return absl::StrCat(spec.*param.decimal);
}

absl::Status SetTraceGenParam(TraceGenSpec* spec, absl::string_view name, absl::string_view value) {
  const TraceGenParam* p = FindTraceGenParam(name);
  if (p == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, ": no such parameter"));
  }
  if (p->integer != nullptr) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(value, &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, ": expected an integer, got \"", value, "\""));
    }
    HS_RETURN_IF_ERROR(CheckRange(*p, static_cast<double>(v), absl::StrCat(v)));
    spec->*p->integer = v;
    return absl::OkStatus();
  }
  double v = 0;
  if (!absl::SimpleAtod(value, &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": expected a number, got \"", value, "\""));
  }
  HS_RETURN_IF_ERROR(CheckRange(*p, v, value));
  spec->*p->decimal = v;
  return absl::OkStatus();
}

absl::Status ValidateTraceGenSpec(const TraceGenSpec& spec) {
  for (const TraceGenParam& p : TraceGenParams()) HS_RETURN_IF_ERROR(CheckParam(p, spec));
  if (spec.burst_period_s > 0 && spec.burst_on_s > spec.burst_period_s) {
    return absl::InvalidArgumentError(absl::StrCat("--burst-on-s: must be <= --burst-period-s (",
                                                   spec.burst_period_s, "), got ",
                                                   spec.burst_on_s));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TraceRequest>> GenerateTrace(const TraceGenSpec& spec) {
  HS_RETURN_IF_ERROR(ValidateTraceGenSpec(spec));
  TraceBuilder builder(spec);
  switch (spec.shape) {
    case TraceShape::kAgentic:
      HS_RETURN_IF_ERROR(GenerateAgentic(spec, builder));
      break;
    case TraceShape::kHotShift:
      HS_RETURN_IF_ERROR(GenerateHotShift(spec, builder));
      break;
    case TraceShape::kOneShotFlood:
      HS_RETURN_IF_ERROR(GenerateOneShotFlood(spec, builder));
      break;
  }
  return std::move(builder).Finish();
}

TraceStats ComputeTraceStats(const std::vector<TraceRequest>& requests) {
  TraceStats stats;
  stats.requests = static_cast<int64_t>(requests.size());
  std::vector<int64_t> ids;
  for (const TraceRequest& r : requests)
    ids.insert(ids.end(), r.hash_ids.begin(), r.hash_ids.end());
  stats.hash_ids = static_cast<int64_t>(ids.size());
  std::sort(ids.begin(), ids.end());
  stats.distinct_blocks = std::unique(ids.begin(), ids.end()) - ids.begin();
  if (!requests.empty()) {
    stats.first_ms = requests.front().timestamp_ms;
    stats.last_ms = requests.back().timestamp_ms;
  }
  return stats;
}

}  // namespace heatsink::sim
