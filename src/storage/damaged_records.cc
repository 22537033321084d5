#include "src/storage/damaged_records.h"

#include <cerrno>
#include <fstream>
#include <sstream>

#include "feedline/error.h"
#include "src/storage/local_file.h"

namespace feedline::storage {

std::string DamagedRecordsPathOf(const std::string& tar_path) { return tar_path + ".damaged"; }

std::string DamagedRecordsText(const std::vector<ShardRecord>& records) {
  std::ostringstream text;
  for (const ShardRecord& r : records) text << r.offset << ' ' << r.size << ' ' << r.key << '\n';
  return text.str();
}

bool ListsDamage(const std::string& path, uint64_t offset, uint64_t size) {
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return false;
    throw Error(ErrnoMessage("cannot read the list of damaged records", path));
  }
  // The key, last on its line, is for people only (it may hold spaces).
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    uint64_t begin = 0, bytes = 0;
    if (!(fields >> begin >> bytes)) continue;
    if (begin < offset + size && offset < begin + bytes) return true;
  }
  return false;
}

}  // namespace feedline::storage
