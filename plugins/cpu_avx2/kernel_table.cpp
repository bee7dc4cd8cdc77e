#include "kernels.hpp"

namespace strata::cpu {
namespace {

struct Tables {
  KernelTable avx2, avx512;
  Tables() {
    add_legacy_kernels(avx2, avx512);
    add_kquant_kernels(avx2, avx512);
    add_iquant_kernels(avx2, avx512);
    add_ternary_kernels(avx2, avx512);
    add_float_kernels(avx2, avx512);
  }
};

}  // namespace

const KernelTable& kernel_table(IsaPath path) {
  static const Tables tables;
  return path == IsaPath::Avx512 ? tables.avx512 : tables.avx2;
}

}  // namespace strata::cpu
