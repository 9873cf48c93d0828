#include "tools/sim_validate_command.h"

#include <iostream>
#include <optional>
#include <utility>

#include "sim/report_format.h"
#include "sim/runner.h"
#include "sim/validate.h"

namespace {
constexpr int kExitOk = 0;
constexpr int kExitError = 2;
}  // namespace

CLI::App* AddValidateCommand(CLI::App* app, ValidateArgs* args) {
  CLI::App* validate = app->add_subcommand(
      "validate",
      "Compare the simulation of SCENARIO with a heatsink-replay run of it (--runtime DIR, same "
      "seed): Jaccard of accepted admissions, admission time lag, relative errors of bytes by "
      "distance, host-load shares, copies, extra memory; read latency side by side, with the "
      "scenario's network set to this machine's loopback costs when --calibration names a file "
      "from `heatsink-replay calibrate`. Prints a table; --out writes JSON, --html a page with "
      "side-by-side charts.");
  validate->add_option("scenario", args->scenario, "Scenario JSON file the replay ran")
      ->required();
  validate->add_option("--runtime", args->runtime_dir,
                       "Output directory of heatsink-replay (summary.json, decisions.jsonl)")
      ->required();
  validate->add_option("--out", args->out, "Also write the comparison as JSON to this file");
  validate->add_option("--html", args->html,
                       "Also write the comparison as a self-contained HTML page to this file: "
                       "the table and four side-by-side charts (admissions over time, bytes by "
                       "distance, host shares, read latency)");
  validate->add_option("--calibration", args->calibration,
                       "Calibration JSON (heatsink-replay calibrate): simulate with this machine's "
                       "loopback control latency, transfer overhead and bandwidth");
  return validate;
}

int RunValidate(const ValidateArgs& args) {
  absl::StatusOr<heatsink::sim::Scenario> scenario =
      heatsink::sim::LoadScenarioForRun(args.scenario);
  if (!scenario.ok()) {
    std::cerr << "heatsink-sim validate: " << scenario.status().message() << "\n";
    return kExitError;
  }
  std::optional<heatsink::sim::Calibration> calibration;
  if (!args.calibration.empty()) {
    absl::StatusOr<heatsink::sim::Calibration> c =
        heatsink::sim::ReadCalibrationFile(args.calibration);
    if (!c.ok()) {
      std::cerr << "heatsink-sim validate: --calibration: " << c.status().message() << "\n";
      return kExitError;
    }
    calibration = *c;
  }
  absl::StatusOr<heatsink::sim::ValidationReport> report = heatsink::sim::ValidateAgainstRuntime(
      *scenario, args.runtime_dir, calibration.has_value() ? &*calibration : nullptr);
  if (!report.ok()) {
    std::cerr << "heatsink-sim validate: " << report.status().message() << "\n";
    return kExitError;
  }
  std::cout << heatsink::sim::FormatValidationTable(*report);
  // (path, contents) for each file asked for.
  const std::pair<const std::string*, std::string (*)(const heatsink::sim::ValidationReport&)>
      files[] = {{&args.out, &heatsink::sim::ValidationJson},
                 {&args.html, &heatsink::sim::ValidationHtml}};
  for (const auto& [path, render] : files) {
    if (path->empty()) continue;
    const absl::Status written = heatsink::sim::WriteTextFile(*path, render(*report));
    if (!written.ok()) {
      std::cerr << "heatsink-sim validate: " << written.message() << "\n";
      return kExitError;
    }
    std::cout << "written: " << *path << "\n";
  }
  return kExitOk;
}
