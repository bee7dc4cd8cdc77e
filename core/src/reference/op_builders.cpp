// op_builders.hpp: each op's operands and parameters in their plugin_api.h slots.
#include "strata/op_builders.hpp"

#include "strata/op_tensor.hpp"

namespace strata::ops {
namespace {

// An op of two operands (src0, src1) and its destination.
strata_op binary(uint32_t kind, const strata_tensor& a, const strata_tensor& b, const strata_tensor& dst) {
  strata_op op = new_op(kind);
  op.src[0] = a;
  op.src[1] = b;
  op.dst = dst;
  return op;
}

}  // namespace

strata_op mul_mat(const strata_tensor& w, const strata_tensor& x, const strata_tensor& dst) {
  return binary(STRATA_OP_MUL_MAT, w, x, dst);
}

strata_op add(const strata_tensor& a, const strata_tensor& b, const strata_tensor& dst) {
  return binary(STRATA_OP_ADD, a, b, dst);
}

strata_op rms_norm(const strata_tensor& x, const strata_tensor& w, float eps, const strata_tensor& dst) {
  strata_op op = new_op(STRATA_OP_RMS_NORM);
  op.src[0] = x;
  op.src[1] = w;
  op.f[0] = eps;
  op.dst = dst;
  return op;
}

strata_op layer_norm(const strata_tensor& x, const strata_tensor& w, const strata_tensor& b, float eps,
                     const strata_tensor& dst) {
  strata_op op = new_op(STRATA_OP_LAYER_NORM);
  op.src[0] = x;
  op.src[1] = w;
  op.src[2] = b;
  op.f[0] = eps;
  op.dst = dst;
  return op;
}

strata_op gelu(const strata_tensor& x, bool table, const strata_tensor& dst) {
  strata_op op = new_op(STRATA_OP_GELU);
  op.src[0] = x;
  op.i[0] = table ? 1 : 0;
  op.dst = dst;
  return op;
}

strata_op copy(const strata_tensor& src, const strata_tensor& dst) {
  strata_op op = new_op(STRATA_OP_COPY);
  op.src[0] = src;
  op.dst = dst;
  return op;
}

}  // namespace strata::ops
