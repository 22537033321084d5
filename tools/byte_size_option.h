// Command-line options that take a size in bytes: every one reads the same
// spellings by the same rule (feedline/byte_size.h), "256M", "2GiB", "1.5GB"
// or a plain integer, and its help text says the rule.
//
// Thread safety: configures a CLI::App; call before parsing, from one thread.
#ifndef FEEDLINE_TOOLS_BYTE_SIZE_OPTION_H_
#define FEEDLINE_TOOLS_BYTE_SIZE_OPTION_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace feedline::cli {

// A CLI11 transform: replaces a size by its number of bytes, or fails with a
// message saying why it is no size or that it lies outside [min, max] (CLI11
// puts the option's name in front).
CLI::Validator ByteSizeValue(int64_t min, int64_t max);

// Adds option `name` bound to `bytes` (its value beforehand is the default,
// shown in binary units), from `min` to `max` bytes; the rule follows
// `description` in the help.
CLI::Option* AddByteSizeOption(CLI::App* app, const std::string& name, int64_t& bytes,
                               const std::string& description, int64_t min, int64_t max);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_BYTE_SIZE_OPTION_H_
