// The `heatsink-sim gen-trace` subcommand (tools/sim_gen_trace_command.h).
#include "tools/sim_gen_trace_command.h"

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/base/status_macros.h"
#include "sim/report_format.h"
#include "sim/trace_gen.h"

namespace {

constexpr int kGenTraceExitOk = 0;
constexpr int kGenTraceExitError = 2;

// The help group of a parameter: the shapes that read it.
std::string GenTraceGroup(const heatsink::sim::TraceGenParam& param) {
  if (param.common()) return "Parameters of every shape";
  std::vector<std::string> shapes;
  for (heatsink::sim::TraceShape shape : heatsink::sim::AllTraceShapes()) {
    if (param.BelongsTo(shape)) shapes.emplace_back(heatsink::sim::TraceShapeName(shape));
  }
  return absl::StrCat("Parameters of ", absl::StrJoin(shapes, " and "));
}

void AddGenTraceOptions(CLI::App* cmd, GenTraceArgs* args) {
  cmd->add_option("--shape", args->shape, "agentic, hot-shift or one-shot-flood (required)")
      ->required();
  cmd->add_option("--seed", args->seed,
                  "Seed of every draw (0 to 2^64-1); the same seed gives the same bytes")
      ->type_name("UINT")
      ->capture_default_str();
  cmd->add_option("--out", args->out, "Output file, or - for standard output")
      ->capture_default_str();
  const heatsink::sim::TraceGenSpec defaults;
  const std::vector<heatsink::sim::TraceGenParam>& params = heatsink::sim::TraceGenParams();
  args->values.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const heatsink::sim::TraceGenParam& p = params[i];
    args->options.push_back(
        cmd->add_option(absl::StrCat("--", p.name), args->values[i],
                        absl::StrCat(p.help, " [default: ",
                                     heatsink::sim::TraceGenParamValue(p, defaults), "]"))
            ->type_name(p.integer != nullptr ? "INT" : "NUM")
            ->group(GenTraceGroup(p)));
  }
}

// The spec the flags describe; INVALID_ARGUMENT naming the flag for an
// unknown shape, a bad value or a parameter the shape does not read.
absl::StatusOr<heatsink::sim::TraceGenSpec> GenTraceSpec(const GenTraceArgs& args) {
  heatsink::sim::TraceGenSpec spec;
  const std::optional<heatsink::sim::TraceShape> shape = heatsink::sim::ParseTraceShape(args.shape);
  if (!shape.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--shape: unknown shape \"", args.shape,
                     "\" (expected agentic, hot-shift or one-shot-flood)"));
  }
  spec.shape = *shape;
  if (!absl::SimpleAtoi(args.seed, &spec.seed)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--seed: expected an integer in [0, 2^64-1], got \"", args.seed, "\""));
  }
  const std::vector<heatsink::sim::TraceGenParam>& params = heatsink::sim::TraceGenParams();
  for (size_t i = 0; i < params.size(); ++i) {
    if (args.options[i]->count() == 0) continue;
    if (!params[i].BelongsTo(*shape)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", params[i].name, ": not a parameter of shape ", args.shape, " (",
                       absl::AsciiStrToLower(GenTraceGroup(params[i])), ")"));
    }
    HS_RETURN_IF_ERROR(heatsink::sim::SetTraceGenParam(&spec, params[i].name, args.values[i]));
  }
  HS_RETURN_IF_ERROR(heatsink::sim::ValidateTraceGenSpec(spec));
  return spec;
}

// Milliseconds as seconds with three decimals, in integers.
std::string Seconds(int64_t ms) { return absl::StrFormat("%d.%03d", ms / 1000, ms % 1000); }

}  // namespace

int RunGenTrace(const GenTraceArgs& args) {
  absl::StatusOr<heatsink::sim::TraceGenSpec> spec = GenTraceSpec(args);
  if (!spec.ok()) {
    std::cerr << "heatsink-sim gen-trace: " << spec.status().message() << "\n";
    return kGenTraceExitError;
  }
  absl::StatusOr<std::vector<heatsink::sim::TraceRequest>> trace =
      heatsink::sim::GenerateTrace(*spec);
  if (!trace.ok()) {
    std::cerr << "heatsink-sim gen-trace: " << trace.status().message() << "\n";
    return kGenTraceExitError;
  }
  std::string text;
  heatsink::sim::AppendTraceJsonl(*trace, &text);
  if (args.out == "-") {
    std::cout << text;
    std::cout.flush();
  } else if (absl::Status st = heatsink::sim::WriteTextFile(args.out, text); !st.ok()) {
    std::cerr << "heatsink-sim gen-trace: " << st.message() << "\n";
    return kGenTraceExitError;
  }
  const heatsink::sim::TraceStats stats = heatsink::sim::ComputeTraceStats(*trace);
  std::cerr << "gen-trace " << args.shape << " seed " << spec->seed << ": " << stats.requests
            << " requests, " << stats.distinct_blocks << " distinct blocks, " << stats.hash_ids
            << " hash ids, span " << Seconds(stats.first_ms) << "-" << Seconds(stats.last_ms)
            << " s, " << text.size() << " bytes -> " << (args.out == "-" ? "stdout" : args.out)
            << "\n";
  return kGenTraceExitOk;
}


CLI::App* AddGenTraceCommand(CLI::App* app, GenTraceArgs* args) {
  CLI::App* cmd = app->add_subcommand(
      "gen-trace",
      "Write a seeded synthetic request trace in the Mooncake JSONL format (docs/gen-trace.md); "
      "the same flags give the same bytes on every machine. Shapes: agentic = multi-turn agent "
      "sessions, each turn a shared tool prompt + the session's whole history + fresh blocks, "
      "turns minutes apart; hot-shift = requests on a zipf-popular hot set of prefixes that is "
      "replaced by fresh prefixes every --shift-period-s; one-shot-flood = one-shot prompts, each "
      "a hot shared system prompt + blocks never used again, steady or in bursts. Prints a "
      "one-line summary on stderr. Exit 0 on success, 2 on a bad flag (named) or a trace past a "
      "*-max limit.");
  AddGenTraceOptions(cmd, args);
  return cmd;
}
