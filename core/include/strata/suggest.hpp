// "Did you mean ...?": the nearest candidate to a misspelt word, for messages about unknown keys and flags.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

// Edit distance (insertions, deletions, substitutions, adjacent swaps), case-sensitive.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `word`, if it is close enough to be a plausible typo (distance at most a third of
// the word's length, at least 1, or a candidate that starts with the word).
std::optional<std::string> nearest(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "" when nothing is near: for appending to a message.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace strata
