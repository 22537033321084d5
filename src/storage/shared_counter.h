// SharedCounter: a 64-bit count kept in a small file and mapped shared, so
// that every process naming the file (and every forked child) sees each
// increment at once, for the price of a memory load: how the processes of a
// node tell one another cheaply that something under a shared folder
// changed (ShardCache counts the cached files it unlinks; ShardFiles looks
// at the count before trusting its open descriptors).
//
// The file holds the count in native byte order; a file shorter than 8
// bytes is extended with zeros (a new count starts at 0).
//
// Thread safety: value and Increment may be called from many threads and
// processes at once.
#ifndef FEEDLINE_SRC_STORAGE_SHARED_COUNTER_H_
#define FEEDLINE_SRC_STORAGE_SHARED_COUNTER_H_

#include <cstdint>
#include <string>

namespace feedline::storage {

class SharedCounter {
 public:
  // Opens `path`, created if missing. Throws Error naming it on failure.
  explicit SharedCounter(const std::string& path);
  ~SharedCounter();
  SharedCounter(const SharedCounter&) = delete;
  SharedCounter& operator=(const SharedCounter&) = delete;

  uint64_t value() const;
  void Increment() const;

 private:
  uint64_t* word_ = nullptr;  // the first 8 bytes of the mapped file
};

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_SHARED_COUNTER_H_
