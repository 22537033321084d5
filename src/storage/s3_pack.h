// A pack whose OUT is an S3 prefix (feedline/storage/pack.h): written to a
// local staging folder by the local pack, whose hooks (pack_hooks.h) upload
// each finished shard (s3_upload.h) while the next one is written, take the
// bucket's pack.txt and indexes as the truth on resume, and upload
// classes.txt and the finished pack.txt last.
//
// Thread safety: as PackImages (one pack per staging folder; its lock).
#ifndef FEEDLINE_SRC_STORAGE_S3_PACK_H_
#define FEEDLINE_SRC_STORAGE_S3_PACK_H_

#include <string>
#include <vector>

#include "feedline/storage/pack.h"

namespace feedline::storage {

// True for "s3://...".
bool IsS3Location(const std::string& location);

// The staging folder of a pack into `url`: options.staging_dir, else
// TMPDIR/feedline-pack-NAME-HASH, NAME the bucket and prefix with every
// character but letters, digits, '.', '-' and '_' as '_', HASH of the URL
// (trailing '/' or not, the same).
std::string S3StagingDir(const std::string& url, const PackOptions& options);

// PackImages into s3://BUCKET/PREFIX/ (`url`, '/' added if missing). Throws
// Error naming the URL for a bucket-less URL, a request that fails (its
// status, the attempts), or a prefix holding another pack.
PackResult PackImagesToS3(const std::string& source, const std::string& root,
                          const vision::ImageList& files,
                          const std::vector<std::string>& classes, const std::string& url,
                          const PackOptions& options);

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_S3_PACK_H_
