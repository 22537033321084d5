// LoaderSpec is part of the extension surface
// (include/feedline/extension/loader_spec.h, where it is declared and
// documented); the loader factory names it from namespace internal.
#ifndef FEEDLINE_SRC_LOADER_FACTORY_LOADER_SPEC_H_
#define FEEDLINE_SRC_LOADER_FACTORY_LOADER_SPEC_H_

#include "feedline/extension/loader_spec.h"

namespace feedline::internal {

using extension::LoaderSpec;

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_FACTORY_LOADER_SPEC_H_
