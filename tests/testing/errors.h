// The message of the feedline::Error a call throws, for tests that check
// what an error says.
#ifndef FEEDLINE_TESTS_TESTING_ERRORS_H_
#define FEEDLINE_TESTS_TESTING_ERRORS_H_

#include <functional>
#include <string>

#include "feedline/error.h"

namespace feedline::test {

// What f throws as feedline::Error, or "(no error)".
inline std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace feedline::test

#endif  // FEEDLINE_TESTS_TESTING_ERRORS_H_
