// Sizes in bytes as users type them, read by one rule everywhere: the
// `feedline` command's options (--shard-size, --max-file-bytes) and the Python
// arguments (DataLoader's memory_budget, pack_shards' shard_bytes, the image
// datasets' max_file_bytes) all parse with ParseByteSize.
//
// The rule (K, KB and KiB as GNU dd and head -c read them; B is a byte here):
//   K M G T P E, Ki Mi ..., KiB MiB ...  1024-based ("256M" = 256 * 2^20)
//   KB MB GB TB PB EB                    1000-based ("1.5GB" = 1,500,000,000)
//   B or no unit                         bytes
// Units are case-insensitive; a decimal fraction is allowed and the result
// rounds down to whole bytes; spaces around the number and unit are ignored.
//
// Thread safety: pure functions.
//
// Example:
//   ByteSizeParse size = ParseByteSize("1.5GB");  // size.bytes == 1500000000
//   if (!size.error.empty()) throw std::invalid_argument("--budget: " + size.error);
#ifndef FEEDLINE_BYTE_SIZE_H_
#define FEEDLINE_BYTE_SIZE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "feedline/export.h"

namespace feedline {

// The rule in one line, for help texts and error messages.
inline constexpr const char kByteSizeRule[] =
    "a number of bytes with an optional unit: K, M, G, T, KiB, MiB, GiB, TiB are "
    "1024-based; KB, MB, GB, TB are 1000-based (\"256M\", \"2GiB\", \"1.5GB\")";

// What ParseByteSize read: `bytes` when `error` is empty, else why the text
// is no size (a phrase to put after the name of the option or argument).
struct FEEDLINE_EXPORT ByteSizeParse {
  int64_t bytes = 0;
  std::string error;
};

// The bytes `text` spells under the rule above, from 0 to 2^63 - 1 (8 EiB);
// bounds narrower than that are the caller's to check.
FEEDLINE_EXPORT ByteSizeParse ParseByteSize(std::string_view text);

// `bytes` in the largest binary unit that holds it whole ("256MiB", "1KiB"),
// else as a plain number ("1000000"); ParseByteSize reads it back exactly.
FEEDLINE_EXPORT std::string FormatByteSize(int64_t bytes);

}  // namespace feedline

#endif  // FEEDLINE_BYTE_SIZE_H_
