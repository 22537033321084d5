// What `feedline pack SOURCE OUT` (and Python's pack_shards) packs: detection
// data (a COCO instances file, a VOC image set or a YOLO images folder, as
// detection_source.h finds them) with each image's annotations in its
// record, or else an image folder or file list (storage::PackSource).
//
// Thread safety: as storage::PackImages (one pack per output folder).
#ifndef FEEDLINE_TOOLS_PACK_SOURCE_H_
#define FEEDLINE_TOOLS_PACK_SOURCE_H_

#include <string>

#include "feedline/storage/pack.h"

namespace feedline::cli {

// Packs `source` into `out` (a folder or s3://BUCKET/PREFIX/). Detection
// data: every image its dataset lists (CocoDetection's, VocDetection's,
// YoloDetection's, in their order; a record's key is the image's index
// there), each with its DetectionRecord. Throws what storage::PackImages
// throws, and Error naming the file for annotations that do not parse.
storage::PackResult PackAnySource(const std::string& source, const std::string& out,
                                  storage::PackOptions options);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_PACK_SOURCE_H_
