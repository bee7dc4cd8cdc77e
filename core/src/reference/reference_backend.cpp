#include "strata/reference_backend.hpp"

#include <string>

#include "ops.hpp"
#include "strata/error.hpp"

namespace strata {
namespace {

struct OpEntry {
  uint32_t kind;
  const char* name;
  void (*run)(const strata_op&);
};

constexpr OpEntry kOps[] = {
    {STRATA_OP_GET_ROWS, "GET_ROWS", reference::get_rows},
    {STRATA_OP_RMS_NORM, "RMS_NORM", reference::rms_norm},
    {STRATA_OP_MUL_MAT, "MUL_MAT", reference::mul_mat},
    {STRATA_OP_ADD, "ADD", reference::add},
    {STRATA_OP_MUL, "MUL", reference::mul},
    {STRATA_OP_SWIGLU, "SWIGLU", reference::swiglu},
    {STRATA_OP_ROPE, "ROPE", reference::rope},
    {STRATA_OP_KV_STORE, "KV_STORE", reference::kv_store},
    {STRATA_OP_ATTENTION, "ATTENTION", reference::attention},
    {STRATA_OP_ROUTER, "ROUTER", reference::router},
    {STRATA_OP_MOE, "MOE", reference::moe},
    {STRATA_OP_SOFTMAX, "SOFTMAX", reference::softmax},
    {STRATA_OP_MOE_ROUTED, "MOE_ROUTED", reference::moe_routed},
    {STRATA_OP_TIMESTAMP, "TIMESTAMP", reference::timestamp},
    {STRATA_OP_COPY, "COPY", reference::copy},
    {STRATA_OP_SIGNAL, "SIGNAL", reference::signal},
    {STRATA_OP_WAIT, "WAIT", reference::wait},
    {STRATA_OP_LAYER_NORM, "LAYER_NORM", reference::layer_norm},
    {STRATA_OP_GELU, "GELU", reference::gelu},
};

const OpEntry* find_op(uint32_t kind) {
  for (const OpEntry& e : kOps) {
    if (e.kind == kind) return &e;
  }
  return nullptr;
}

}  // namespace

const char* op_kind_name(uint32_t kind) {
  const OpEntry* e = find_op(kind);
  return e ? e->name : "unknown op";
}

void run_reference(const strata_op& op) {
  const OpEntry* e = find_op(op.kind);
  if (e == nullptr) {
    throw Error("reference backend: op kind " + std::to_string(op.kind) +
                " is not one of plugin_api.h's strata_op_kind values");
  }
  e->run(op);
}

void run_reference(const strata_op* ops, size_t n_ops) {
  for (size_t i = 0; i < n_ops; ++i) run_reference(ops[i]);
}

}  // namespace strata
