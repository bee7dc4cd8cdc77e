// Internal to the reference: one function per op kind (a file each); reference_backend.cpp dispatches.
#pragma once

#include "strata/plugin_api.h"

namespace strata::reference {

void get_rows(const strata_op& op);
void rms_norm(const strata_op& op);
void mul_mat(const strata_op& op);
void add(const strata_op& op);
void mul(const strata_op& op);
void swiglu(const strata_op& op);
void rope(const strata_op& op);
void kv_store(const strata_op& op);
void attention(const strata_op& op);
void router(const strata_op& op);
void moe(const strata_op& op);
void softmax(const strata_op& op);
void moe_routed(const strata_op& op);
void timestamp(const strata_op& op);
void copy(const strata_op& op);
void signal(const strata_op& op);
void wait(const strata_op& op);
void layer_norm(const strata_op& op);
void gelu(const strata_op& op);

}  // namespace strata::reference
