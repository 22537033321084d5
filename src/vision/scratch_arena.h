// Typed arrays carved out of one reusable byte buffer, so a resampler
// allocates only while the buffer grows (the first images of a run).
#ifndef FEEDLINE_SRC_VISION_SCRATCH_ARENA_H_
#define FEEDLINE_SRC_VISION_SCRATCH_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace feedline::vision::internal {

// Usage: Reserve<T>(n) for every array, then Allocate(), then Take<T>(n) in
// the same order. Each array starts on a 64-byte boundary.
class ScratchArena {
 public:
  explicit ScratchArena(std::vector<uint8_t>& buffer) : buffer_(buffer) {}

  template <typename T>
  void Reserve(size_t count) {
    size_ += Rounded(count * sizeof(T));
  }
  void Allocate() {
    if (buffer_.size() < size_ + 64) buffer_.resize(size_ + 64);
    base_ = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(buffer_.data()) + 63) &
                                       ~uintptr_t{63});
  }
  template <typename T>
  T* Take(size_t count) {
    T* out = reinterpret_cast<T*>(base_ + used_);
    used_ += Rounded(count * sizeof(T));
    return out;
  }

 private:
  static size_t Rounded(size_t bytes) { return (bytes + 63) & ~size_t{63}; }

  std::vector<uint8_t>& buffer_;
  size_t size_ = 0;
  size_t used_ = 0;
  uint8_t* base_ = nullptr;
};

}  // namespace feedline::vision::internal

#endif  // FEEDLINE_SRC_VISION_SCRATCH_ARENA_H_
