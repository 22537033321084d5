// The online tuner's rules that matter outside the loader (num_workers or
// prefetch_factor "auto"; docs/tuning.md): `feedline tune` recommends a
// fixed setting by the same rule the tuner keeps a change by.
#ifndef FEEDLINE_TUNING_H_
#define FEEDLINE_TUNING_H_

namespace feedline {

// The tuner keeps a change of setting only if throughput rose by at least
// this share.
inline constexpr double kTunerMinGain = 0.03;

}  // namespace feedline

#endif  // FEEDLINE_TUNING_H_
