// NextStatus: what DataLoader::TryNext found. A header of its own because the
// engine under the DataLoader (src/loader) returns it too, and the DataLoader
// itself sits in a layer above the engine (docs/architecture.md, "Layers").
#ifndef FEEDLINE_NEXT_STATUS_H_
#define FEEDLINE_NEXT_STATUS_H_

namespace feedline {

// kBatch: a batch was delivered; kEnd: the epoch ended; kPending: nothing
// yet, call again.
enum class NextStatus { kBatch, kEnd, kPending };

}  // namespace feedline

#endif  // FEEDLINE_NEXT_STATUS_H_
