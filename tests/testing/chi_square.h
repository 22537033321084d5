// Pearson's chi-square goodness-of-fit, for tests of random samplers and
// generators. Tests draw from fixed seeds, so each check is deterministic;
// the bound only decides whether that fixed sample looks fair.
#ifndef FEEDLINE_TESTS_TESTING_CHI_SQUARE_H_
#define FEEDLINE_TESTS_TESTING_CHI_SQUARE_H_

#include <cmath>
#include <cstdint>
#include <vector>

namespace feedline::test {

// The statistic of `counts` against expected counts proportional to `weights`
// (equal when `weights` is empty).
inline double ChiSquare(const std::vector<int64_t>& counts,
                        const std::vector<double>& weights = {}) {
  double total = 0.0;
  for (int64_t c : counts) total += static_cast<double>(c);
  double weight_sum = 0.0;
  for (double w : weights) weight_sum += w;
  double chi2 = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double p =
        weights.empty() ? 1.0 / static_cast<double>(counts.size()) : weights[i] / weight_sum;
    const double expected = total * p;
    const double diff = static_cast<double>(counts[i]) - expected;
    chi2 += diff * diff / expected;
  }
  return chi2;
}

// A value that chi-square with `df` degrees of freedom exceeds with
// probability about 1e-4 (Wilson-Hilferty approximation, z = 3.719).
inline double ChiSquareBound(int df) {
  const double k = df;
  const double t = 1.0 - 2.0 / (9.0 * k) + 3.719 * std::sqrt(2.0 / (9.0 * k));
  return k * t * t * t;
}

}  // namespace feedline::test

#endif  // FEEDLINE_TESTS_TESTING_CHI_SQUARE_H_
