// Helpers shared by the vision tests: temporary directories, files and
// pixel comparisons.
#ifndef FEEDLINE_TESTS_VISION_VISION_TESTING_H_
#define FEEDLINE_TESTS_VISION_VISION_TESTING_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "feedline/error.h"

namespace feedline::vision::testing {

// A fresh directory under the test temp dir, removed with the object.
class TempDir {
 public:
  TempDir() {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::path(::testing::TempDir()) /
            (std::string("feedline_") + info->test_suite_name() + "_" + info->name() + "_" +
             std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string path() const { return path_.string(); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  if (!bytes.empty()) {
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  }
  ASSERT_EQ(std::fclose(f), 0);
}

// Mean absolute difference of two equally long byte arrays.
inline double MeanAbsDiff(const uint8_t* a, const uint8_t* b, size_t n) {
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += std::abs(int{a[i]} - int{b[i]});
  return n == 0 ? 0 : sum / static_cast<double>(n);
}
inline double MeanAbsDiff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  EXPECT_EQ(a.size(), b.size());
  return MeanAbsDiff(a.data(), b.data(), std::min(a.size(), b.size()));
}

// Runs `f`, expecting a SampleError whose reason is `reason` and whose
// message mentions `source`; returns the message.
template <typename F>
std::string ExpectSampleError(F&& f, const std::string& reason, const std::string& source) {
  try {
    f();
  } catch (const SampleError& e) {
    EXPECT_EQ(e.reason(), reason) << e.what();
    EXPECT_EQ(e.source(), source) << e.what();
    EXPECT_NE(std::string(e.what()).find(source), std::string::npos) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "expected SampleError(" << reason << ") for " << source;
  return "";
}

}  // namespace feedline::vision::testing

#endif  // FEEDLINE_TESTS_VISION_VISION_TESTING_H_
