// Covers the heatsink-sim command line (tools/heatsink_sim_main.cc) by
// running the binary: the determinism contract across two separate processes
// (every output file byte-identical except timing.json, for `run` and for
// `compare`), the seed and replay command printed first, exit codes (0 ok,
// 1 failed check, 2 error), and clear errors naming the file, JSON position,
// knob or flag at fault; gen-trace's output, summary, help and flag errors,
// and the committed generated traces against their documented commands.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/malloc_tuning.h"
#include "sim/trace.h"
#include "sim/trace_gen.h"
#include "tests/sim/repo_root.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

namespace fs = std::filesystem;

using heatsink::sim::testing_paths::RepoRoot;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs heatsink-sim with `args` (already shell-quoted where needed) from the
// repository root.
// `env` (arguments of env(1), e.g. "-u GLIBC_TUNABLES X=1") changes the
// binary's environment.
Outcome Sim(const std::string& args, const std::string& env = "") {
  static int counter = 0;
  const fs::path dir = fs::path(::testing::TempDir()) / "heatsink_cli";
  fs::create_directories(dir);
  // ctest runs each test in its own process, several at once: the pid keeps
  // their capture files apart.
  const fs::path out = dir / absl::StrCat("stdout-", getpid(), "-", ++counter);
  const fs::path err = dir / absl::StrCat("stderr-", getpid(), "-", counter);
  const std::string command = absl::StrCat(
      "cd '", RepoRoot().string(), "' && ", env.empty() ? "" : "env " + env + " ", "'",
      HEATSINK_SIM_BINARY, "' ", args, " >'", out.string(), "' 2>'", err.string(), "'");
  const int status = std::system(command.c_str());
  Outcome o;
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.out = ReadFile(out);
  o.err = ReadFile(err);
  return o;
}

fs::path FreshDir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / "heatsink_cli" / name;
  fs::remove_all(dir);
  return dir;
}

// Every regular file under `dir` (relative path -> contents) except timing.json.
std::map<std::string, std::string> DeterministicFiles(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file() || e.path().filename() == "timing.json") continue;
    files[fs::relative(e.path(), dir).string()] = ReadFile(e.path());
  }
  return files;
}

fs::path WriteScenario(const std::string& name, const std::string& text) {
  const fs::path path = fs::path(::testing::TempDir()) / "heatsink_cli" / (name + ".json");
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
  return path;
}

TEST(Cli, RunIsByteIdenticalInTwoProcesses) {
  const fs::path a = FreshDir("det-a");
  const fs::path b = FreshDir("det-b");
  const Outcome ra = Sim(
      absl::StrCat("run scenarios/cross-domain-reuse.json --log-reads --out '", a.string(), "'"));
  const Outcome rb = Sim(
      absl::StrCat("run scenarios/cross-domain-reuse.json --log-reads --out '", b.string(), "'"));
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  const auto files_a = DeterministicFiles(a);
  const auto files_b = DeterministicFiles(b);
  for (const char* name : {"decisions.jsonl", "reads.jsonl", "summary.json", "timeseries.csv",
                           "host_load.csv", "requests.csv", "report.html"}) {
    ASSERT_EQ(files_a.count(name), 1u) << name;
    EXPECT_FALSE(files_a.at(name).empty()) << name;
  }
  ASSERT_EQ(files_a.size(), files_b.size());
  for (const auto& [name, contents] : files_a) {
    ASSERT_EQ(files_b.count(name), 1u) << name;
    EXPECT_TRUE(contents == files_b.at(name)) << name << " differs between the two processes";
  }
  EXPECT_TRUE(fs::exists(a / "timing.json"));
  // The seed and the replay command come first.
  EXPECT_THAT(ra.out, StartsWith("seed: 1\nreplay: heatsink-sim run "
                                 "scenarios/cross-domain-reuse.json --seed 1\n"));
}

// heatsink-sim starts itself again with its allocator settings
// (sim/malloc_tuning.h) unless GLIBC_TUNABLES is set or the user turns it
// off; timing.json says which.
TEST(Cli, RunsWithItsMallocTunablesUnlessToldOtherwise) {
  const fs::path tuned = FreshDir("malloc-tuned");
  const fs::path plain = FreshDir("malloc-plain");
  const fs::path own = FreshDir("malloc-own");
  const std::string run = "run scenarios/admission/threshold-get.json --out '";
  const Outcome a = Sim(absl::StrCat(run, tuned.string(), "'"), "-u GLIBC_TUNABLES");
  const Outcome b =
      Sim(absl::StrCat(run, plain.string(), "'"), "-u GLIBC_TUNABLES HEATSINK_SIM_MALLOC_TUNING=0");
  const Outcome c =
      Sim(absl::StrCat(run, own.string(), "'"), "GLIBC_TUNABLES=glibc.malloc.arena_max=1");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_THAT(
      ReadFile(tuned / "timing.json"),
      HasSubstr(absl::StrCat("\"malloc_tunables\": \"", heatsink::sim::kSimMallocTunables, "\"")));
  EXPECT_THAT(ReadFile(plain / "timing.json"), HasSubstr("\"malloc_tunables\": null"));
  EXPECT_THAT(ReadFile(own / "timing.json"),
              HasSubstr("\"malloc_tunables\": \"glibc.malloc.arena_max=1\""));
  EXPECT_EQ(DeterministicFiles(tuned), DeterministicFiles(plain));
}

TEST(Cli, CompareIsByteIdenticalInTwoProcessesAndPrintsOneTable) {
  // One process runs the modes one after another, the other all at once on
  // threads: the same files.
  const fs::path a = FreshDir("cmp-a");
  const fs::path b = FreshDir("cmp-b");
  const std::string args =
      "compare scenarios/admission/threshold-get.json --modes off,observe,enforce";
  const Outcome ra = Sim(absl::StrCat(args, " --jobs 1 --out '", a.string(), "'"));
  const Outcome rb = Sim(absl::StrCat(args, " --jobs 3 --out '", b.string(), "'"));
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  EXPECT_EQ(DeterministicFiles(a), DeterministicFiles(b));
  EXPECT_THAT(ra.out, Not(HasSubstr("runs at once")));
  EXPECT_THAT(rb.out, HasSubstr("3 runs at once"));
  EXPECT_THAT(rb.out, HasSubstr("3 at once)"));
  for (const char* f : {"compare.txt", "compare.json", "compare.html", "off/decisions.jsonl",
                        "observe/decisions.jsonl", "enforce/report.html"}) {
    EXPECT_TRUE(fs::exists(a / f)) << f;
  }
  EXPECT_THAT(ra.out, HasSubstr("off"));
  EXPECT_THAT(ra.out, HasSubstr("enforce"));
  EXPECT_THAT(ra.out, HasSubstr("bytes cross-domain"));
  EXPECT_THAT(ra.out, HasSubstr("report: "));
  // The observe run logged the decision enforce acted on.
  EXPECT_THAT(ReadFile(a / "observe/decisions.jsonl"), HasSubstr("\"would_propose\""));
  EXPECT_THAT(ReadFile(a / "enforce/decisions.jsonl"), HasSubstr("\"accepted\""));
  EXPECT_EQ(ReadFile(a / "off/decisions.jsonl"), "");
}

TEST(Cli, SeedFlagChangesTheRun) {
  const fs::path a = FreshDir("seed-a");
  const Outcome r =
      Sim(absl::StrCat("run scenarios/cross-domain-reuse.json --seed 5 --out '", a.string(), "'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("seed: 5\n"));
  EXPECT_THAT(ReadFile(a / "summary.json"), HasSubstr("\"seed\": 5"));
}

TEST(Cli, HelpExplainsCommandsAndExitCodes) {
  const Outcome top = Sim("--help");
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_THAT(top.out, HasSubstr("run"));
  EXPECT_THAT(top.out, HasSubstr("compare"));
  EXPECT_THAT(top.out, HasSubstr("Exit codes"));
  const Outcome compare = Sim("compare --help");
  EXPECT_EQ(compare.exit_code, 0);
  EXPECT_THAT(compare.out, HasSubstr("--modes"));
  EXPECT_THAT(compare.out, HasSubstr("--set"));
  EXPECT_THAT(compare.out, HasSubstr("--seed"));
}

TEST(Cli, MissingScenarioFileIsAnError) {
  const Outcome r = Sim("run scenarios/no-such-file.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("scenarios/no-such-file.json"));
}

TEST(Cli, MalformedScenarioNamesLineColumnAndPath) {
  const fs::path path = WriteScenario("bad-type", R"({
  "name": "bad-type",
  "topology": {"domains": [{"name": "a", "hosts": [
    {"name": "h", "nic_send_gbps": "fast"}]}]}
})");
  const Outcome r = Sim(absl::StrCat("run '", path.string(), "'"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("bad-type.json:4:"));
  EXPECT_THAT(r.err, HasSubstr("$.topology.domains[0].hosts[0].nic_send_gbps"));
  EXPECT_THAT(r.err, HasSubstr("expected a number"));
}

TEST(Cli, UnknownKnobInSetIsNamed) {
  const Outcome r =
      Sim("run scenarios/admission/threshold-get.json --set dynamic_replication_mod=enforce");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("dynamic_replication_mod"));
  EXPECT_THAT(r.err, HasSubstr("unknown knob"));
  const Outcome no_equals = Sim("run scenarios/admission/threshold-get.json --set eviction_ratio");
  EXPECT_EQ(no_equals.exit_code, 2);
  EXPECT_THAT(no_equals.err, HasSubstr("name=value"));
  const Outcome bad_value =
      Sim("run scenarios/admission/threshold-get.json --set dynamic_replication_mode=sometimes");
  EXPECT_EQ(bad_value.exit_code, 2);
  EXPECT_THAT(bad_value.err, HasSubstr("dynamic_replication_mode"));
}

TEST(Cli, UnknownModeIsAnError) {
  const Outcome r = Sim("compare scenarios/admission/threshold-get.json --modes off,sometimes");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown mode \"sometimes\""));
}

TEST(Cli, FailedCheckExitsOne) {
  // threshold-get with its own checks replaced by one that holds and one
  // that cannot.
  std::string text = ReadFile(RepoRoot() / "scenarios/admission/threshold-get.json");
  const size_t begin = text.find("\"checks\": [");
  ASSERT_NE(begin, std::string::npos);
  const size_t end = text.find(']', begin);
  ASSERT_NE(end, std::string::npos);
  text.replace(begin, end + 1 - begin, R"("checks": [
    {"name": "admits", "metric": "admissions.accepted", "op": "==", "value": 1},
    {"name": "impossible", "metric": "reads.count", "op": ">", "value": 1000000}])");
  const fs::path path = WriteScenario("checks", text);
  const Outcome r =
      Sim(absl::StrCat("run '", path.string(), "' --out '", FreshDir("checks").string(), "'"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.out, HasSubstr("check admits: admissions.accepted = 1 == 1: ok"));
  EXPECT_THAT(r.out, HasSubstr("check impossible: reads.count = 3 > 1e+06: FAILED"));
}

// ---- gen-trace ----------------------------------------------------------

TEST(Cli, GenTraceBadFlagsExitTwoNamingTheFlag) {
  const struct {
    const char* args;
    const char* message;
  } cases[] = {
      {"--shape agentic --session-rate-per-s -1", "--session-rate-per-s: must be > 0, got -1"},
      {"--shape agentic --session-rate-per-s=-1", "--session-rate-per-s: must be > 0, got -1"},
      {"--shape agentic --turns-mean 0", "--turns-mean: must be >= 1, got 0"},
      {"--shape agentic --tool-prompt-blocks 0", "--tool-prompt-blocks: must be >= 1, got 0"},
      {"--shape hot-shift --hot-prefixes 0", "--hot-prefixes: must be >= 1, got 0"},
      {"--shape hot-shift --zipf-s -1", "--zipf-s: must be >= 0, got -1"},
      {"--shape hot-shift --rate-per-s -2", "--rate-per-s: must be > 0, got -2"},
      {"--shape one-shot-flood --unique-blocks 0", "--unique-blocks: must be >= 1, got 0"},
      {"--shape one-shot-flood --burst-period-s 5",
       "--burst-on-s: must be <= --burst-period-s (5), got 10"},
      {"--shape hot-shift --turns-mean 3", "--turns-mean: not a parameter of shape hot-shift"},
      {"--shape agentic --shift-period-s 60", "--shift-period-s: not a parameter of shape agentic"},
      {"--shape agentic --rate-per-s 5", "--rate-per-s: not a parameter of shape agentic"},
      {"--shape flood", "--shape: unknown shape \"flood\""},
      {"--shape agentic --seed -1", "--seed: expected an integer"},
      {"--shape agentic --duration-s abc", "--duration-s: expected an integer, got \"abc\""},
      {"--shape agentic --duration-s 0", "--duration-s: must be >= 1, got 0"},
      {"--shape agentic --requests-max 10", "--requests-max: the trace would hold more than 10"},
      {"--duration-s 10", "--shape"},
  };
  const fs::path dir = FreshDir("gen-trace-bad");
  fs::create_directories(dir);
  const fs::path out = dir / "trace.jsonl";
  for (const auto& c : cases) {
    const Outcome r = Sim(absl::StrCat("gen-trace ", c.args, " --out '", out.string(), "'"));
    EXPECT_EQ(r.exit_code, 2) << c.args;
    EXPECT_THAT(r.err, HasSubstr(c.message)) << c.args;
    EXPECT_FALSE(fs::exists(out)) << c.args << ": wrote a trace";
  }
}

TEST(Cli, GenTraceWritesTheTraceAndASummary) {
  const Outcome to_stdout = Sim("gen-trace --shape hot-shift --duration-s 60 --seed 3");
  ASSERT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
  absl::StatusOr<std::vector<heatsink::sim::TraceRequest>> trace =
      heatsink::sim::ParseTrace(to_stdout.out, "stdout");
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_GT(trace->size(), 300u);
  EXPECT_THAT(to_stdout.err, StartsWith(absl::StrCat("gen-trace hot-shift seed 3: ", trace->size(),
                                                     " requests, ")));
  EXPECT_THAT(to_stdout.err, HasSubstr(" distinct blocks, "));
  EXPECT_THAT(to_stdout.err, HasSubstr(absl::StrCat(to_stdout.out.size(), " bytes -> stdout\n")));

  const fs::path dir = FreshDir("gen-trace-file");
  fs::create_directories(dir);
  const Outcome to_file =
      Sim(absl::StrCat("gen-trace --shape hot-shift --duration-s 60 --seed 3 --out '",
                       (dir / "t.jsonl").string(), "'"));
  ASSERT_EQ(to_file.exit_code, 0) << to_file.err;
  EXPECT_EQ(to_file.out, "");
  EXPECT_TRUE(ReadFile(dir / "t.jsonl") == to_stdout.out) << "file and stdout differ";
}

TEST(Cli, GenTraceHelpNamesEveryFlagWithItsDefault) {
  const Outcome r = Sim("gen-trace --help");
  ASSERT_EQ(r.exit_code, 0);
  const heatsink::sim::TraceGenSpec defaults;
  for (const heatsink::sim::TraceGenParam& p : heatsink::sim::TraceGenParams()) {
    EXPECT_THAT(r.out, HasSubstr(absl::StrCat("--", p.name))) << p.name;
    EXPECT_THAT(r.out, HasSubstr(absl::StrCat(
                           "[default: ", heatsink::sim::TraceGenParamValue(p, defaults), "]")))
        << p.name;
  }
  for (const char* word :
       {"agentic =", "hot-shift =", "one-shot-flood =", "--shape", "--seed", "--out"}) {
    EXPECT_THAT(r.out, HasSubstr(word));
  }
}

// Each committed gen-*.jsonl is what its command in scenarios/traces/README.md
// writes now: the test runs every documented command (with --out pointed at a
// scratch file) and compares the bytes, so neither the files nor the README
// can drift from the generator.
TEST(Cli, CommittedGeneratedTracesMatchTheirDocumentedCommands) {
  const std::string readme = ReadFile(RepoRoot() / "scenarios/traces/README.md");
  const fs::path dir = FreshDir("gen-trace-committed");
  fs::create_directories(dir);
  std::vector<std::string> checked;
  for (absl::string_view line : absl::StrSplit(readme, '\n')) {
    if (!absl::ConsumePrefix(&line, "heatsink-sim gen-trace ")) continue;
    const size_t out_flag = line.find("--out ");
    ASSERT_NE(out_flag, absl::string_view::npos) << line;
    const std::string committed(line.substr(out_flag + 6));
    ASSERT_EQ(committed.find(' '), std::string::npos) << "--out must come last: " << line;
    const fs::path scratch = dir / fs::path(committed).filename();
    const Outcome r =
        Sim(absl::StrCat("gen-trace ", line.substr(0, out_flag), "--out '", scratch.string(), "'"));
    ASSERT_EQ(r.exit_code, 0) << line << "\n" << r.err;
    EXPECT_TRUE(ReadFile(scratch) == ReadFile(RepoRoot() / committed))
        << committed << " differs from what `heatsink-sim gen-trace " << line
        << "` writes now; regenerate it with that command (scenarios/traces/README.md)";
    checked.push_back(fs::path(committed).filename().string());
  }
  EXPECT_THAT(checked, ::testing::UnorderedElementsAre("gen-agentic.jsonl", "gen-hot-shift.jsonl",
                                                       "gen-one-shot-flood.jsonl"));
}

}  // namespace
