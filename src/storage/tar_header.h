// ustar member headers: what `feedline pack` writes before each member and
// what ShardDataset checks before trusting a record's bytes. Only the subset
// a pack uses: regular files with short names, fixed metadata (mode 0644,
// owner 0, mtime 0) so that packing the same files gives the same bytes.
#ifndef FEEDLINE_SRC_STORAGE_TAR_HEADER_H_
#define FEEDLINE_SRC_STORAGE_TAR_HEADER_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace feedline::storage {

using TarHeader = std::array<uint8_t, 512>;

// The header of a regular file `name` (under 100 bytes) of `size` bytes (under
// 8 GiB, what the ustar size field holds). Throws Error otherwise.
TarHeader MakeTarHeader(std::string_view name, uint64_t size);

// Empty if `header` is a valid ustar header of regular file `name` holding
// `size` bytes; else what differs ("tar header checksum mismatch", ...).
std::string CheckTarHeader(const uint8_t* header, std::string_view name, uint64_t size);

// What a member header says, for reading a tar that no index describes.
struct TarMemberHeader {
  std::string name;  // the ustar prefix, if any, then '/' and the name
  char type = '0';   // '0' (or NUL) a regular file, '5' a folder, 'x' pax, 'L' GNU long name ...
  uint64_t size = 0;
};

// True if the 512 bytes at `header` are all zero (the end of an archive).
bool IsZeroTarBlock(const uint8_t* header);

// Empty if `header` is a member header (checksum and size readable), which
// is then put in `out`; else what is wrong with it.
std::string ParseTarHeader(const uint8_t* header, TarMemberHeader* out);

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_TAR_HEADER_H_
