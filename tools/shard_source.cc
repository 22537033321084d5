#include "tools/shard_source.h"

#include <filesystem>

#include "feedline/storage/shard_dataset.h"
#include "feedline/vision/pipeline.h"

namespace feedline::cli {
namespace {

namespace fs = std::filesystem;

bool EndsWith(const std::string& s, const char* suffix) {
  const std::string end(suffix);
  return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

}  // namespace

bool IsShardSource(const std::string& source) {
  std::error_code ec;
  if (fs::is_directory(source, ec)) {
    if (fs::exists(fs::path(source) / "pack.txt", ec)) return true;
    for (const fs::directory_entry& entry : fs::directory_iterator(source, ec)) {
      if (entry.path().extension() == ".idx") return true;
    }
    return false;
  }
  if (EndsWith(source, ".tar") || EndsWith(source, ".idx")) return true;
  return !fs::exists(source, ec) && source.find_first_of("*?[") != std::string::npos;
}

std::shared_ptr<const Dataset> OpenShardSource(const std::string& source,
                                               const SourceLimits& limits) {
  vision::PipelineOptions options;
  options.dtype = DType::kU8;
  options.decode.max_pixels = limits.max_pixels;
  return std::make_shared<storage::ShardDataset>(storage::ShardDataset::Find(source),
                                                 vision::Pipeline({}, options));
}

}  // namespace feedline::cli
