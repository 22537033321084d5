#include "feedline/vision/read_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/synth/encode.h"
#include "feedline/synth/synth.h"
#include "tests/vision/vision_testing.h"

namespace feedline::vision {
namespace {

using std::chrono::seconds;

TEST(ReadFile, ReadsTheWholeFileAndKeepsCapacity) {
  testing::TempDir dir;
  std::vector<uint8_t> big(300000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7);
  testing::WriteBytes(dir / "big", big);
  testing::WriteBytes(dir / "small", {1, 2, 3});
  testing::WriteBytes(dir / "empty", {});
  std::vector<uint8_t> bytes;
  ReadFile((dir / "big").c_str(), bytes);
  EXPECT_EQ(bytes, big);
  const uint8_t* storage = bytes.data();
  ReadFile((dir / "small").c_str(), bytes);
  EXPECT_EQ(bytes, (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(bytes.data(), storage);  // no reallocation
  ReadFile((dir / "empty").c_str(), bytes);
  EXPECT_TRUE(bytes.empty());
}

TEST(ReadFile, FailuresAreIoSampleErrors) {
  testing::TempDir dir;
  std::vector<uint8_t> bytes;
  const std::string missing = dir / "missing.jpg";
  const std::string message =
      testing::ExpectSampleError([&] { ReadFile(missing.c_str(), bytes); }, "io", missing);
  EXPECT_NE(message.find("No such file"), std::string::npos) << message;
  EXPECT_EQ(
      testing::ExpectSampleError([&] { ReadFile(dir.path().c_str(), bytes); }, "io", dir.path()),
      "is a directory, not a regular file");
}

// Runs `read` on another thread and waits at most 10 s for it. A read that
// blocks in open() on a FIFO is released by opening the FIFO's other end,
// so a regression fails the test instead of hanging it.
std::string ReadErrorWithin10s(const std::string& path, const std::string& fifo_to_release = "") {
  auto result = std::async(std::launch::async, [&path] {
    std::vector<uint8_t> bytes;
    try {
      ReadFile(path.c_str(), bytes);
    } catch (const SampleError& e) {
      EXPECT_EQ(e.reason(), "io") << e.what();
      EXPECT_EQ(e.source(), path) << e.what();
      return e.message();
    }
    return std::string("(no error, ") + std::to_string(bytes.size()) + " bytes)";
  });
  if (result.wait_for(seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "reading " << path << " did not finish within 10 s";
    if (!fifo_to_release.empty()) {
      const int fd = ::open(fifo_to_release.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) ::close(fd);
    }
  }
  return result.get();
}

TEST(ReadFile, AFifoIsRefusedWithoutWaitingForAWriter) {
  testing::TempDir dir;
  const std::string fifo = dir / "x.jpg";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  EXPECT_EQ(ReadErrorWithin10s(fifo, fifo), "is a FIFO, not a regular file");
  // Behind a symlink too: the opened file is checked, not the link.
  std::filesystem::create_symlink(fifo, dir / "link.jpg");
  EXPECT_EQ(ReadErrorWithin10s(dir / "link.jpg", fifo), "is a FIFO, not a regular file");
}

TEST(ReadFile, ADeviceThatNeverEndsIsRefusedWithoutReading) {
  testing::TempDir dir;
  std::filesystem::create_symlink("/dev/zero", dir / "y.jpg");
  EXPECT_EQ(ReadErrorWithin10s(dir / "y.jpg"), "is a character device, not a regular file");
  EXPECT_EQ(ReadErrorWithin10s("/dev/urandom"), "is a character device, not a regular file");
}

TEST(ReadFile, ASocketIsRefused) {
  testing::TempDir dir;
  // sun_path holds 108 bytes; the test's temp dir may be deeper than that.
  const std::string path = "/tmp/feedline_read_file_" + std::to_string(::getpid()) + ".jpg";
  ::unlink(path.c_str());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0)
      << std::strerror(errno);
  EXPECT_EQ(ReadErrorWithin10s(path), "is a socket, not a regular file");
  ::close(fd);
  ::unlink(path.c_str());
}

TEST(ReadFile, AFileOverTheSizeLimitIsRefusedBeforeReading) {
  testing::TempDir dir;
  const std::string path = dir / "big.jpg";
  testing::WriteBytes(path, std::vector<uint8_t>(100, 7));
  std::vector<uint8_t> bytes;
  ReadOptions options;
  options.max_bytes = 99;
  EXPECT_EQ(testing::ExpectSampleError([&] { ReadFile(path.c_str(), bytes, options); }, "too_large",
                                       path),
            "file is 100 bytes, over the limit of 99 bytes (max_file_bytes)");
  EXPECT_LT(bytes.capacity(), 100u) << "nothing was read";
  options.max_bytes = 100;
  ReadFile(path.c_str(), bytes, options);
  EXPECT_EQ(bytes.size(), 100u);
  options.max_bytes = 0;
  EXPECT_THROW(ReadFile(path.c_str(), bytes, options), Error);
}

TEST(ReadFile, TheDefaultLimitRefusesAHugeSparseFileUnread) {
  testing::TempDir dir;
  const std::string path = dir / "huge.jpg";
  testing::WriteBytes(path, {});
  // 2 GiB of holes: no disk used, and a read would need 2 GiB of memory.
  std::filesystem::resize_file(path, uintmax_t{2} << 30);
  std::vector<uint8_t> bytes;
  const std::string message =
      testing::ExpectSampleError([&] { ReadFile(path.c_str(), bytes); }, "too_large", path);
  EXPECT_NE(message.find("2147483648 bytes, over the limit of 1073741824"), std::string::npos)
      << message;
  EXPECT_EQ(bytes.capacity(), 0u);
}

TEST(ReadFile, AnImageIsRefusedFromItsFirstBytes) {
  testing::TempDir dir;
  // 500 MB of zeros named like an image (sparse: no disk used).
  const std::string zeros = dir / "x.jpg";
  testing::WriteBytes(zeros, {});
  std::filesystem::resize_file(zeros, 500'000'000);
  std::vector<uint8_t> bytes;
  ReadOptions image;
  image.image = true;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(
      testing::ExpectSampleError([&] { ReadFile(zeros.c_str(), bytes, image); }, "format", zeros),
      "not a JPEG, PNG or WebP image (first bytes: 00 00 00 00 00 00 00 00)");
  EXPECT_LE(bytes.capacity(), 4096u) << "only the first bytes were read";
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(1));

  const std::string gif = dir / "y.jpg";
  testing::WriteBytes(gif, {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_NE(testing::ExpectSampleError([&] { ReadFile(gif.c_str(), bytes, image); }, "format", gif)
                .find("unsupported image format: GIF"),
            std::string::npos);
  const std::string empty = dir / "e.jpg";
  testing::WriteBytes(empty, {});
  EXPECT_EQ(
      testing::ExpectSampleError([&] { ReadFile(empty.c_str(), bytes, image); }, "format", empty),
      "empty file");
}

TEST(ReadFile, AnImageIsReadWholeAfterItsSignature) {
  testing::TempDir dir;
  ReadOptions image;
  image.image = true;
  const std::vector<uint8_t> rgb = SynthesizeImage(40, 30, 3);
  for (const std::vector<uint8_t>& encoded :
       {EncodeJpeg(rgb, 40, 30), EncodePng(rgb, 40, 30), EncodeWebp(rgb, 40, 30, 90)}) {
    testing::WriteBytes(dir / "img", encoded);
    std::vector<uint8_t> bytes;
    ReadFile((dir / "img").c_str(), bytes, image);
    EXPECT_EQ(bytes, encoded);
  }
  // A PNG signature alone: shorter than the bytes checked, read whole.
  const std::vector<uint8_t> signature = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  testing::WriteBytes(dir / "short.png", signature);
  std::vector<uint8_t> bytes;
  ReadFile((dir / "short.png").c_str(), bytes, image);
  EXPECT_EQ(bytes, signature);
}

TEST(ReadFile, FileTypeNames) {
  EXPECT_STREQ(FileTypeName(S_IFREG | 0644), "a regular file");
  EXPECT_STREQ(FileTypeName(S_IFIFO), "a FIFO");
  EXPECT_STREQ(FileTypeName(S_IFCHR), "a character device");
  EXPECT_STREQ(FileTypeName(S_IFBLK), "a block device");
  EXPECT_STREQ(FileTypeName(S_IFSOCK), "a socket");
  EXPECT_STREQ(FileTypeName(S_IFDIR), "a directory");
}

}  // namespace
}  // namespace feedline::vision
