#include "src/vision/mosaic_image_cache.h"

#include <utility>

namespace feedline::vision {
namespace {

// Spare buffers kept for decodes to come: a few threads' worth.
constexpr size_t kMaxSpare = 8;

int64_t BytesOf(const MosaicImage& image) { return static_cast<int64_t>(image.pixels.capacity()); }

}  // namespace

std::shared_ptr<const MosaicImage> MosaicImageCache::Get(int64_t index, const Decoder& decode) {
  auto image = std::make_shared<MosaicImage>();
  {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      auto it = entries_.find(index);
      if (it == entries_.end()) {
        entries_.emplace(index, Entry{});  // this thread decodes it
        break;
      }
      if (it->second.image) {
        recent_.splice(recent_.begin(), recent_, it->second.recent);
        return it->second.image;
      }
      decoded_.wait(lock);  // another thread is decoding it
    }
    if (!spare_.empty()) {
      image->pixels = std::move(spare_.back());
      spare_.pop_back();
    }
  }
  try {
    decode(*image);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.erase(index);
    decoded_.notify_all();
    throw;
  }
  std::lock_guard<std::mutex> lock(mu_);
  KeepLocked(index, image);
  decoded_.notify_all();
  return image;
}

void MosaicImageCache::KeepLocked(int64_t index, std::shared_ptr<MosaicImage> image) {
  const int64_t bytes = BytesOf(*image);
  if (bytes > capacity_bytes_) {
    entries_.erase(index);
    return;
  }
  while (bytes_ + bytes > capacity_bytes_ && !recent_.empty()) {
    auto oldest = entries_.find(recent_.back());
    bytes_ -= BytesOf(*oldest->second.image);
    RecycleLocked(oldest->second.image);
    entries_.erase(oldest);
    recent_.pop_back();
  }
  recent_.push_front(index);
  Entry& entry = entries_[index];
  entry.image = std::move(image);
  entry.recent = recent_.begin();
  bytes_ += bytes;
}

void MosaicImageCache::RecycleLocked(std::shared_ptr<MosaicImage>& image) {
  // Copies of an entry are made under the lock only: 1 means no sample
  // holds this image now, and none can take it.
  if (image.use_count() != 1 || spare_.size() >= kMaxSpare) return;
  spare_.push_back(std::move(image->pixels));
}

int64_t MosaicImageCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace feedline::vision
