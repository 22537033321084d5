#include "src/storage/tar_indexer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "feedline/error.h"
#include "feedline/storage/crc32c.h"
#include "src/storage/tar_header.h"

namespace feedline::storage {
namespace {

// The longest .cls text taken (an int64 and some white space).
constexpr size_t kMaxLabelBytes = 32;

uint64_t Padding(uint64_t size) { return (kTarBlock - size % kTarBlock) % kTarBlock; }

// The image format of an extension, if it is one ShardDataset reads.
bool ImageFormatOf(const std::string& extension, vision::ImageFormat* format) {
  for (vision::ImageFormat f :
       {vision::ImageFormat::kJpeg, vision::ImageFormat::kPng, vision::ImageFormat::kWebp}) {
    if (extension == ShardExtension(f) + 1) {
      *format = f;
      return true;
    }
  }
  return false;
}

}  // namespace

void TarIndexer::Fail(const std::string& what) const { throw Error(name_ + ": " + what); }

void TarIndexer::Feed(const uint8_t* data, size_t size) {
  while (size > 0) {
    if (part_ == Part::kEnd) {
      at_ += size;  // what follows the end of the archive is not read
      return;
    }
    if (part_ == Part::kHeader) {
      const size_t take = std::min(size, kTarBlock - header_fill_);
      std::memcpy(header_ + header_fill_, data, take);
      header_fill_ += take;
      data += take;
      size -= take;
      at_ += take;
      if (header_fill_ == kTarBlock) {
        header_fill_ = 0;
        OnHeader();
      }
      continue;
    }
    const size_t take = static_cast<size_t>(std::min<uint64_t>(size, left_));
    if (part_ == Part::kImage) {
      record_.crc32c = Crc32c(data, take, record_.crc32c);
    } else if (part_ == Part::kLabel) {
      label_text_.append(reinterpret_cast<const char*>(data), take);
      if (label_text_.size() > kMaxLabelBytes) {
        Fail("member " + member_ + ": a label (.cls) of more than 32 bytes is not a class number");
      }
    }
    data += take;
    size -= take;
    at_ += take;
    left_ -= take;
    if (left_ == 0) EndMember();
  }
}

void TarIndexer::OnHeader() {
  const uint64_t header_at = at_ - kTarBlock;
  if (IsZeroTarBlock(header_)) {
    EndSample();
    part_ = Part::kEnd;
    return;
  }
  TarMemberHeader header;
  const std::string problem = ParseTarHeader(header_, &header);
  if (!problem.empty()) Fail("at byte " + std::to_string(header_at) + ": " + problem);
  member_ = header.name;
  if (header.type != '0' && header.type != 0) {
    Fail("member " + member_ + " is not a sample's file (tar type '" +
         std::string(1, header.type) +
         "'): a shard holds regular files KEY.jpg/.png/.webp and KEY.cls only, with no folders, "
         "links or long-name headers");
  }
  const size_t dot = member_.find('.');
  const std::string key = member_.substr(0, dot);
  if (dot == std::string::npos || !IsValidShardKey(key)) {
    Fail("member " + member_ +
         " is not a sample's file: expected KEY.EXT with KEY of 1 to 64 characters "
         "[A-Za-z0-9_-] (no folders)");
  }
  const std::string extension = member_.substr(dot + 1);
  if (key != key_) {
    EndSample();
    if (keys_done_.count(key) != 0) {
      Fail("member " + member_ + ": key " + key +
           " comes back after another sample (a sample's files must be adjacent)");
    }
    key_ = key;
  }
  vision::ImageFormat format;
  if (ImageFormatOf(extension, &format)) {
    if (has_image_) Fail("member " + member_ + ": sample " + key + " has a second image");
    has_image_ = true;
    record_.key = key;
    record_.format = format;
    record_.offset = at_;
    record_.size = header.size;
    record_.crc32c = 0;
    part_ = Part::kImage;
  } else if (extension == "cls") {
    if (has_label_) Fail("member " + member_ + ": sample " + key + " has a second label");
    has_label_ = true;
    label_text_.clear();
    part_ = Part::kLabel;
  } else {
    part_ = Part::kSkipped;
  }
  left_ = header.size;
  padding_ = Padding(header.size);
  if (left_ == 0) EndMember();
}

void TarIndexer::EndMember() {
  if (part_ == Part::kPadding) {
    part_ = Part::kHeader;
    return;
  }
  if (part_ == Part::kLabel) {
    std::string text = label_text_;
    while (!text.empty() && std::strchr(" \t\r\n", text.back()) != nullptr) text.pop_back();
    size_t used = 0;
    long long label = -1;
    try {
      label = std::stoll(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (text.empty() || used != text.size() || label < 0) {
      Fail("member " + member_ + ": label '" + text + "' is not a class number (0, 1, ...)");
    }
    record_.label = label;
  }
  if (padding_ > 0) {
    part_ = Part::kPadding;
    left_ = padding_;
    padding_ = 0;
  } else {
    part_ = Part::kHeader;
  }
}

void TarIndexer::EndSample() {
  if (key_.empty()) return;
  if (!has_image_) {
    Fail("sample " + key_ + " has no image (KEY.jpg, KEY.png or KEY.webp)");
  }
  if (!has_label_) Fail("sample " + key_ + " has no label (KEY.cls)");
  index_.records.push_back(record_);
  keys_done_.insert(key_);
  key_.clear();
  has_image_ = has_label_ = false;
  record_ = ShardRecord{};
}

ShardIndex TarIndexer::Finish() {
  if (part_ != Part::kEnd) {
    if (part_ != Part::kHeader || header_fill_ != 0) {
      Fail("ends inside member " + (member_.empty() ? std::string("header") : member_) +
           " (truncated at byte " + std::to_string(at_) + ")");
    }
    EndSample();  // a tar without its end blocks: taken up to its last member
  }
  if (index_.records.empty()) Fail("holds no sample (KEY.jpg/.png/.webp with KEY.cls)");
  index_.tar_size = at_;
  // Checked as a written index is (offsets in order, inside the tar).
  return ParseShardIndex(SerializeShardIndex(index_), name_);
}

ShardIndex IndexTarFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    throw OsError(error, path, path + ": cannot open shard: " + std::strerror(error));
  }
  TarIndexer indexer(path);
  std::vector<uint8_t> buffer(size_t{4} << 20);
  try {
    while (true) {
      const ssize_t n = ::read(fd, buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int error = errno;
        throw OsError(error, path, path + ": cannot read: " + std::strerror(error));
      }
      if (n == 0) break;
      indexer.Feed(buffer.data(), static_cast<size_t>(n));
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return indexer.Finish();
}

}  // namespace feedline::storage
