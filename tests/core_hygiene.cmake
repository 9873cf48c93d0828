# Fails when a file under ROOT includes a header or names an API that reads a
# real clock, sleeps, starts a thread, does I/O or draws nondeterministic
# randomness. Run by ctest; a fixture with a violation proves it can fail.
if(NOT DEFINED ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<dir> -P core_hygiene.cmake")
endif()
file(GLOB_RECURSE files "${ROOT}/*.h" "${ROOT}/*.cc")
set(patterns
  "#include[ \t]*<(thread|random|chrono|fstream|iostream|cstdio|stdio\\.h|unistd\\.h|filesystem|future|condition_variable|grpc|hwloc|numa|numaif\\.h|ucp/|infiniband/)"
  "std::chrono::system_clock" "std::chrono::steady_clock" "std::chrono::high_resolution_clock"
  "steady_clock" "system_clock" "std::thread" "std::jthread" "absl::Now\\(" "absl::SleepFor"
  "std::random_device" "std::this_thread" "absl::BitGen" "_distribution<" "fopen\\(" "std::cout" "std::cerr")
set(found "")
foreach(f ${files})
  file(STRINGS "${f}" lines)
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n}+1")
    # Comments may name forbidden APIs (to explain why they are not used).
    string(REGEX REPLACE "//.*$" "" code "${line}")
    foreach(p ${patterns})
      if(code MATCHES "${p}")
        string(APPEND found "${f}:${n}: forbidden in core/: ${line}\n")
      endif()
    endforeach()
  endforeach()
endforeach()
if(found)
  message(FATAL_ERROR "core hygiene violations:\n${found}")
endif()
message(STATUS "core hygiene: ${ROOT} clean")
