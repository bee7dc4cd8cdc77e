#include "projector_launch.hpp"

#include "strata/error.hpp"

namespace strata::cli {

std::unique_ptr<vision::Projector> load_projector(const std::optional<std::string>& path, const Model& model) {
  if (!path) return nullptr;
  auto projector = std::make_unique<vision::Projector>(vision::Projector::load(*path));
  if (projector->row_width() != model.input_width()) {
    throw Error(*path + " gives rows of " + std::to_string(projector->row_width()) + " floats; " + model.file().name() +
                " takes " + std::to_string(model.input_width()) + " (is it this model's projector?)");
  }
  return projector;
}

}  // namespace strata::cli
