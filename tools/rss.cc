#include "tools/rss.h"

#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace feedline::cli {
namespace {

// The value in kB of a "Name:   1234 kB" line of /proc/self/status, or -1.
double StatusFieldKib(const char* name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t length = std::strlen(name);
  while (std::getline(in, line)) {
    if (line.compare(0, length, name) == 0 && line.size() > length && line[length] == ':') {
      return std::stod(line.substr(length + 1));
    }
  }
  return -1;
}

}  // namespace

double PeakRssMib() {
  double kib = StatusFieldKib("VmHWM");
  if (kib < 0) {
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
    kib = static_cast<double>(usage.ru_maxrss);  // kilobytes on Linux
  }
  return kib / 1024.0;
}

double CurrentRssMib() {
  const double kib = StatusFieldKib("VmRSS");
  return kib < 0 ? 0 : kib / 1024.0;
}

bool ResetPeakRss() {
  std::FILE* file = std::fopen("/proc/self/clear_refs", "w");
  if (file == nullptr) return false;
  const bool ok = std::fputs("5", file) >= 0;
  return std::fclose(file) == 0 && ok;
}

}  // namespace feedline::cli
