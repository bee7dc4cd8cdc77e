#include "kernels.hpp"

namespace strata::cpu {
namespace {

struct Tables {
  KernelTable avx2, avx512, avx512_gather_free;
  Tables() {
    add_legacy_kernels(avx2, avx512);
    add_kquant_kernels(avx2, avx512);
    add_iquant_kernels(avx2, avx512);
    add_ternary_kernels(avx2, avx512);
    add_float_kernels(avx2, avx512);
    avx512_gather_free = avx512;
    add_gather_free_kernels(avx512_gather_free);
  }
};

}  // namespace

const KernelTable& kernel_table(IsaPath path, bool gathers) {
  static const Tables tables;
  if (path != IsaPath::Avx512) return tables.avx2;
  return gathers ? tables.avx512 : tables.avx512_gather_free;
}

}  // namespace strata::cpu
