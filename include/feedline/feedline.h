// The whole public API of feedline in one include.
#ifndef FEEDLINE_FEEDLINE_H_
#define FEEDLINE_FEEDLINE_H_

#include "feedline/batch.h"
#include "feedline/batch_sampler.h"
#include "feedline/byte_size.h"
#include "feedline/collate.h"
#include "feedline/concat.h"
#include "feedline/data_loader.h"
#include "feedline/dataset.h"
#include "feedline/error.h"
#include "feedline/grouped_batch_sampler.h"
#include "feedline/hard_example_sampler.h"
#include "feedline/iterable_dataset.h"
#include "feedline/launcher.h"
#include "feedline/loader_options.h"
#include "feedline/loop_report.h"
#include "feedline/rng.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "feedline/sampler.h"
#include "feedline/stats.h"
#include "feedline/subset.h"
#include "feedline/tensor.h"
#include "feedline/tuning.h"

#endif  // FEEDLINE_FEEDLINE_H_
