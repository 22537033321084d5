// Annotation indexes: a parsed COCO annotation file kept in its index form
// (CocoAnnotations::ToIndex) in a folder, so that the next start of a job
// loads the flat arrays instead of parsing the JSON again (about 1 s per
// 100 MB of JSON here; an index of it loads in a tenth of that).
//
// An index belongs to the file whose absolute path, size, inode and
// modification and change times it records; for any other, or when it is
// damaged (its arrays' checksum, then FromIndex's checks), the file is
// parsed again and its index rewritten. It is written to a temporary file and
// renamed into place, so that ranks starting together on a node never read
// half an index (each may parse once; the last rename wins, all equal). A
// folder that cannot be made or written only costs the parse: no error.
//
// Thread safety: ReadCocoAnnotations may run in many threads and processes
// at once, over the same folder too.
//
// Example:
//   CocoAnnotations coco = ReadCocoAnnotations("annotations/instances_train2017.json",
//                                               DefaultAnnotationIndexDir());
#ifndef FEEDLINE_VISION_ANNOTATION_INDEX_H_
#define FEEDLINE_VISION_ANNOTATION_INDEX_H_

#include <string>

#include "feedline/export.h"
#include "feedline/vision/coco.h"

namespace feedline::vision {

// $XDG_CACHE_HOME/feedline/annotation-index, else
// $HOME/.cache/feedline/annotation-index; "" when neither is set.
FEEDLINE_EXPORT std::string DefaultAnnotationIndexDir();

// CocoAnnotations::Read(path) through an index kept in `index_dir` ("" keeps
// none: the file is parsed). Throws what CocoAnnotations::Read throws.
FEEDLINE_EXPORT CocoAnnotations ReadCocoAnnotations(const std::string& path,
                                                    const std::string& index_dir);

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_ANNOTATION_INDEX_H_
