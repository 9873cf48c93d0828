# Compiler flags for HEATSINK_BUILD_FUZZERS (the `asan` preset; included from the root
# CMakeLists.txt before any target, so core/ and sim/ are instrumented too).
#
# Every object gets libFuzzer's coverage instrumentation (fuzzer-no-link) plus
# AddressSanitizer and UndefinedBehaviorSanitizer; a sanitizer report aborts,
# which libFuzzer records as a crash. Only the fuzz targets link libFuzzer
# itself (heatsink_add_fuzzer in fuzz/CMakeLists.txt).
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR
    "HEATSINK_BUILD_FUZZERS needs clang (libFuzzer); got ${CMAKE_CXX_COMPILER_ID}. "
    "Use the `asan` preset or -DCMAKE_CXX_COMPILER=clang++.")
endif()
set(HEATSINK_FUZZ_SANITIZERS "address,undefined")
add_compile_options(
  -fsanitize=fuzzer-no-link,${HEATSINK_FUZZ_SANITIZERS}
  -fno-sanitize-recover=all
  -fno-omit-frame-pointer)
add_link_options(-fsanitize=${HEATSINK_FUZZ_SANITIZERS})
