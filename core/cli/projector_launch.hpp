// The vision projector a launch names (`mmproj:` or a command's --mmproj), loaded and checked against the model.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "strata/model.hpp"
#include "strata/vision.hpp"

namespace strata::cli {

// Null without a path. Throws strata::Error when the file does not load or gives rows of another width than the
// model's input (another model's projector).
std::unique_ptr<vision::Projector> load_projector(const std::optional<std::string>& path, const Model& model);

}  // namespace strata::cli
