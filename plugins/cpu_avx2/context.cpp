#include "context.hpp"

namespace strata::cpu {

Context::Context(const strata_host_api* host, const Options& options)
    : host_(host),
      options_(options),
      path_(choose_path(detect_isa(), options.force_avx2)),
      gathers_(options.gathers < 0 ? gathers_fast() : options.gathers == 1),
      kernels_(&kernel_table(path_, gathers_)),
      pool_(options.workers, options.host_worker, options.spin_us, options.pin),
      device_name_(cpu_model_name()) {
#ifdef STRATA_NONCANONICAL
  device_name_ += " [non-canonical build]";
#endif
}

}  // namespace strata::cpu
