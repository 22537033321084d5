// DamagedRecords: the records of a cached shard that are damaged on the
// server itself (their bytes fail their CRC-32C in two downloads running),
// kept in a small text file beside the cached tar (shard-NNNNNN.tar.damaged):
// the shard is taken into the cache with them, so that its other records
// are read, and every thread and process of the node knows that a failed
// check of these records is not the cached copy's fault (no download again).
// One line per record: "OFFSET SIZE KEY" (the record's bytes in the tar).
#ifndef FEEDLINE_SRC_STORAGE_DAMAGED_RECORDS_H_
#define FEEDLINE_SRC_STORAGE_DAMAGED_RECORDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "feedline/storage/shard_index.h"

namespace feedline::storage {

// Where the damaged records of the cached tar at `tar_path` are listed.
std::string DamagedRecordsPathOf(const std::string& tar_path);

// The file's text for `records`.
std::string DamagedRecordsText(const std::vector<ShardRecord>& records);

// True if bytes [offset, offset + size) of the tar overlap a record listed
// in the file at `path` (false if there is no such file). Throws Error
// naming it if it exists but cannot be read.
bool ListsDamage(const std::string& path, uint64_t offset, uint64_t size);

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_DAMAGED_RECORDS_H_
