// Resident memory of this process: the peak (high-water mark) and the
// current size, read from /proc/self/status with getrusage as the fallback.
//
// Thread safety: the functions may be called from any thread.
#ifndef FEEDLINE_TOOLS_RSS_H_
#define FEEDLINE_TOOLS_RSS_H_

namespace feedline::cli {

// Peak resident set size of this process in MiB (VmHWM, else ru_maxrss).
double PeakRssMib();

// Current resident set size in MiB (VmRSS); 0 if unknown.
double CurrentRssMib();

// Restarts the peak at the current size (Linux /proc/self/clear_refs "5"), so
// that successive measurements in one process each get their own peak.
// Returns false where the kernel does not allow it; PeakRssMib() then keeps
// the peak of the whole process.
bool ResetPeakRss();

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_RSS_H_
