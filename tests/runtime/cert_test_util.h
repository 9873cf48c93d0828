// Helpers of the tests that make certificates at test time with
// tools/make-certs.sh (the TLS data path and the gRPC identity tests).
// REQUIRES: the test target defines HEATSINK_SOURCE_DIR.
#ifndef HEATSINK_TESTS_RUNTIME_CERT_TEST_UTIL_H_
#define HEATSINK_TESTS_RUNTIME_CERT_TEST_UTIL_H_

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"

namespace heatsink::runtime::test {

// True when the openssl command-line tool runs (tools/make-certs.sh needs it).
inline bool HaveOpenssl() { return std::system("openssl version > /dev/null 2>&1") == 0; }

// Why a test that needs certificates is skipped without openssl.
inline constexpr char kNoOpensslSkip[] =
    "the openssl command-line tool is not on PATH; it generates the test certificates (install "
    "Debian's `openssl` package to run this test)";

// Runs tools/make-certs.sh with `args`; true on success.
inline bool MakeCerts(const std::string& args) {
  const std::string line =
      absl::StrCat(HEATSINK_SOURCE_DIR, "/tools/make-certs.sh ", args, " > /dev/null 2>&1");
  return std::system(line.c_str()) == 0;
}

}  // namespace heatsink::runtime::test

#endif  // HEATSINK_TESTS_RUNTIME_CERT_TEST_UTIL_H_
