#include "src/storage/tar_header.h"

#include <cstdio>
#include <cstring>

#include "feedline/error.h"

namespace feedline::storage {
namespace {

// Field offsets and lengths of the ustar header.
constexpr size_t kName = 0, kNameLen = 100;
constexpr size_t kMode = 100, kUid = 108, kGid = 116;
constexpr size_t kSize = 124, kSizeLen = 12;
constexpr size_t kMtime = 136;
constexpr size_t kChecksum = 148, kChecksumLen = 8;
constexpr size_t kType = 156;
constexpr size_t kMagic = 257;
constexpr size_t kPrefix = 345, kPrefixLen = 155;

void PutOctal(TarHeader& h, size_t at, size_t len, uint64_t value) {
  // len - 1 digits and a NUL, as GNU tar writes them.
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%0*llo", static_cast<int>(len - 1),
                static_cast<unsigned long long>(value));
  std::memcpy(h.data() + at, buffer, len - 1);
  h[at + len - 1] = 0;
}

uint32_t HeaderSum(const uint8_t* h) {
  uint32_t sum = 0;
  for (size_t i = 0; i < 512; ++i) {
    sum += (i >= kChecksum && i < kChecksum + kChecksumLen) ? uint32_t{' '} : h[i];
  }
  return sum;
}

// The octal number in h[at, at + len), or -1 if it is not one.
int64_t ParseOctal(const uint8_t* h, size_t at, size_t len) {
  int64_t value = 0;
  size_t i = at;
  while (i < at + len && h[i] == ' ') ++i;
  bool digits = false;
  for (; i < at + len && h[i] >= '0' && h[i] <= '7'; ++i) {
    if (value > (INT64_MAX >> 3)) return -1;
    value = value * 8 + (h[i] - '0');
    digits = true;
  }
  for (; i < at + len; ++i) {
    if (h[i] != 0 && h[i] != ' ') return -1;
  }
  return digits ? value : -1;
}

}  // namespace

TarHeader MakeTarHeader(std::string_view name, uint64_t size) {
  if (name.empty() || name.size() >= kNameLen) {
    throw Error("tar member name '" + std::string(name) + "' must be 1 to 99 bytes");
  }
  // The size field holds 11 octal digits: a larger size would be cut short.
  constexpr uint64_t kMaxSize = (uint64_t{1} << 33) - 1;
  if (size > kMaxSize) {
    throw Error("tar member '" + std::string(name) + "' of " + std::to_string(size) +
                " bytes is larger than a ustar member can be (8 GiB - 1)");
  }
  TarHeader h{};
  std::memcpy(h.data() + kName, name.data(), name.size());
  PutOctal(h, kMode, 8, 0644);
  PutOctal(h, kUid, 8, 0);
  PutOctal(h, kGid, 8, 0);
  PutOctal(h, kSize, kSizeLen, size);
  PutOctal(h, kMtime, 12, 0);
  h[kType] = '0';
  std::memcpy(h.data() + kMagic,
              "ustar\0"
              "00",
              8);
  const uint32_t sum = HeaderSum(h.data());
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "%06o", sum);
  std::memcpy(h.data() + kChecksum, buffer, 6);
  h[kChecksum + 6] = 0;
  h[kChecksum + 7] = ' ';
  return h;
}

std::string CheckTarHeader(const uint8_t* h, std::string_view name, uint64_t size) {
  const int64_t stored = ParseOctal(h, kChecksum, kChecksumLen);
  if (stored < 0 || static_cast<uint32_t>(stored) != HeaderSum(h)) {
    return "tar header checksum mismatch (not a tar member header, or damaged)";
  }
  const size_t name_len = strnlen(reinterpret_cast<const char*>(h + kName), kNameLen);
  const std::string_view actual(reinterpret_cast<const char*>(h + kName), name_len);
  if (actual != name) {
    return "tar member is '" + std::string(actual) + "', the index says '" + std::string(name) +
           "'";
  }
  if (h[kType] != '0' && h[kType] != 0) return "tar member is not a regular file";
  const int64_t actual_size = ParseOctal(h, kSize, kSizeLen);
  if (actual_size < 0 || static_cast<uint64_t>(actual_size) != size) {
    return "tar member holds " + std::to_string(actual_size) + " bytes, the index says " +
           std::to_string(size);
  }
  return {};
}

bool IsZeroTarBlock(const uint8_t* h) {
  for (size_t i = 0; i < 512; ++i) {
    if (h[i] != 0) return false;
  }
  return true;
}

std::string ParseTarHeader(const uint8_t* h, TarMemberHeader* out) {
  const int64_t stored = ParseOctal(h, kChecksum, kChecksumLen);
  if (stored < 0 || static_cast<uint32_t>(stored) != HeaderSum(h)) {
    return "tar header checksum mismatch (not a tar member header, or damaged)";
  }
  const int64_t size = ParseOctal(h, kSize, kSizeLen);
  if (size < 0) return "tar header has no readable size";
  const char* base = reinterpret_cast<const char*>(h);
  std::string name(base + kName, strnlen(base + kName, kNameLen));
  // The prefix field is ustar's only ("ustar\0"); old GNU headers use those bytes otherwise.
  if (std::memcmp(h + kMagic, "ustar\0", 6) == 0) {
    const size_t prefix_len = strnlen(base + kPrefix, kPrefixLen);
    if (prefix_len > 0) name = std::string(base + kPrefix, prefix_len) + "/" + name;
  }
  out->name = std::move(name);
  out->type = static_cast<char>(h[kType]);
  out->size = static_cast<uint64_t>(size);
  return {};
}

}  // namespace feedline::storage
