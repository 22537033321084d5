// The ustar headers a pack writes before each member, and the check
// ShardDataset makes before trusting a record's bytes.
#include "src/storage/tar_header.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "feedline/error.h"

namespace feedline::storage {
namespace {

using ::testing::HasSubstr;

std::string Field(const TarHeader& h, size_t at, size_t len) {
  return std::string(reinterpret_cast<const char*>(h.data() + at),
                     strnlen(reinterpret_cast<const char*>(h.data() + at), len));
}

TEST(MakeTarHeader, WritesAUstarRegularFileHeader) {
  const TarHeader h = MakeTarHeader("000000017.jpg", 40000);
  EXPECT_EQ(Field(h, 0, 100), "000000017.jpg");
  EXPECT_EQ(Field(h, 100, 8), "0000644");              // mode
  EXPECT_EQ(Field(h, 124, 12), "00000116100");         // 40000 in octal
  EXPECT_EQ(Field(h, 136, 12), "00000000000");         // mtime 0: the same files, the same bytes
  EXPECT_EQ(h[156], '0');                              // a regular file
  EXPECT_EQ(std::memcmp(h.data() + 257, "ustar\0" "00", 8), 0);
  // The checksum: the bytes' sum with its own field as spaces, six octal
  // digits, a NUL and a space.
  uint32_t sum = 0;
  for (size_t i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : h[i];
  EXPECT_EQ(std::stoul(Field(h, 148, 6), nullptr, 8), sum);
  EXPECT_EQ(h[154], 0);
  EXPECT_EQ(h[155], ' ');
}

TEST(MakeTarHeader, IsTheSameForTheSameMember) {
  EXPECT_EQ(MakeTarHeader("a.cls", 1), MakeTarHeader("a.cls", 1));
  EXPECT_NE(MakeTarHeader("a.cls", 1), MakeTarHeader("a.cls", 2));
}

TEST(MakeTarHeader, RefusesANameThatDoesNotFit) {
  EXPECT_NO_THROW(MakeTarHeader(std::string(99, 'n'), 0));
  for (const std::string& name : {std::string(), std::string(100, 'n')}) {
    try {
      MakeTarHeader(name, 0);
      FAIL() << name.size() << " bytes";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("must be 1 to 99 bytes"));
    }
  }
}

TEST(MakeTarHeader, RefusesASizeTheFieldCannotHold) {
  // 11 octal digits: 8 GiB would be written as its first 11 digits, 1 GiB.
  try {
    MakeTarHeader("huge.bin", uint64_t{1} << 33);
    FAIL() << "8 GiB does not fit a ustar size field";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'huge.bin' of 8589934592 bytes is larger than a ustar "
                                    "member can be (8 GiB - 1)"));
  }
}

TEST(CheckTarHeader, AcceptsWhatMakeTarHeaderWrote) {
  for (const uint64_t size : {uint64_t{0}, uint64_t{1}, uint64_t{511}, (uint64_t{1} << 33) - 1}) {
    const TarHeader h = MakeTarHeader("x.jpg", size);
    EXPECT_EQ(CheckTarHeader(h.data(), "x.jpg", size), "") << size;
  }
}

TEST(CheckTarHeader, SaysWhatDiffersFromTheIndex) {
  const TarHeader h = MakeTarHeader("000000003.jpg", 700);
  EXPECT_EQ(CheckTarHeader(h.data(), "000000004.jpg", 700),
            "tar member is '000000003.jpg', the index says '000000004.jpg'");
  EXPECT_EQ(CheckTarHeader(h.data(), "000000003.jpg", 701),
            "tar member holds 700 bytes, the index says 701");
}

TEST(CheckTarHeader, RefusesDamagedBytesAndOtherMemberTypes) {
  TarHeader damaged = MakeTarHeader("a.jpg", 10);
  damaged[3] ^= 0x20;
  EXPECT_THAT(CheckTarHeader(damaged.data(), "a.jpg", 10), HasSubstr("checksum mismatch"));

  TarHeader zeros{};
  EXPECT_THAT(CheckTarHeader(zeros.data(), "a.jpg", 10), HasSubstr("checksum mismatch"));

  // A directory entry with a valid checksum.
  TarHeader directory = MakeTarHeader("a.jpg", 10);
  directory[156] = '5';
  uint32_t sum = 0;
  for (size_t i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : directory[i];
  std::snprintf(reinterpret_cast<char*>(directory.data() + 148), 7, "%06o", sum);
  EXPECT_EQ(CheckTarHeader(directory.data(), "a.jpg", 10), "tar member is not a regular file");
}

}  // namespace
}  // namespace feedline::storage
