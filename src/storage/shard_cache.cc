#include "src/storage/shard_cache.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <thread>

#include "feedline/error.h"
#include "feedline/storage/crc32c.h"
#include "feedline/storage/shard_index.h"
#include "src/storage/damaged_records.h"
#include "src/storage/local_file.h"
#include "src/storage/parted_download.h"
#include "src/storage/shard_writer.h"
#include "src/storage/tar_indexer.h"

namespace feedline::storage {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxIndexBytes = uint64_t{1} << 30;

std::string Hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

// FNV-1a: a stable name for a pack's folder URL.
uint64_t Fnv1a(const std::string& text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

// Where the index of a shard the server has none of is kept: beside it.
std::string SavedIndexPathOf(const std::string& tar_path) {
  return tar_path.substr(0, tar_path.size() - 4) + ".idx";
}

// Whether `path`, in a pack's folder of the cache, is a whole cached unit (a
// shard, or a file of another format) rather than one of the files kept
// beside one (a download under way, its progress, a lock, a saved index, a
// list of damaged records).
bool IsCachedUnit(const fs::path& path) {
  static const char* const kBeside[] = {".part", ".progress", ".lock", ".idx", ".damaged",
                                         ".tmp"};
  const std::string extension = path.extension().string();
  for (const char* beside : kBeside) {
    if (extension == beside) return false;
  }
  return true;
}

// A POSIX record lock on the whole of `path`, held until destruction (it
// belongs to this process: a forked child does not hold it).
//
// EDEADLK is waited out: the kernel sees a process's locks as one owner, so
// two ranks whose threads each download one file while another thread waits
// for the other rank's file look like a cycle, though each download ends and
// frees its lock (seen with two ranks sharing a cache_dir). A real cycle
// cannot form: locks nest one way only, a file's and then the cache's own
// (MakeRoom), and the cache's is never held while waiting for a file's.
class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error(ErrnoMessage("cannot open lock file", path));
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    while (::fcntl(fd_, F_SETLKW, &lock) != 0) {
      if (errno == EINTR) continue;
      if (errno == EDEADLK) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      const std::string message = ErrnoMessage("cannot lock", path);
      ::close(fd_);
      throw Error(message);
    }
  }
  ~FileLock() { ::close(fd_); }  // closing releases the lock
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

// Held by the thread of this process that holds the cache-wide record lock
// (CacheWideLock): a record lock belongs to the process, so two of its
// threads would both be granted it, and the first to close its descriptor
// would free it while the other still evicted. Leaked on purpose (the fork
// handlers may run during exit).
internal::Mutex& CacheWideMutex() {
  static auto* mutex = new internal::Mutex;
  return *mutex;
}

// The cache-wide lock under which whole files are counted, evicted and put
// in place: this process's threads one at a time, then processes.
class SCOPED_CAPABILITY CacheWideLock {
 public:
  explicit CacheWideLock(const std::string& root) ACQUIRE(CacheWideMutex())
      : held_(&CacheWideMutex()), file_(root + "/.feedline-cache.lock") {}
  ~CacheWideLock() RELEASE() = default;
  CacheWideLock(const CacheWideLock&) = delete;
  CacheWideLock& operator=(const CacheWideLock&) = delete;

 private:
  internal::MutexLock held_;
  FileLock file_;
};

// The records whose bytes in `file` do not match the index.
std::vector<ShardRecord> DamagedRecords(const LocalFile& file, const ShardIndex& index) {
  std::vector<ShardRecord> damaged;
  std::vector<uint8_t> bytes;
  for (const ShardRecord& record : index.records) {
    bytes.resize(static_cast<size_t>(record.size));
    file.ReadAt(bytes.data(), bytes.size(), record.offset);
    if (Crc32c(bytes.data(), bytes.size()) != record.crc32c) damaged.push_back(record);
  }
  return damaged;
}

// `root`, created if missing; throws Error naming it if it cannot be.
const std::string& MadeFolder(const std::string& root) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw Error(root + ": cannot create the shard cache folder: " + ec.message());
  return root;
}

// Every live ShardCache, for the fork handlers; leaked on purpose (the
// handlers may run during exit).
std::mutex& RegistryMutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}
std::set<ShardCache*>& Registry() {
  static auto* registry = new std::set<ShardCache*>;
  return *registry;
}

}  // namespace

void ShardCache::PrepareFork() {
  CacheWideMutex().Lock();
  RegistryMutex().lock();
  for (ShardCache* cache : Registry()) cache->mu_.Lock();
}

void ShardCache::ParentAfterFork() {
  for (ShardCache* cache : Registry()) cache->mu_.Unlock();
  RegistryMutex().unlock();
  CacheWideMutex().Unlock();
}

void ShardCache::ChildAfterFork() {
  for (ShardCache* cache : Registry()) {
    cache->downloading_.clear();
    cache->mu_.Unlock();
  }
  RegistryMutex().unlock();
  CacheWideMutex().Unlock();
}

ShardCache::~ShardCache() {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().erase(this);
}

ShardCache::ShardCache(std::string cache_dir, uint64_t cache_limit,
                       std::vector<std::string> tar_urls, std::vector<std::string> index_urls,
                       OpenByteSource open, const RemoteOptions& download,
                       std::function<void()> after_unlink)
    : root_(std::move(cache_dir)),
      limit_(cache_limit),
      tar_urls_(std::move(tar_urls)),
      index_urls_(std::move(index_urls)),
      open_(std::move(open)),
      part_bytes_(download.download_part_bytes),
      parts_at_once_(download.download_parts),
      unlinks_(MadeFolder(root_) + "/.feedline-unlinks"),
      after_unlink_(std::move(after_unlink)) {
  for (const std::string& url : tar_urls_) {
    const size_t slash = url.rfind('/');
    const std::string folder = Hex64(Fnv1a(url.substr(0, slash)));
    paths_.push_back(root_ + "/" + folder + "/" + url.substr(slash + 1));
  }
  std::error_code ec;
  for (const std::string& path : paths_) {
    fs::create_directories(fs::path(path).parent_path(), ec);
    if (ec) {
      throw Error(root_ + ": cannot create the shard cache folder " +
                  fs::path(path).parent_path().string() + ": " + ec.message());
    }
  }
  // Registered last: a constructor that throws leaves nothing behind.
  static std::once_flag handlers;
  std::call_once(handlers, [] { ::pthread_atfork(PrepareFork, ParentAfterFork, ChildAfterFork); });
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    Registry().insert(this);
  }
}

int64_t ShardCache::downloads() const {
  internal::MutexLock lock(&mu_);
  return downloads_;
}

void ShardCache::Touch(size_t shard) const {
  ::utimensat(AT_FDCWD, paths_[shard].c_str(), nullptr, 0);
}

void ShardCache::Release(size_t shard) const {
  // The oldest time there is (1 s after the epoch: 0 may read as unset).
  const struct timespec times[2] = {{0, UTIME_OMIT}, {1, 0}};
  ::utimensat(AT_FDCWD, paths_[shard].c_str(), times, 0);
}

bool ShardCache::BeginDownload(size_t shard, bool even_if_present) const {
  internal::MutexLock lock(&mu_);
  while (downloading_.count(shard) != 0) done_.Wait(&mu_);
  if (!even_if_present && ::access(paths_[shard].c_str(), F_OK) == 0) return false;
  downloading_.insert(shard);
  return true;
}

void ShardCache::EndDownload(size_t shard) const {
  internal::MutexLock lock(&mu_);
  downloading_.erase(shard);
  done_.NotifyAll();
}

namespace {
// Ends a download that BeginDownload started, however the scope is left.
struct DownloadScope {
  std::function<void()> end;
  ~DownloadScope() {
    if (end) end();
  }
};
}  // namespace

void ShardCache::Ensure(size_t shard) const {
  if (!BeginDownload(shard)) return;
  const DownloadScope scope{[this, shard] { EndDownload(shard); }};
  const FileLock lock(paths_[shard] + ".lock");
  // Another process may have put it in place while this one waited.
  if (::access(paths_[shard].c_str(), F_OK) == 0) return;
  Download(shard);
}

void ShardCache::Unlinked() const {
  unlinks_.Increment();
  if (after_unlink_) after_unlink_();
}

bool ShardCache::Repair(size_t shard, uint64_t offset, uint64_t size, dev_t read_device,
                        ino_t read_inode) const {
  const std::string& path = paths_[shard];
  BeginDownload(shard, /*even_if_present=*/true);
  const DownloadScope scope{[this, shard] { EndDownload(shard); }};
  const FileLock lock(path + ".lock");
  struct stat st;
  // The caller holds the file it read open, so its inode is not reused: the
  // same inode is the same file.
  if (::stat(path.c_str(), &st) == 0 && st.st_dev == read_device && st.st_ino == read_inode) {
    if (ListsDamage(DamagedRecordsPathOf(path), offset, size)) return false;
    {
      internal::MutexLock held(&mu_);
      if (!repaired_.insert(shard).second) return false;
    }
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      throw Error(ErrnoMessage("cannot remove the damaged cached shard", path));
    }
    Unlinked();
  }
  // Replaced by another thread or process since it was read, or evicted:
  // what is there (or comes now) is read again.
  if (::access(path.c_str(), F_OK) != 0) Download(shard);
  return true;
}

void ShardCache::Download(size_t shard) const {
  const std::string& url = tar_urls_[shard];
  const std::string& path = paths_[shard];
  const std::string part = path + ".part";
  const std::string damage_list = DamagedRecordsPathOf(path);
  // What an earlier download found damaged is learnt again from this one.
  if (::unlink(damage_list.c_str()) != 0 && errno != ENOENT) {
    throw Error(ErrnoMessage("cannot remove", damage_list));
  }
  const ShardIndex index = IndexOf(shard);
  MakeRoom(index.tar_size, shard);

  const std::unique_ptr<ByteSource> origin = open_(url);
  const PartedDownload download{index.tar_size, part, part_bytes_, parts_at_once_};
  for (int pass = 0;; ++pass) {
    // Written as it arrives: a process killed midway leaves what it had
    // received for the next download to continue from.
    DownloadInParts(*origin, download);
    const LocalFile file = LocalFile::OpenForWriting(part);
    const std::vector<ShardRecord> damaged = DamagedRecords(file, index);
    if (!damaged.empty() && pass == 0) {
      // A resumed download's earlier bytes, or the transfer, may be at
      // fault: the whole shard once more, from the start.
      RestartDownload(part);
      continue;
    }
    // Damaged twice running: on the server. The shard's other records are
    // good; the list goes first, so that a tar in place with damage always
    // has it beside it.
    if (!damaged.empty()) {
      const std::string text = DamagedRecordsText(damaged);
      WriteFileAtomically(damage_list, std::span<const uint8_t>(
                                           reinterpret_cast<const uint8_t*>(text.data()),
                                           text.size()));
    }
    file.Sync();
    break;
  }
  // Whole and checked: its progress goes before it is put in place.
  FinishDownload(part);
  PutInPlace(shard, index.tar_size);
  {
    internal::MutexLock lock(&mu_);
    ++downloads_;
  }
}

void ShardCache::MakeRoom(uint64_t bytes, size_t keep) const {
  if (limit_ == 0) return;
  bool unlinked = false;
  {
    const CacheWideLock lock(root_);
    unlinked = EvictFor(bytes, keep);
  }
  if (unlinked) Unlinked();
}

void ShardCache::PutInPlace(size_t shard, uint64_t bytes) const {
  const std::string& path = paths_[shard];
  const std::string part = path + ".part";
  bool unlinked = false;
  bool renamed = false;
  if (limit_ == 0) {
    renamed = ::rename(part.c_str(), path.c_str()) == 0;
  } else {
    // Room made and the file renamed under one lock: downloads under way at
    // once each made room for themselves when they started, so the ones that
    // ended since may have filled what this one counted on.
    const CacheWideLock lock(root_);
    unlinked = EvictFor(bytes, shard);
    renamed = ::rename(part.c_str(), path.c_str()) == 0;
  }
  const std::string failure = renamed ? "" : ErrnoMessage("cannot rename into place", part);
  if (unlinked) Unlinked();
  if (!renamed) throw Error(failure);
}

bool ShardCache::EvictFor(uint64_t bytes, size_t keep) const {
  struct Kept {
    fs::path path;
    uint64_t size;
    fs::file_time_type used;
  };
  std::vector<Kept> kept;
  uint64_t total = 0;
  std::error_code ec;
  for (const fs::directory_entry& folder : fs::directory_iterator(root_, ec)) {
    if (!folder.is_directory(ec)) continue;
    for (const fs::directory_entry& entry : fs::directory_iterator(folder.path(), ec)) {
      if (!IsCachedUnit(entry.path()) || !entry.is_regular_file(ec)) continue;
      const uint64_t size = entry.file_size(ec);
      if (ec) continue;
      total += size;
      if (entry.path() != fs::path(paths_[keep])) {
        kept.push_back({entry.path(), size, entry.last_write_time(ec)});
      }
    }
  }
  std::sort(kept.begin(), kept.end(),
            [](const Kept& a, const Kept& b) { return a.used < b.used; });
  bool unlinked = false;
  for (const Kept& old : kept) {
    if (total + bytes <= limit_) break;
    if (fs::remove(old.path, ec)) {
      total -= old.size;
      unlinked = true;
    }
  }
  return unlinked;
}

ShardIndex ShardCache::IndexOf(size_t shard) const {
  const std::string& url = tar_urls_[shard];
  std::string missing;
  if (index_urls_[shard].empty()) {
    // A whole file of another format: nothing to check but its length.
    const std::optional<uint64_t> size = open_(url)->Size(&missing);
    if (!size) throw Error(url + ": cannot download: " + missing);
    ShardIndex whole;
    whole.tar_size = *size;
    return whole;
  }
  std::optional<std::vector<uint8_t>> index_bytes =
      open_(index_urls_[shard])->ReadAll(kMaxIndexBytes, &missing);
  if (index_bytes) return ParseShardIndex(*index_bytes, index_urls_[shard]);
  // A shard the server has no index of: the one saved when it was indexed.
  if (std::optional<ShardIndex> saved = SavedIndex(shard)) return *saved;
  throw Error(index_urls_[shard] + ": cannot read shard index: " + missing);
}

std::optional<ShardIndex> ShardCache::SavedIndex(size_t shard) const {
  const std::string saved = SavedIndexPathOf(paths_[shard]);
  struct stat st;
  if (::stat(saved.c_str(), &st) != 0) return std::nullopt;
  return ReadShardIndex(saved);
}

ShardIndex ShardCache::IndexByDownload(size_t shard, const std::string& index_location) const {
  if (std::optional<ShardIndex> saved = SavedIndex(shard)) return *saved;
  const std::string& url = tar_urls_[shard];
  const std::string& path = paths_[shard];
  const std::string saved_path = SavedIndexPathOf(path);
  const bool downloading = BeginDownload(shard);
  const DownloadScope scope{[this, shard, downloading] {
    if (downloading) EndDownload(shard);
  }};
  const FileLock lock(path + ".lock");
  // Another process may have indexed it while this one waited.
  if (std::optional<ShardIndex> saved = SavedIndex(shard)) return *saved;
  ShardIndex index;
  if (::access(path.c_str(), F_OK) == 0) {
    index = IndexTarFile(path);
  } else {
    const std::unique_ptr<ByteSource> origin = open_(url);
    std::string missing;
    const std::optional<uint64_t> size = origin->Size(&missing);
    if (!size) {
      throw Error(index_location + ": cannot open shard index, nor is " + url +
                  " there to index: " + missing);
    }
    MakeRoom(*size, shard);
    const std::string part = path + ".part";
    const LocalFile file = LocalFile::OpenForWriting(part, /*truncate=*/true);
    TarIndexer indexer(url);
    uint64_t have = 0;
    if (*size > 0) {
      origin->Stream(0, *size, [&](const uint8_t* data, size_t n) {
        file.WriteAt(data, n, have);
        have += n;
        indexer.Feed(data, n);
      });
    }
    index = indexer.Finish();
    file.Sync();
    // The index first: a tar in place always has its index beside it. Its
    // records match the bytes (it was made from them): no damage listed.
    WriteFileAtomically(saved_path, SerializeShardIndex(index));
    const std::string damage_list = DamagedRecordsPathOf(path);
    if (::unlink(damage_list.c_str()) != 0 && errno != ENOENT) {
      throw Error(ErrnoMessage("cannot remove", damage_list));
    }
    PutInPlace(shard, *size);
    internal::MutexLock lock(&mu_);
    ++downloads_;
    return index;
  }
  WriteFileAtomically(saved_path, SerializeShardIndex(index));
  return index;
}

}  // namespace feedline::storage
