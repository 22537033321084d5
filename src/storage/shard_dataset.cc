#include "feedline/storage/shard_dataset.h"

#include <glob.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <sstream>
#include <utility>

#include "feedline/error.h"
#include "feedline/storage/crc32c.h"
#include "feedline/storage/shard_index.h"
#include "src/storage/brace_list.h"
#include "src/storage/http_pack_store.h"
#include "src/storage/pack_manifest.h"
#include "src/storage/pack_store.h"
#include "src/storage/tar_header.h"

namespace feedline::storage {
namespace {

namespace fs = std::filesystem;

// Scratch buffer of Get (Pipeline::Run uses its own slots).
constexpr int kBytesSlot = 0;
constexpr int kSourceSlot = 1;

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "x.tar" and "x.idx" both name the shard whose index is "x.idx".
std::string IndexPathOf(const std::string& path) {
  if (EndsWith(path, ".tar")) return path.substr(0, path.size() - 4) + ".idx";
  return path;
}

std::string TarPathOf(const std::string& index_path) {
  return index_path.substr(0, index_path.size() - 4) + ".tar";
}

std::string FolderOf(const std::string& path) {
  if (IsRemoteLocation(path)) return path.substr(0, path.rfind('/'));
  const std::string dir = fs::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

std::vector<std::string> TarPathsOf(const std::vector<std::string>& index_files) {
  std::vector<std::string> tars;
  for (const std::string& index_path : index_files) tars.push_back(TarPathOf(index_path));
  return tars;
}

std::vector<std::string> ClassesOf(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> classes;
  std::string line;
  while (std::getline(in, line)) classes.push_back(line);
  return classes;
}

}  // namespace

std::vector<std::string> ShardDataset::Find(const std::string& path_or_glob,
                                           const RemoteOptions& remote) {
  // A brace list names its shards (local or remote), in its order.
  if (HasBraceList(path_or_glob)) {
    std::vector<std::string> found;
    for (const std::string& name : ExpandBraceList(path_or_glob)) {
      if (!EndsWith(name, ".tar") && !EndsWith(name, ".idx")) {
        throw Error(path_or_glob + ": a brace list names shards, ending in .tar or .idx, not '" +
                    name + "'");
      }
      found.push_back(IndexPathOf(name));
    }
    if (found.empty()) throw Error(path_or_glob + ": the brace list names no shard");
    return found;
  }
  if (IsRemoteLocation(path_or_glob)) return HttpPackStore::FindIndexes(path_or_glob, remote);
  std::vector<std::string> found;
  std::error_code ec;
  if (fs::is_directory(path_or_glob, ec)) {
    // Its shards: the .idx files, or where there are none, the .tar files
    // (WebDataset-style shards, indexed when the dataset is built).
    std::vector<std::string> tars;
    for (const fs::directory_entry& entry : fs::directory_iterator(path_or_glob, ec)) {
      const std::string name = entry.path().filename().string();
      if (EndsWith(name, ".idx")) found.push_back(entry.path().string());
      if (EndsWith(name, ".tar")) tars.push_back(IndexPathOf(entry.path().string()));
    }
    if (found.empty()) found = std::move(tars);
    if (found.empty()) {
      throw Error(path_or_glob +
                  ": no shard index (*.idx) or tar (*.tar) in this folder; pack it with "
                  "'feedline pack SOURCE OUT'");
    }
  } else if (path_or_glob.find_first_of("*?[") != std::string::npos) {
    glob_t matches{};
    const int rc = ::glob(path_or_glob.c_str(), 0, nullptr, &matches);
    for (size_t i = 0; rc == 0 && i < matches.gl_pathc; ++i) {
      const std::string path = matches.gl_pathv[i];
      if (EndsWith(path, ".tar") || EndsWith(path, ".idx")) found.push_back(IndexPathOf(path));
    }
    ::globfree(&matches);
    if (found.empty()) throw Error(path_or_glob + ": no .tar or .idx file matches this pattern");
  } else {
    if (!fs::exists(path_or_glob, ec) && !EndsWith(path_or_glob, ".tar") &&
        !EndsWith(path_or_glob, ".idx")) {
      throw OsError(ENOENT, path_or_glob, path_or_glob + ": does not exist");
    }
    if (!EndsWith(path_or_glob, ".tar") && !EndsWith(path_or_glob, ".idx")) {
      throw Error(path_or_glob +
                  ": expected a folder of shards, a glob pattern, or a .tar or "
                  ".idx file");
    }
    found.push_back(IndexPathOf(path_or_glob));
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

ShardDataset::ShardDataset(std::vector<std::string> index_files, vision::Pipeline pipeline,
                           std::vector<std::string> classes, size_t max_open_shards,
                           RemoteOptions remote)
    : ShardDataset(index_files,
                   OpenPackStore(TarPathsOf(index_files), max_open_shards, remote),
                   std::move(pipeline), std::move(classes), remote) {}

ShardDataset::ShardDataset(std::vector<std::string> index_files,
                           std::unique_ptr<PackStore> store, vision::Pipeline pipeline,
                           std::vector<std::string> classes, RemoteOptions remote)
    : pipeline_(std::move(pipeline)),
      classes_(std::move(classes)),
      remote_(remote),
      tar_paths_(TarPathsOf(index_files)),
      store_(std::move(store)) {
  if (index_files.empty()) throw Error("shard dataset: no shard index given");
  pipeline_.CheckWithoutObjects("shard dataset " + index_files.front());
  static_assert(kSourceSlot < SampleContext::kDatasetScratchSlots, "scratch slots overlap");
  // Every file below is read through the store: local or remote, the same
  // checks.
  const std::string folder = FolderOf(index_files.front());
  const PackManifest manifest(store_->ReadText(folder + "/pack.txt").value_or(""));
  if (!manifest.text().empty() && !manifest.finished()) {
    throw Error(folder +
                ": the pack is unfinished (pack.txt has no record count); run "
                "'feedline pack' with the same SOURCE and OUT again to finish it");
  }
  for (size_t shard = 0; shard < index_files.size(); ++shard) {
    // A tar without its index (a WebDataset-style shard) is indexed here.
    std::optional<ShardIndex> read = store_->ReadIndex(index_files[shard]);
    const ShardIndex index =
        read ? std::move(*read) : store_->IndexTar(shard, index_files[shard]);
    store_->CheckTar(shard, index.tar_size);
    shard_starts_.push_back(size());
    for (const ShardRecord& r : index.records) {
      offsets_.push_back(r.offset);
      sizes_.push_back(r.size);
      labels_.push_back(r.label);
      crcs_.push_back(r.crc32c);
      formats_.push_back(static_cast<uint8_t>(r.format));
      annotation_sizes_.push_back(r.annotation_size);
      annotation_crcs_.push_back(r.annotation_crc32c);
      usable_boxes_.push_back(r.has_usable_box);
      image_sizes_.emplace_back(r.image_height, r.image_width);
      keys_ += r.key;
      key_ends_.push_back(keys_.size());
      restarts_.insert(restarts_.end(), r.jpeg_restarts.begin(), r.jpeg_restarts.end());
      restart_ends_.push_back(restarts_.size());
    }
  }
  if (classes_.empty()) {
    if (std::optional<std::string> text = store_->ReadText(folder + "/classes.txt")) {
      classes_ = ClassesOf(*text);
    }
  }
  if (classes_.empty()) {
    int64_t count = 0;
    for (int64_t label : labels_) count = std::max(count, label + 1);
    for (int64_t c = 0; c < count; ++c) classes_.push_back(std::to_string(c));
  }
  if (!manifest.text().empty() &&
      manifest.Value("shards") == std::to_string(index_files.size()) &&
      manifest.Value("records") != std::to_string(size())) {
    throw Error(folder + ": the shards hold " + std::to_string(size()) +
                " records, pack.txt says " + manifest.Value("records"));
  }
  for (int64_t i = 0; i < size(); ++i) {
    if (labels_[i] >= static_cast<int64_t>(classes_.size())) {
      throw Error(Source(i) + ": label " + std::to_string(labels_[i]) + " is outside [0, " +
                  std::to_string(classes_.size()) + ") (classes.txt)");
    }
  }
}

ShardDataset::~ShardDataset() = default;

size_t ShardDataset::max_open_shards() const { return store_->max_open(); }
size_t ShardDataset::open_shards() const { return store_->open_count(); }

int64_t ShardDataset::shard_of(int64_t index) const {
  CheckIndex(index, size());
  return static_cast<int64_t>(std::upper_bound(shard_starts_.begin(), shard_starts_.end(), index) -
                              shard_starts_.begin() - 1);
}

std::string ShardDataset::key(int64_t index) const {
  CheckIndex(index, size());
  const size_t i = static_cast<size_t>(index);
  const size_t begin = i == 0 ? 0 : key_ends_[i - 1];
  return keys_.substr(begin, key_ends_[i] - begin);
}

std::string ShardDataset::Source(int64_t index) const {
  return tar_paths_[static_cast<size_t>(shard_of(index))] + ":" + key(index);
}

uint32_t ShardDataset::annotation_size(int64_t index) const {
  CheckIndex(index, size());
  return annotation_sizes_[static_cast<size_t>(index)];
}

bool ShardDataset::has_usable_box(int64_t index) const {
  CheckIndex(index, size());
  return usable_boxes_[static_cast<size_t>(index)];
}

std::pair<uint32_t, uint32_t> ShardDataset::image_size(int64_t index) const {
  CheckIndex(index, size());
  return image_sizes_[static_cast<size_t>(index)];
}

ShardDataset::Record ShardDataset::ReadRecord(int64_t index, std::vector<uint8_t>& bytes,
                                              SampleContext& ctx) const {
  const int64_t shard = shard_of(index);
  const size_t i = static_cast<size_t>(index);
  const uint64_t offset = offsets_[i];
  const uint64_t size = sizes_[i];
  const uint64_t annotation_size = annotation_sizes_[i];
  // The annotations (KEY.det) follow the image's padded data and their own
  // tar header: read in the same range.
  const uint64_t annotation_at =
      annotation_size == 0 ? 0
                           : (offset + size + kTarBlock - 1) / kTarBlock * kTarBlock + kTarBlock;
  auto fail = [&](FailureKind kind, const std::string& what) {
    throw SampleError(kind, Source(index),
                      what + " (shard " + tar_paths_[static_cast<size_t>(shard)] + ", key " +
                          key(index) + ", offset " + std::to_string(offset) + ")");
  };
  auto timer = ctx.Time(Stage::kRead);
  // The member's header and its bytes in one positioned read (one ranged
  // GET for a remote pack), checked: its tar header, then its CRC-32C. A
  // store that can repair its copy (the node's cache) reads them again.
  const size_t want = static_cast<size_t>(annotation_size == 0
                                              ? kTarBlock + size
                                              : annotation_at + annotation_size - offset + kTarBlock);
  bytes.resize(want);
  const std::string name =
      key(index) + ShardExtension(static_cast<vision::ImageFormat>(formats_[i]));
  struct Expected {
    const std::string& name;
    uint64_t size;
    uint32_t crc;
    uint64_t annotation_at;  // in the bytes read; 0: none
    uint64_t annotation_size;
    uint32_t annotation_crc;
  } expected{name,
             size,
             crcs_[i],
             annotation_size == 0 ? 0 : annotation_at - offset + kTarBlock,
             annotation_size,
             annotation_crcs_[i]};
  // Captures one pointer: no allocation per record.
  const PackStore::RangeCheck check = [&expected](const uint8_t* read) -> std::string {
    std::string problem = CheckTarHeader(read, expected.name, expected.size);
    if (!problem.empty()) return problem;
    const uint32_t crc = Crc32c(read + kTarBlock, expected.size);
    if (crc != expected.crc) {
      return "CRC-32C mismatch: the index says " + std::to_string(expected.crc) +
             ", the bytes give " + std::to_string(crc);
    }
    if (expected.annotation_size == 0) return {};
    const std::string det = expected.name.substr(0, expected.name.rfind('.')) + ".det";
    problem = CheckTarHeader(read + expected.annotation_at - kTarBlock, det,
                             expected.annotation_size);
    if (!problem.empty()) return "annotations: " + problem;
    const uint32_t annotation_crc =
        Crc32c(read + expected.annotation_at, expected.annotation_size);
    if (annotation_crc == expected.annotation_crc) return {};
    return "annotations: CRC-32C mismatch: the index says " +
           std::to_string(expected.annotation_crc) + ", the bytes give " +
           std::to_string(annotation_crc);
  };
  std::string problem;
  try {
    problem = store_->ReadCheckedRange(static_cast<size_t>(shard), offset - kTarBlock, want,
                                       bytes.data(), check);
  } catch (const Error& e) {
    fail(FailureKind::kIo, e.what());
  }
  if (!problem.empty()) fail(FailureKind::kChecksum, problem);
  const size_t restart_begin = i == 0 ? 0 : restart_ends_[i - 1];
  Record record;
  record.image = std::span<const uint8_t>(bytes.data() + kTarBlock, size);
  if (annotation_size > 0) {
    record.annotations =
        std::span<const uint8_t>(bytes.data() + expected.annotation_at, annotation_size);
  }
  record.jpeg_restarts = std::span<const uint32_t>(restarts_.data() + restart_begin,
                                                   restart_ends_[i] - restart_begin);
  return record;
}

void ShardDataset::Get(int64_t index, Sample& out, SampleContext& ctx) const {
  const int64_t shard = shard_of(index);
  const size_t i = static_cast<size_t>(index);
  const Record record = ReadRecord(index, ctx.scratch(kBytesSlot), ctx);
  // "SHARD.tar:KEY" for decode errors, assembled without an allocation.
  std::vector<uint8_t>& source = ctx.scratch(kSourceSlot);
  const std::string& tar = tar_paths_[static_cast<size_t>(shard)];
  const size_t key_begin = i == 0 ? 0 : key_ends_[i - 1];
  source.assign(tar.begin(), tar.end());
  source.push_back(':');
  source.insert(source.end(), keys_.begin() + static_cast<std::ptrdiff_t>(key_begin),
                keys_.begin() + static_cast<std::ptrdiff_t>(key_ends_[i]));
  pipeline_.Run(record.image,
                std::string_view(reinterpret_cast<const char*>(source.data()), source.size()), out,
                "image", ctx, record.jpeg_restarts);
  out.SetScalar<int64_t>("label", labels_[i]);
}

void ShardDataset::EpochOrder(std::span<const int64_t> order) const {
  // Each shard once, where the order first needs it, with its last use.
  std::vector<PlannedShard> plan;
  std::vector<int64_t> entry_of(shard_starts_.size(), -1);
  for (size_t at = 0; at < order.size(); ++at) {
    const int64_t index = order[at];
    if (index < 0 || index >= size()) continue;  // Get reports it
    const size_t shard = static_cast<size_t>(
        std::upper_bound(shard_starts_.begin(), shard_starts_.end(), index) -
        shard_starts_.begin() - 1);
    if (entry_of[shard] < 0) {
      entry_of[shard] = static_cast<int64_t>(plan.size());
      plan.push_back(PlannedShard{shard, 0});
    }
    plan[static_cast<size_t>(entry_of[shard])].last_use = static_cast<int64_t>(at);
  }
  store_->PlanShards(std::move(plan));
}

void ShardDataset::EpochProgress(int64_t delivered) const { store_->PlanProgress(delivered); }

std::vector<FieldSpec> ShardDataset::FixedFields() const {
  std::optional<Shape> shape = pipeline_.FixedShape();
  if (!shape) return {FieldSpec{"label", DType::kI64, Shape{}}};
  return {FieldSpec{"image", pipeline_.dtype(), *shape}, FieldSpec{"label", DType::kI64, Shape{}}};
}

}  // namespace feedline::storage
