#include "strata/op_tensor.hpp"

#include <cstring>

#include "strata/error.hpp"

namespace strata {

strata_tensor make_tensor(const void* data, format::GgmlType type, std::initializer_list<int64_t> ne) {
  if (ne.size() < 1 || ne.size() > 4) throw Error("make_tensor: a tensor has 1 to 4 dimensions");
  strata_tensor t{};
  t.data = const_cast<void*>(data);  // the ABI's tensors are mutable; sources are only read
  t.type = static_cast<uint32_t>(type);
  t.n_dims = static_cast<uint32_t>(ne.size());
  int i = 0;
  for (int64_t n : ne) t.ne[i++] = n;
  for (; i < 4; ++i) t.ne[i] = 1;
  const format::TypeTraits& tr = format::traits(type);
  if (t.ne[0] % tr.block_elems != 0) {
    throw Error("make_tensor: rows of " + std::to_string(t.ne[0]) + " values are not whole " + std::string(tr.name) +
                " blocks");
  }
  t.nb[0] = tr.block_bytes;
  t.nb[1] = format::row_bytes(type, static_cast<uint64_t>(t.ne[0]));
  t.nb[2] = t.nb[1] * static_cast<uint64_t>(t.ne[1]);
  t.nb[3] = t.nb[2] * static_cast<uint64_t>(t.ne[2]);
  return t;
}

strata_tensor tensor_of(const gguf::TensorView& view) {
  strata_tensor t{};
  t.data = const_cast<uint8_t*>(view.data);  // weights are read-only mapped bytes; ops never write sources
  t.type = static_cast<uint32_t>(view.type);
  t.n_dims = view.n_dims;
  for (int i = 0; i < 4; ++i) t.ne[i] = static_cast<int64_t>(view.ne[static_cast<size_t>(i)]);
  t.nb[0] = format::traits(view.type).block_bytes;
  t.nb[1] = format::row_bytes(view.type, view.ne[0]);
  t.nb[2] = t.nb[1] * view.ne[1];
  t.nb[3] = t.nb[2] * view.ne[2];
  return t;
}

strata_tensor no_tensor() {
  strata_tensor t{};
  t.type = static_cast<uint32_t>(format::GgmlType::F32);
  t.n_dims = 1;
  for (int i = 0; i < 4; ++i) t.ne[i] = 1;
  return t;
}

strata_op new_op(uint32_t kind) {
  strata_op op{};
  op.struct_size = sizeof(strata_op);
  op.kind = kind;
  op.dst = no_tensor();
  for (strata_tensor& s : op.src) s = no_tensor();
  return op;
}

format::GgmlType tensor_type(const strata_tensor& t) {
  const auto tr = format::type_traits(t.type);
  if (!tr) throw Error("tensor type id " + std::to_string(t.type) + " is not a ggml type");
  return tr->type;
}

int64_t tensor_elements(const strata_tensor& t) { return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]; }

unsigned char* tensor_row(const strata_tensor& t, int64_t i1, int64_t i2, int64_t i3) {
  return static_cast<unsigned char*>(t.data) + static_cast<uint64_t>(i1) * t.nb[1] +
         static_cast<uint64_t>(i2) * t.nb[2] + static_cast<uint64_t>(i3) * t.nb[3];
}

std::string describe_tensor(const strata_tensor& t) {
  const auto tr = format::type_traits(t.type);
  std::string s = tr ? std::string(tr->name) : "type " + std::to_string(t.type);
  s += " [";
  for (uint32_t i = 0; i < (t.n_dims == 0 ? 1u : t.n_dims) && i < 4; ++i) {
    s += (i ? ", " : "") + std::to_string(t.ne[i]);
  }
  return s + "]";
}

}  // namespace strata
