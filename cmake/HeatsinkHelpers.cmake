include(GoogleTest)

# Test directories whose label does not match this regular expression are not
# built (the tsan preset builds only the concurrency tests). Empty: all.
set(HEATSINK_TEST_LABELS "" CACHE STRING "Regex of test labels to build (empty: all)")

# heatsink_add_test_dir(NAME DIR LABEL LIBS...)
# Builds every *_test.cc directly inside DIR into one GoogleTest executable NAME,
# linked against LIBS, and registers each test case with ctest under LABEL.
# New test files are picked up by re-running cmake (CONFIGURE_DEPENDS).
function(heatsink_add_test_dir name dir label)
  if(HEATSINK_TEST_LABELS AND NOT label MATCHES "^(${HEATSINK_TEST_LABELS})$")
    return()
  endif()
  file(GLOB srcs CONFIGURE_DEPENDS "${dir}/*_test.cc")
  if(NOT srcs)
    # A registration that builds nothing would pass silently forever.
    message(FATAL_ERROR "heatsink_add_test_dir(${name}): no *_test.cc in ${dir}")
  endif()
  add_executable(${name} ${srcs})
  target_link_libraries(${name} PRIVATE ${ARGN} GTest::gtest GTest::gmock GTest::gtest_main)
  gtest_discover_tests(${name}
    DISCOVERY_MODE PRE_TEST
    PROPERTIES LABELS "${label}"
    DISCOVERY_TIMEOUT 60)
endfunction()

# heatsink_add_bench(NAME SOURCE LIBS...)
function(heatsink_add_bench name src)
  add_executable(${name} ${src})
  target_link_libraries(${name} PRIVATE ${ARGN} benchmark::benchmark)
endfunction()
