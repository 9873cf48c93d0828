# cmake -P script behind the golden decision-log tests (tests/golden/CMakeLists.txt).
#   -DSIM=heatsink-sim binary  -DSCENARIO=scenario.json  -DGOLDEN=golden .decisions.jsonl
#   -DOUT=scratch directory     [-DSETS=name=value;...]   [-DEXPECT_DIFF=ON]
# Runs the scenario with its own seed, then `heatsink-sim diff GOLDEN actual`.
# Without EXPECT_DIFF the test passes only when the logs are equal (diff exit 0);
# with it, only when they differ (exit 1) and the diff names a change.
# The scenario's own checks (its "checks" list) are judged too: a failed check
# (run exit code 1) fails the test, except with EXPECT_DIFF, where the knob
# change is expected to break them. A run that could not complete (exit 2)
# always fails the test.
foreach(var SIM SCENARIO GOLDEN OUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_golden.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT EXISTS "${GOLDEN}")
  message(FATAL_ERROR "no golden decision log ${GOLDEN}; create it with "
                      "tools/update-goldens.sh ${SCENARIO} (see docs/regression.md)")
endif()

set(set_args "")
foreach(s IN LISTS SETS)
  list(APPEND set_args --set "${s}")
endforeach()

file(REMOVE_RECURSE "${OUT}")
execute_process(
  COMMAND "${SIM}" run "${SCENARIO}" --out "${OUT}" ${set_args}
  RESULT_VARIABLE run_rc
  OUTPUT_VARIABLE run_out
  ERROR_VARIABLE run_err)
if(NOT run_rc EQUAL 0 AND NOT run_rc EQUAL 1)
  message(FATAL_ERROR "heatsink-sim run ${SCENARIO} failed (exit ${run_rc}):\n${run_out}\n${run_err}")
endif()
if(run_rc EQUAL 1 AND NOT EXPECT_DIFF)
  string(REGEX MATCHALL "check [^\n]*FAILED" failed_checks "${run_out}")
  string(REPLACE ";" "\n" failed_checks "${failed_checks}")
  message(FATAL_ERROR "a check of ${SCENARIO} failed:\n${failed_checks}\n\n${run_out}")
endif()
if(NOT EXISTS "${OUT}/decisions.jsonl")
  message(FATAL_ERROR "heatsink-sim run ${SCENARIO} wrote no ${OUT}/decisions.jsonl")
endif()

execute_process(
  COMMAND "${SIM}" diff "${GOLDEN}" "${OUT}/decisions.jsonl"
  RESULT_VARIABLE diff_rc
  OUTPUT_VARIABLE diff_out
  ERROR_VARIABLE diff_err)

if(EXPECT_DIFF)
  if(NOT diff_rc EQUAL 1)
    message(FATAL_ERROR "expected the decision logs to differ with ${SETS} "
                        "(diff exit ${diff_rc}):\n${diff_out}${diff_err}")
  endif()
  if(NOT diff_out MATCHES "decision logs differ")
    message(FATAL_ERROR "diff exit 1 without a difference report:\n${diff_out}")
  endif()
  message(NOTICE "the changed knob shows up in the diff, as expected:\n${diff_out}")
  return()
endif()

if(diff_rc EQUAL 0)
  message(STATUS "${diff_out}")
  return()
endif()
if(diff_rc EQUAL 1)
  # NOTICE prints the diff as it is (FATAL_ERROR would rewrap it).
  message(NOTICE "admission decisions of ${SCENARIO} differ from ${GOLDEN}:\n${diff_out}")
  message(FATAL_ERROR "decision log differs from the golden. If the change is intended, "
                      "regenerate it with tools/update-goldens.sh ${SCENARIO} and review "
                      "the diff (docs/regression.md).")
endif()
message(FATAL_ERROR "heatsink-sim diff failed (exit ${diff_rc}):\n${diff_out}${diff_err}")
