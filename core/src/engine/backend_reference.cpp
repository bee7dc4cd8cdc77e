// The reference behind the Backend interface.
#include "strata/backend.hpp"
#include "strata/reference_backend.hpp"

namespace strata {
namespace {

class ReferenceBackend final : public Backend {
 public:
  const std::string& name() const override { return name_; }
  std::string describe() const override { return "reference (scalar, single-threaded)"; }
  void compute(std::span<const strata_op> ops) override { run_reference(ops.data(), ops.size()); }

 private:
  std::string name_ = "reference";
};

}  // namespace

std::unique_ptr<Backend> make_reference_backend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace strata
