// DoubleText: a double as a sampler's error message shows it (what
// `std::ostream << value` writes: 6 significant digits, "inf", "nan").
#ifndef FEEDLINE_SRC_DATA_DOUBLE_TEXT_H_
#define FEEDLINE_SRC_DATA_DOUBLE_TEXT_H_

#include <sstream>
#include <string>

namespace feedline::internal {

inline std::string DoubleText(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_DATA_DOUBLE_TEXT_H_
