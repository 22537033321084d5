// CRC-32C, the checksum of the shard index and of every record: the
// standard's check values, continuation across pieces, and agreement with a
// bit-at-a-time reference at every length and alignment (the hardware path
// works in 8-byte words, then bytes).
#include "feedline/storage/crc32c.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace feedline::storage {
namespace {

TEST(Crc32c, KnownValues) {
  // The check value of CRC-32C (RFC 3720, appendix B.4).
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32c("", 0), 0u);
  // 32 zero bytes, RFC 3720 B.4.
  const std::vector<uint8_t> zeros(32, 0);
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
}

TEST(Crc32c, ContinuesAcrossPieces) {
  std::vector<uint8_t> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + 3);
  for (size_t cut : {0, 1, 7, 8, 9, 500, 999, 1000}) {
    const uint32_t first = Crc32c(data.data(), cut);
    EXPECT_EQ(Crc32c(data.data() + cut, data.size() - cut, first), Crc32c(data.data(), data.size()))
        << cut;
  }
}

// The definition, one bit at a time: reflected, polynomial 0x82F63B78.
uint32_t ReferenceCrc32c(const uint8_t* p, size_t size) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) {
    crc ^= p[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}

TEST(Crc32c, MatchesTheDefinitionAtEveryLengthAndAlignment) {
  std::vector<uint8_t> data(300);
  uint32_t x = 12345;
  for (uint8_t& b : data) {
    x = x * 1103515245u + 12345u;
    b = static_cast<uint8_t>(x >> 24);
  }
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t size = 0; size + offset <= data.size(); size += (size < 40 ? 1 : 37)) {
      EXPECT_EQ(Crc32c(data.data() + offset, size), ReferenceCrc32c(data.data() + offset, size))
          << "offset " << offset << ", " << size << " bytes";
    }
  }
}

}  // namespace
}  // namespace feedline::storage
