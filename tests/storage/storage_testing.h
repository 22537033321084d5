// Helpers for the storage tests: a scratch folder, a small synthetic image
// folder, and reading / patching bytes of a file.
#ifndef FEEDLINE_TESTS_STORAGE_STORAGE_TESTING_H_
#define FEEDLINE_TESTS_STORAGE_STORAGE_TESTING_H_

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "feedline/storage/remote_options.h"

namespace feedline::storage::testing {

// Whether tests load through worker processes: not under AddressSanitizer,
// for the reason the Makefile's test-asan leaves out the label `process`
// (GCC 12's ASan allocator is not locked across fork, so a forked worker can
// inherit it held); the Release suite runs them.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kWorkerProcesses = false;
#else
inline constexpr bool kWorkerProcesses = true;
#endif

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "feedline_storage_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// Remote options for tests against a local server: few, short retries, so
// a test of a failure ends in seconds.
inline RemoteOptions QuickRetries() {
  RemoteOptions options;
  options.max_attempts = 3;
  options.backoff_s = 0.01;
  options.connect_timeout_s = 2;
  options.stall_timeout_s = 2;
  // Retries go on for the whole budget: short, so that a server that is
  // gone fails its reads within a second.
  options.retry_budget_s = 1;
  return options;
}

}  // namespace feedline::storage::testing

#endif  // FEEDLINE_TESTS_STORAGE_STORAGE_TESTING_H_
