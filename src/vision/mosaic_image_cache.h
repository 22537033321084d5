// MosaicImageCache: the images a mosaic dataset decoded lately, by dataset
// index, so that the samples of a batch, which draw their partners from the
// batch (feedline/vision/mosaic.h), decode each of its images once.
//
// What it keeps is a pure function of the file (Pipeline::DecodeForTiles),
// so a sample's pixels are the same whether its images were found here or
// decoded anew: the cache changes the work, never the result, and so not
// the batches' independence from the worker count. It holds at most
// `capacity_bytes` of pixels, dropping the least recently used image first
// (one image larger than that is decoded and not kept). The pixel buffers
// of dropped images that no sample still uses are handed to the next
// decodes: a fresh buffer of a megabyte costs its page faults and zeroing,
// a fifth of a 640 x 480 JPEG's decode.
//
// Thread safety: all methods may be called from any thread. When two
// threads want the same missing image, the first decodes it and the other
// waits for it instead of decoding it again.
//
// Example:
//   std::shared_ptr<const MosaicImage> image = cache.Get(index, [&](MosaicImage& made) {
//     made.image = pipeline.DecodeForTiles(bytes, path, side, made.pixels, ctx);
//   });
#ifndef FEEDLINE_SRC_VISION_MOSAIC_IMAGE_CACHE_H_
#define FEEDLINE_SRC_VISION_MOSAIC_IMAGE_CACHE_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "feedline/vision/decode.h"

namespace feedline::vision {

// One decoded image and its pixels (DecodeForTiles': they fill the start
// of `pixels`, which may be longer).
struct MosaicImage {
  DecodedImage image;
  std::vector<uint8_t> pixels;
};

class MosaicImageCache {
 public:
  // Decodes into its argument, whose `pixels` may hold a used buffer.
  using Decoder = std::function<void(MosaicImage&)>;

  explicit MosaicImageCache(int64_t capacity_bytes) : capacity_bytes_(capacity_bytes) {}

  // Image `index`: the kept one, or the one another thread is decoding
  // (waited for), or `decode`'s, kept. An exception from `decode` goes to
  // the caller and leaves nothing kept (a thread that waited then decodes
  // it itself, and meets its own error).
  std::shared_ptr<const MosaicImage> Get(int64_t index, const Decoder& decode);

  // Bytes of pixels kept now.
  int64_t bytes() const;

 private:
  struct Entry {
    std::shared_ptr<MosaicImage> image;   // null while being decoded
    std::list<int64_t>::iterator recent;  // in recent_, once decoded
  };

  // Keeps `image` as `index`'s, dropping the least recently used to stay
  // within capacity.
  void KeepLocked(int64_t index, std::shared_ptr<MosaicImage> image);
  // Keeps the pixel buffer of `image` for a later decode when no sample
  // holds it any more.
  void RecycleLocked(std::shared_ptr<MosaicImage>& image);

  const int64_t capacity_bytes_;
  mutable std::mutex mu_;
  std::condition_variable decoded_;
  std::unordered_map<int64_t, Entry> entries_;
  std::list<int64_t> recent_;  // decoded entries, most recently used first
  int64_t bytes_ = 0;
  std::vector<std::vector<uint8_t>> spare_;  // buffers of dropped images
};

}  // namespace feedline::vision

#endif  // FEEDLINE_SRC_VISION_MOSAIC_IMAGE_CACHE_H_
