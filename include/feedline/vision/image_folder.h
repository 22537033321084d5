// ImageFolder: torchvision.datasets.ImageFolder in C++. The root holds one
// folder per class; classes sorted by name give the labels 0, 1, ...; the
// images are the files under each class folder (recursively, following
// symlinks) whose names end in .jpg, .jpeg, .png or .webp (any case), in the
// order torchvision lists them. Files are decoded by content, whatever their
// extension says.
//
// Listing reads directories without a stat per file (readdir's entry types),
// one thread per core across class folders, and sorts once, so a million
// files list in seconds.
//
// Thread safety: as ImageDataset.
//
// Example:
//   ImageFolder train("/data/imagenet/train", TrainPipeline(224));
//   ClassBalancedSampler sampler(train.labels(), /*seed=*/0);
#ifndef FEEDLINE_VISION_IMAGE_FOLDER_H_
#define FEEDLINE_VISION_IMAGE_FOLDER_H_

#include <string>
#include <vector>

#include "feedline/export.h"
#include "feedline/vision/image_dataset.h"
#include "feedline/vision/pipeline.h"

namespace feedline::vision {

class FEEDLINE_EXPORT ImageFolder : public ImageDataset {
 public:
  // Throws Error naming the path if root is missing, is not a directory, has
  // no class folders, or a class folder holds no image file.
  ImageFolder(const std::string& root, Pipeline pipeline, ReadOptions read = {});

  struct Listing {
    ImageList files;  // paths relative to root
    std::vector<std::string> classes;
  };
  // What ImageFolder(root, ...) would hold, without a pipeline.
  static Listing List(const std::string& root);

 private:
  ImageFolder(const std::string& root, Listing listing, Pipeline pipeline, ReadOptions read);
};

// True if `name` ends in .jpg, .jpeg, .png or .webp, in any case.
FEEDLINE_EXPORT bool HasImageExtension(std::string_view name);

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_IMAGE_FOLDER_H_
