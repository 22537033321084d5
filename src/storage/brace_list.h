// Brace lists, as WebDataset writes shard names: "shard-{000000..000099}.tar"
// (a numeric range, zero-padded to the width of its first bound) and
// "{train,val}/x" (a list of words), any number of groups, expanded left to
// right ("a{1..2}b{x,y}" -> a1bx a1by a2bx a2by).
//
// Thread safety: a pure function.
#ifndef FEEDLINE_SRC_STORAGE_BRACE_LIST_H_
#define FEEDLINE_SRC_STORAGE_BRACE_LIST_H_

#include <string>
#include <vector>

namespace feedline::storage {

// True if `pattern` holds a '{' ... '}' group.
bool HasBraceList(const std::string& pattern);

// Every name `pattern` stands for, in order. Throws Error naming the pattern
// for an unclosed or empty group, a range whose end is below its start, or
// more than `max_names` names.
std::vector<std::string> ExpandBraceList(const std::string& pattern, size_t max_names = 1000000);

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_BRACE_LIST_H_
