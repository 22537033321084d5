#include "tools/shard_source.h"

#include <filesystem>

#include "feedline/storage/shard_dataset.h"
#include "tools/command_line.h"
#include "tools/load_shape.h"
#include "tools/shapes_only_dataset.h"

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
                                               const std::string& pipeline, int image_size,
                                               const SourceLimits& limits,
                                               const storage::RemoteOptions& remote) {
  if (pipeline == "read") {
    // ShardDataset hands every record to its pipeline: there is no reading
    // without decoding to time apart.
    throw UsageError("--pipeline read: packed shards are read and decoded in one step; "
                     "--pipeline decode times both");
  }
  // Built first: a bad --size is refused before any index is read.
  vision::Pipeline recipe = ImagePipeline(pipeline, image_size, limits.max_pixels);
  auto shards = std::make_shared<storage::ShardDataset>(storage::ShardDataset::Find(source, remote),
                                                        recipe, std::vector<std::string>{}, 0,
                                                        remote);
  if (pipeline == "decode") return std::make_shared<ShapesOnlyDataset>(std::move(shards));
  return shards;
}

}  // namespace feedline::cli
