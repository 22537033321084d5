#include "feedline/stats.h"

namespace feedline {

double StatsSnapshot::wait_fraction() const {
  if (elapsed_ns <= 0) return 0.0;
  const double f = static_cast<double>(consumer_wait_ns) / static_cast<double>(elapsed_ns);
  return f < 0 ? 0 : (f > 1 ? 1 : f);
}

}  // namespace feedline
