// The op cases of the parity suite: one struct per op, each with the shapes and types it varies (odd sizes that
// leave partial vectors and partial groups, token counts around the kernels' 8-token chunks), seeded random
// inputs, and how its outputs are compared with the reference backend.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <sstream>

#include "backend_ops_harness.hpp"
#include "float_nmse.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/types.hpp"
#include "strata/op_tensor.hpp"

namespace strata::test {
namespace {

using format::GgmlType;

std::string tname(GgmlType t) { return std::string(format::traits(t).name); }

std::vector<float> normal_floats(std::mt19937& rng, size_t n, float sigma = 1.0f) {
  std::normal_distribution<float> nd(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

// Replaces a few values by NaN, +Inf and -Inf (never two specials at one index).
void add_specials(std::vector<float>& v, std::mt19937& rng) {
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity()};
  for (float s : specials) v[rng() % v.size()] = s;
}

void put_f16(unsigned char* p, float v) {
  const uint16_t h = format::fp32_to_fp16(v);
  std::memcpy(p, &h, 2);
}

// Gives a random block sane scales: f16 fields in [5e-4, 1e-2) (random bits would make NaN and Inf scales),
// MXFP4's exponent near 2^-8. Everything else stays random, so every bit pattern of the values is exercised.
void sane_scales(GgmlType t, unsigned char* b, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(5e-4f, 1e-2f);
  switch (t) {
    case GgmlType::Q4_0: case GgmlType::Q5_0: case GgmlType::Q8_0: case GgmlType::IQ2_XXS: case GgmlType::IQ2_XS:
    case GgmlType::IQ2_S: case GgmlType::IQ3_XXS: case GgmlType::IQ3_S: case GgmlType::IQ1_S: case GgmlType::IQ4_NL:
    case GgmlType::IQ4_XS:
      put_f16(b, u(rng));
      break;
    case GgmlType::Q4_1: case GgmlType::Q5_1: case GgmlType::Q4_K: case GgmlType::Q5_K:
      put_f16(b, u(rng));
      put_f16(b + 2, u(rng));
      break;
    case GgmlType::Q2_K:
      put_f16(b + 80, u(rng));
      put_f16(b + 82, u(rng));
      break;
    case GgmlType::Q3_K: put_f16(b + 108, u(rng)); break;
    case GgmlType::Q6_K: put_f16(b + 208, u(rng)); break;
    case GgmlType::TQ1_0: put_f16(b + 52, u(rng)); break;
    case GgmlType::TQ2_0: put_f16(b + 64, u(rng)); break;
    case GgmlType::MXFP4: b[0] = static_cast<unsigned char>(115 + rng() % 12); break;
    case GgmlType::IQ1_M: {
      // The f16 scale lives in the top nibbles of the four scale words.
      const uint16_t h = format::fp32_to_fp16(u(rng));
      for (int i = 0; i < 4; ++i) {
        uint16_t w;
        std::memcpy(&w, b + 48 + 2 * i, 2);
        w = static_cast<uint16_t>((w & 0x0fff) | (((h >> (4 * i)) & 0xf) << 12));
        std::memcpy(b + 48 + 2 * i, &w, 2);
      }
      break;
    }
    default: break;
  }
}

// rows x n weights of `type`: normal values for float types, random blocks with sane scales otherwise.
std::vector<unsigned char> random_weights(GgmlType type, int64_t rows, int64_t n, std::mt19937& rng) {
  const uint64_t rb = format::row_bytes(type, static_cast<uint64_t>(n));
  std::vector<unsigned char> w(rb * static_cast<uint64_t>(rows));
  if (type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16) {
    const std::vector<float> f = normal_floats(rng, static_cast<size_t>(rows * n), 0.05f);
    for (size_t i = 0; i < f.size(); ++i) {
      if (type == GgmlType::F32) {
        std::memcpy(&w[4 * i], &f[i], 4);
      } else {
        const uint16_t h = type == GgmlType::F16 ? format::fp32_to_fp16(f[i]) : format::fp32_to_bf16(f[i]);
        std::memcpy(&w[2 * i], &h, 2);
      }
    }
    return w;
  }
  for (auto& c : w) c = static_cast<unsigned char>(rng());
  const format::TypeTraits& tr = format::traits(type);
  for (size_t b = 0; b < w.size() / tr.block_bytes; ++b) sane_scales(type, &w[b * tr.block_bytes], rng);
  return w;
}

Output f32_output(const std::string& name, int64_t count, Compare cmp) {
  Output o;
  o.name = name;
  o.bytes = static_cast<size_t>(count) * sizeof(float);
  o.compare = cmp;
  return o;
}

// An output of an op a GPU computes in float by default (section 6): on a float_label it compares as `on_float`.
Output float_op(Output o, Compare on_float) {
  o.float_op = true;
  o.on_float = on_float;
  return o;
}

// The float ops' bound on a float_label: float arithmetic (a few ulp a value) gives about 1e-14; a wrong formula,
// order of pairs or angle gives far more than 1e-10.
constexpr double kFloatOpNmse = 1e-10;

// Strided float views as deepseek2's graph hands them (backend 1.6): rows of the source and of dst `src` and `dst`
// floats apart (0: dense), every row evenly spaced (planes s * ne1 floats apart).
struct RowStrides {
  int64_t src = 0, dst = 0;
  bool any() const { return src != 0 || dst != 0; }
};

// A float view [ne0, ne1, ne2] whose rows are s floats apart.
strata_tensor strided_f32(const float* data, int64_t ne0, int64_t ne1, int64_t ne2, int64_t s) {
  strata_tensor t = tensor_f32(data, {ne0, ne1, ne2});
  t.nb[1] = static_cast<uint64_t>(s) * sizeof(float);
  t.nb[2] = t.nb[1] * static_cast<uint64_t>(ne1);
  t.nb[3] = t.nb[2] * static_cast<uint64_t>(ne2);
  return t;
}

template <class... Args>
std::string vars_of(const char* op, const Args&... kv) {
  std::ostringstream s;
  s << op << "(";
  const char* sep = "";
  ((s << sep << kv, sep = ","), ...);
  s << ")";
  return s.str();
}

template <class T>
std::string kv(const char* k, const T& v) {
  std::ostringstream s;
  s << k << "=" << v;
  return s.str();
}

// ---- the cases ------------------------------------------------------------------------------------------------

struct MulMatCase : OpCase {
  GgmlType type;
  int64_t n_in, n_out, n_tok;
  RowStrides strides;  // src1's and dst's columns as strided views (0: dense)
  MulMatCase(GgmlType t, int64_t i, int64_t o, int64_t k, RowStrides st = {})
      : type(t), n_in(i), n_out(o), n_tok(k), strides(st) {}
  std::string vars() const override {
    std::string v = vars_of("MUL_MAT", kv("type", tname(type)), kv("n_in", n_in), kv("n_out", n_out), kv("n_tok", n_tok));
    if (strides.any()) v.insert(v.size() - 1, "," + kv("src_stride", strides.src) + "," + kv("dst_stride", strides.dst));
    return v;
  }
  Instance build(std::mt19937& rng) const override {
    Instance inst;
    const int64_t sx = strides.src != 0 ? strides.src : n_in, sd = strides.dst != 0 ? strides.dst : n_out;
    const unsigned char* w = inst.keep(random_weights(type, n_out, n_in, rng));
    const float* x = inst.keep(normal_floats(rng, static_cast<size_t>(sx * n_tok)));
    inst.outputs.push_back(f32_output("dst", sd * n_tok, Compare::Bytes));
    const GgmlType t = type;
    const int64_t ni = n_in, no = n_out, nt = n_tok;
    inst.bind = [=](const std::vector<void*>& out) {
      strata_op op{};
      op.struct_size = sizeof op;
      op.kind = STRATA_OP_MUL_MAT;
      op.src[0] = make_tensor(w, t, {ni, no});
      op.src[1] = tensor_f32(x, {ni, nt});
      op.src[1].nb[1] = static_cast<uint64_t>(sx) * sizeof(float);
      op.dst = tensor_f32(static_cast<float*>(out[0]), {no, nt});
      op.dst.nb[1] = static_cast<uint64_t>(sd) * sizeof(float);
      return op;
    };
    return inst;
  }
};

// MUL_MAT over a stack of B matrices (backend 1.6, deepseek2's per-head K_b and V_b): weights [n_in, n_out, B], src1
// [n_in, B, n_tok], dst [n_out, B, n_tok]. Strided: src1's columns pad_in floats past a row (deepseek2: the nope
// part of each q head, rope values after it) and dst's pad_out past one (the latent part of each absorbed head).
struct StackedMulMatCase : OpCase {
  GgmlType type;
  int64_t n_in, n_out, stack, n_tok, pad_in, pad_out;
  StackedMulMatCase(GgmlType t, int64_t i, int64_t o, int64_t b, int64_t k, int64_t pi = 0, int64_t po = 0)
      : type(t), n_in(i), n_out(o), stack(b), n_tok(k), pad_in(pi), pad_out(po) {}
  std::string vars() const override {
    return vars_of("MUL_MAT", kv("type", tname(type)), kv("n_in", n_in), kv("n_out", n_out), kv("stack", stack),
                   kv("n_tok", n_tok), kv("pad_in", pad_in), kv("pad_out", pad_out));
  }
  Instance build(std::mt19937& rng) const override {
    Instance inst;
    const int64_t sx = n_in + pad_in, sd = n_out + pad_out;
    const unsigned char* w = inst.keep(random_weights(type, stack * n_out, n_in, rng));
    const float* x = inst.keep(normal_floats(rng, static_cast<size_t>(sx * stack * n_tok)));
    inst.outputs.push_back(f32_output("dst", sd * stack * n_tok, Compare::Bytes));
    const GgmlType t = type;
    const int64_t ni = n_in, no = n_out, b = stack, nt = n_tok;
    inst.bind = [=](const std::vector<void*>& out) {
      strata_op op{};
      op.struct_size = sizeof op;
      op.kind = STRATA_OP_MUL_MAT;
      op.src[0] = make_tensor(w, t, {ni, no, b});
      op.src[1] = strided_f32(x, ni, b, nt, sx);
      op.dst = strided_f32(static_cast<float*>(out[0]), no, b, nt, sd);
      return op;
    };
    return inst;
  }
};

// An expert form of a case (backend 1.6, strata_expert_form): none, gpt-oss's SwiGLU-OAI (alpha 1.702, limit 7)
// with gate, up and down biases, the same with a NaN in one gate bias and one up bias (the clamps must keep a NaN
// g or u: a min or max with the operands the other way round turns it into the limit), or plain SwiGLU with the
// three biases only.
enum class Form { None, OaiBiases, OaiNan, Biases };

const char* form_name(Form f) {
  return f == Form::OaiBiases ? "oai_biases" : f == Form::OaiNan ? "oai_biases_nan" : "biases";
}

// The form's biases cover expert ids 0..n_expert-1. Gate and up biases of sigma 6 put many g and u past +-7, so
// SwiGLU-OAI's clamps are hit on both sides (and g's upper one); down biases are of the rows' own scale.
const strata_expert_form* make_form(Form f, Instance& inst, std::mt19937& rng, int64_t n_embd, int64_t n_ff,
                                    uint32_t n_expert) {
  if (f == Form::None) return nullptr;
  strata_expert_form form{};
  form.activation = f == Form::Biases ? STRATA_EXPERT_SWIGLU : STRATA_EXPERT_SWIGLU_OAI;
  form.alpha = 1.702f;
  form.limit = 7.0f;
  std::vector<float> gate = normal_floats(rng, static_cast<size_t>(n_ff) * n_expert, 6.0f);
  std::vector<float> up = normal_floats(rng, static_cast<size_t>(n_ff) * n_expert, 6.0f);
  if (f == Form::OaiNan) {
    // Expert 4's row 3 (g) and expert 5's row 7 (u): ids the MOE cases list.
    gate[static_cast<size_t>(4 * n_ff + 3)] = std::numeric_limits<float>::quiet_NaN();
    up[static_cast<size_t>(5 * n_ff + 7)] = std::numeric_limits<float>::quiet_NaN();
  }
  form.gate_bias = inst.keep(std::move(gate));
  form.up_bias = inst.keep(std::move(up));
  form.down_bias = inst.keep(normal_floats(rng, static_cast<size_t>(n_embd) * n_expert, 0.5f));
  return inst.keep(std::vector<strata_expert_form>{form});
}

struct MoeCase : OpCase {
  GgmlType in_type, down_type;
  int64_t n_embd, n_ff, n_tok, k;
  bool with_rows;
  Form form;
  MoeCase(GgmlType in, GgmlType down, int64_t embd, int64_t ff, int64_t tok, int64_t top_k, bool rows,
          Form f = Form::None)
      : in_type(in), down_type(down), n_embd(embd), n_ff(ff), n_tok(tok), k(top_k), with_rows(rows), form(f) {}
  std::string vars() const override {
    std::string v = vars_of("MOE", kv("gate_up", tname(in_type)), kv("down", tname(down_type)), kv("n_embd", n_embd),
                            kv("n_ff", n_ff), kv("n_tok", n_tok), kv("k", k), kv("rows", with_rows ? "yes" : "no"));
    if (form != Form::None) v.insert(v.size() - 1, "," + kv("form", form_name(form)));
    return v;
  }
  // A NaN bias makes its experts' rows NaN: compared by value (NaN at the same places), no error allowed.
  double max_nmse() const override { return 0.0; }
  Instance build(std::mt19937& rng) const override {
    Instance inst;
    // Six listed experts out of 16 ids (ascending); the last one gets no tokens.
    const std::vector<uint32_t> ids = {1, 4, 5, 9, 12, 15};
    const size_t ne = ids.size();
    std::vector<std::vector<uint32_t>> tokens(ne);
    for (int64_t t = 0; t < n_tok; ++t) {
      std::vector<size_t> pick(ne - 1);
      for (size_t i = 0; i < pick.size(); ++i) pick[i] = i;
      std::shuffle(pick.begin(), pick.end(), rng);
      for (int64_t j = 0; j < k; ++j) tokens[pick[static_cast<size_t>(j)]].push_back(static_cast<uint32_t>(t));
    }
    std::vector<uint32_t> offsets{0}, index;
    for (const auto& tl : tokens) {
      index.insert(index.end(), tl.begin(), tl.end());
      offsets.push_back(static_cast<uint32_t>(index.size()));
    }
    std::uniform_real_distribution<float> wd(0.05f, 1.0f);
    std::vector<float> route(index.size());
    for (float& r : route) r = wd(rng);
    std::vector<strata_expert_weights> weights(ne);
    for (size_t e = 0; e < ne; ++e) {
      weights[e].gate = inst.keep(random_weights(in_type, n_ff, n_embd, rng));
      weights[e].up = inst.keep(random_weights(in_type, n_ff, n_embd, rng));
      weights[e].down = inst.keep(random_weights(down_type, n_embd, n_ff, rng));
      weights[e].gate_type = weights[e].up_type = static_cast<uint32_t>(in_type);
      weights[e].down_type = static_cast<uint32_t>(down_type);
    }
    strata_moe_op m{};
    m.n_embd = static_cast<uint32_t>(n_embd);
    m.n_ff = static_cast<uint32_t>(n_ff);
    m.n_tok = static_cast<uint32_t>(n_tok);
    m.n_experts = static_cast<uint32_t>(ne);
    m.expert_ids = inst.keep(ids);
    m.weights = inst.keep(weights);
    m.token_offsets = inst.keep(offsets);
    m.token_index = inst.keep(index);
    m.route_weight = inst.keep(route);
    m.x = inst.keep(normal_floats(rng, static_cast<size_t>(n_embd * n_tok)));
    m.form = make_form(form, inst, rng, n_embd, n_ff, 16);
    const Compare cmp = form == Form::OaiNan ? Compare::Nmse : Compare::Bytes;
    inst.outputs.push_back(f32_output("dst", n_embd * n_tok, cmp));
    if (with_rows) inst.outputs.push_back(f32_output("moe.rows", n_embd * static_cast<int64_t>(index.size()), cmp));
    // Each bind gets its own descriptor (with its own rows pointer) at a stable address.
    auto bound_ops = std::make_shared<std::deque<strata_moe_op>>();
    inst.owned.push_back(bound_ops);
    const bool rows = with_rows;
    const int64_t embd = n_embd, nt = n_tok;
    inst.bind = [bound_ops, m, rows, embd, nt](const std::vector<void*>& out) {
      strata_moe_op& bound = bound_ops->emplace_back(m);
      bound.rows = rows ? static_cast<float*>(out[1]) : nullptr;
      strata_op op{};
      op.struct_size = sizeof op;
      op.kind = STRATA_OP_MOE;
      op.dst = tensor_f32(static_cast<float*>(out[0]), {embd, nt});
      op.extra = &bound;
      return op;
    };
    return inst;
  }
};

// Which experts of a MOE_ROUTED table are precomputed (NULL matrices, their rows in src3): none (no src3), every
// third id, or every expert token 0 chose (a token with all its rows precomputed).
enum class Precomputed { None, EveryThird, FirstToken };

// MOE_ROUTED's output: each token's sum, or rows out (backend 1.4, i[2] = 1: a column per computed pair).
enum class RoutedOut { Sums, Rows };

// Rows out: dst columns are this many floats longer than a row (rows nb[1] apart, not dense), and every float of
// dst starts as a NaN with a payload no arithmetic makes, so a column written that should not be, or one left
// unwritten that should be, differs from the reference.
constexpr int64_t kRowsOutPad = 4;
constexpr uint32_t kRowsOutSentinel = 0x7fc0dead;

// MOE_ROUTED: the routes in tensors (k distinct experts per token, drawn from 16; with `repeats`, k experts of
// 0..3 drawn independently, so a token names some expert twice) and every expert in a table. With precomputed
// experts, src3 holds random floats, not the true rows: a backend that computes those pairs instead of reading
// src3 differs. With rows out, the "precomputed" entries are NULL and there is no src3: those pairs' columns must
// keep the sentinel.
struct MoeRoutedCase : OpCase {
  GgmlType in_type, down_type;
  int64_t n_embd, n_ff, n_tok, k;
  bool repeats;
  Precomputed pre;
  RoutedOut out;
  Form form;
  MoeRoutedCase(GgmlType in, GgmlType down, int64_t embd, int64_t ff, int64_t tok, int64_t top_k, bool rep = false,
                Precomputed p = Precomputed::None, RoutedOut o = RoutedOut::Sums, Form f = Form::None)
      : in_type(in), down_type(down), n_embd(embd), n_ff(ff), n_tok(tok), k(top_k), repeats(rep), pre(p), out(o),
        form(f) {}
  std::string vars() const override {
    std::string v = vars_of("MOE_ROUTED", kv("gate_up", tname(in_type)), kv("down", tname(down_type)),
                            kv("n_embd", n_embd), kv("n_ff", n_ff), kv("n_tok", n_tok), kv("k", k));
    if (repeats) v.insert(v.size() - 1, ",ids=repeated");
    const char* null_entries = out == RoutedOut::Rows ? "null" : "precomputed";
    if (pre == Precomputed::EveryThird) v.insert(v.size() - 1, std::string(",") + null_entries + "=every_third");
    if (pre == Precomputed::FirstToken) v.insert(v.size() - 1, std::string(",") + null_entries + "=first_token");
    if (out == RoutedOut::Rows) v.insert(v.size() - 1, ",out=rows");
    if (form != Form::None) v.insert(v.size() - 1, "," + kv("form", form_name(form)));
    return v;
  }
  Instance build(std::mt19937& rng) const override {
    Instance inst;
    constexpr uint32_t kExperts = 16;
    std::vector<strata_expert_weights> entries(kExperts);
    for (strata_expert_weights& w : entries) {
      w.gate = inst.keep(random_weights(in_type, n_ff, n_embd, rng));
      w.up = inst.keep(random_weights(in_type, n_ff, n_embd, rng));
      w.down = inst.keep(random_weights(down_type, n_embd, n_ff, rng));
      w.gate_type = w.up_type = static_cast<uint32_t>(in_type);
      w.down_type = static_cast<uint32_t>(down_type);
    }
    std::vector<int32_t> ids;
    std::vector<float> route;
    std::uniform_real_distribution<float> wd(0.05f, 1.0f);
    for (int64_t t = 0; t < n_tok; ++t) {
      // Experts 0..12 only, so some experts of the table are never chosen; the k choices in random order.
      std::vector<int32_t> pick(13);
      for (size_t i = 0; i < pick.size(); ++i) pick[i] = static_cast<int32_t>(i);
      std::shuffle(pick.begin(), pick.end(), rng);
      for (int64_t j = 0; j < k; ++j) {
        ids.push_back(repeats ? static_cast<int32_t>(rng() % 4u) : pick[static_cast<size_t>(j)]);
        route.push_back(wd(rng));
      }
    }
    const auto precomputed = [&](int32_t id) {
      if (pre == Precomputed::EveryThird) return id % 3 == 0;
      return pre == Precomputed::FirstToken && std::find(ids.begin(), ids.begin() + k, id) != ids.begin() + k;
    };
    for (uint32_t e = 0; e < kExperts; ++e) {
      if (precomputed(static_cast<int32_t>(e))) entries[e].gate = entries[e].up = entries[e].down = nullptr;
    }
    const bool rows_out = out == RoutedOut::Rows;
    const float* rows = pre == Precomputed::None || rows_out
                            ? nullptr
                            : inst.keep(normal_floats(rng, static_cast<size_t>(n_embd * k * n_tok)));
    strata_expert_table table{static_cast<uint32_t>(n_embd), static_cast<uint32_t>(n_ff), kExperts,
                              static_cast<uint32_t>(in_type), static_cast<uint32_t>(in_type),
                              static_cast<uint32_t>(down_type), inst.keep(entries), nullptr};
    table.form = make_form(form, inst, rng, n_embd, n_ff, kExperts);
    const strata_expert_table* t = inst.keep(std::vector<strata_expert_table>{table});
    const int32_t* id_data = inst.keep(ids);
    const float* w_data = inst.keep(route);
    const float* x = inst.keep(normal_floats(rng, static_cast<size_t>(n_embd * n_tok)));
    if (rows_out) {
      Output dst = f32_output("dst (rows out)", (n_embd + kRowsOutPad) * k * n_tok, Compare::Bytes);
      dst.initial.resize(dst.bytes);
      for (size_t i = 0; i < dst.bytes; i += 4) std::memcpy(&dst.initial[i], &kRowsOutSentinel, 4);
      inst.outputs.push_back(dst);
    } else {
      inst.outputs.push_back(f32_output("dst", n_embd * n_tok, Compare::Bytes));
    }
    const int64_t embd = n_embd, nt = n_tok, kk = k;
    inst.bind = [=](const std::vector<void*>& out) {
      strata_op op{};
      op.struct_size = sizeof op;
      op.kind = STRATA_OP_MOE_ROUTED;
      op.src[0] = tensor_f32(x, {embd, nt});
      op.src[1] = tensor_i32(id_data, {kk, nt});
      op.src[2] = tensor_f32(w_data, {kk, nt});
      if (rows != nullptr) op.src[3] = tensor_f32(rows, {embd, kk * nt});
      if (rows_out) {
        op.i[2] = 1;
        op.dst = tensor_f32(static_cast<float*>(out[0]), {embd, kk * nt});
        op.dst.nb[1] = static_cast<uint64_t>(embd + kRowsOutPad) * sizeof(float);
        op.dst.nb[2] = op.dst.nb[3] = op.dst.nb[1] * static_cast<uint64_t>(kk * nt);
      } else {
        op.dst = tensor_f32(static_cast<float*>(out[0]), {embd, nt});
      }
      op.extra = t;
      return op;
    };
    return inst;
  }
};

struct GetRowsCase : OpCase {
  GgmlType type;
  int64_t n_embd, n_rows, n_ids;
  GetRowsCase(GgmlType t, int64_t e, int64_t r, int64_t i) : type(t), n_embd(e), n_rows(r), n_ids(i) {}
  std::string vars() const override {
    return vars_of("GET_ROWS", kv("type", tname(type)), kv("n_embd", n_embd), kv("n_rows", n_rows), kv("n_ids", n_ids));
  }
  Instance build(std::mt19937& rng) const override {
    Instance inst;
    const unsigned char* table = inst.keep(random_weights(type, n_rows, n_embd, rng));
    std::vector<int32_t> ids(static_cast<size_t>(n_ids));
    for (auto& i : ids) i = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_rows));
    const int32_t* id = inst.keep(ids);
    inst.outputs.push_back(f32_output("dst", n_embd * n_ids, Compare::Bytes));
    const GgmlType t = type;
    const int64_t e = n_embd, r = n_rows, n = n_ids;
    inst.bind = [=](const std::vector<void*>& out) {
      strata_op op{};
      op.struct_size = sizeof op;
      op.kind = STRATA_OP_GET_ROWS;
      op.src[0] = make_tensor(table, t, {e, r});
      op.src[1] = tensor_i32(id, {n});
      op.dst = tensor_f32(static_cast<float*>(out[0]), {e, n});
      return op;
    };
    return inst;
  }
};

struct RmsNormCase : OpCase {
  int64_t n, rows;
  bool weight, specials;
  RowStrides strides;  // the rows of a strided view (deepseek2: the first 64 values of 80-wide columns)
  RmsNormCase(int64_t n_, int64_t r, bool w, bool s, RowStrides st = {})
      : n(n_), rows(r), weight(w), specials(s), strides(st) {}
  std::string vars() const override {
    std::string v = vars_of("RMS_NORM", kv("n", n), kv("rows", rows), kv("weight", weight ? "yes" : "no"),
                            kv("nan_inf", specials ? "yes" : "no"));
    if (strides.any()) v.insert(v.size() - 1, "," + kv("src_stride", strides.src) + "," + kv("dst_stride", strides.dst));
    return v;
  }
  // Canonical (docs/CANONICAL_ARITHMETIC.md section 6): the bytes must match. With NaN and Inf inputs only the NaN
  // payloads may differ between devices, so those rows compare by value with no error allowed.
  double max_nmse() const override { return 0.0; }
  // A GPU's float norm (float sum of squares, IEEE scale): NaN and Inf at the same places, the rest by NMSE.
  double float_max_nmse() const override { return kFloatOpNmse; }
  Instance build(std::mt19937& rng) const override {
    Instance inst;
    const int64_t sx = strides.src != 0 ? strides.src : n, sd = strides.dst != 0 ? strides.dst : n;
    std::vector<float> xv = normal_floats(rng, static_cast<size_t>(sx * rows));
    if (specials) add_specials(xv, rng);
    const float* x = inst.keep(xv);
    const float* w = weight ? inst.keep(normal_floats(rng, static_cast<size_t>(n))) : nullptr;
    // A strided dst's gaps keep their fill bytes: the comparison covers them.
    inst.outputs.push_back(float_op(f32_output("dst", sd * rows, specials ? Compare::Nmse : Compare::Bytes), Compare::Nmse));
    const int64_t nn = n, rr = rows;
    inst.bind = [=](const std::vector<void*>& out) {
      strata_op op{};
      op.struct_size = sizeof op;
      op.kind = STRATA_OP_RMS_NORM;
      op.src[0] = strided_f32(x, nn, rr, 1, sx);
      op.src[1] = w != nullptr ? tensor_f32(w, {nn}) : no_tensor();
      op.dst = strided_f32(static_cast<float*>(out[0]), nn, rr, 1, sd);
      op.f[0] = 1e-6f;
      return op;
    };
    return inst;
  }
};

// ADD, MUL (one rounded operation each: the bits must match) and SWIGLU (canonical).
struct ElementwiseCase : OpCase {
  uint32_t kind;
  int64_t n, rows;
  bool broadcast, specials;
  ElementwiseCase(uint32_t k, int64_t n_, int64_t r, bool b, bool s) : kind(k), n(n_), rows(r), broadcast(b), specials(s) {}
  std::string vars() const override {
    const char* name = kind == STRATA_OP_ADD ? "ADD" : kind == STRATA_OP_MUL ? "MUL" : "SWIGLU";
    return vars_of(name, kv("n", n), kv("rows", rows), kv("broadcast", broadcast ? "yes" : "no"),
                   kv("nan_inf", specials ? "yes" : "no"));
  }
  Instance build(std::mt19937& rng) const override {
    Instance inst;
    // SWIGLU's gate spans exp_c's whole range: overflow, the subnormal results and underflow to zero.
    std::vector<float> a = normal_floats(rng, static_cast<size_t>(n * rows), kind == STRATA_OP_SWIGLU ? 40.0f : 1.0f);
    if (specials) add_specials(a, rng);
    const float* x = inst.keep(a);
    const float* y = inst.keep(normal_floats(rng, static_cast<size_t>(n * (broadcast ? 1 : rows))));
    inst.outputs.push_back(f32_output("dst", n * rows, Compare::Bytes));
    const uint32_t k = kind;
    const int64_t nn = n, rr = rows;
    const bool b = broadcast;
    inst.bind = [=](const std::vector<void*>& out) {
      strata_op op{};
      op.struct_size = sizeof op;
      op.kind = k;
      op.src[0] = tensor_f32(x, {nn, rr});
      op.src[1] = b ? tensor_f32(y, {nn}) : tensor_f32(y, {nn, rr});
      op.dst = tensor_f32(static_cast<float*>(out[0]), {nn, rr});
      return op;
    };
    return inst;
  }
};

// ROPE's frequencies: f[0] freq_base, f[1] freq_scale, and backend 1.6's YaRN f[2] ext_factor, f[3] attn_factor,
// f[4..5] the correction range. The default is the plain rope of the cases before YaRN.
struct RopeFreqs {
  float base = 1000000.0f, freq_scale = 1.0f, ext = 0.0f, attn = 0.0f, lo = 0.0f, hi = 0.0f;
  bool yarn() const { return ext != 0.0f || attn != 0.0f; }
};

struct RopeCase : OpCase {
  int mode;
  int64_t head_dim, n_head, n_tok;
  int n_rot;
  uint32_t max_pos;  // positions below it
  RopeFreqs freqs;
  RowStrides strides;  // heads of strided views (deepseek2: 16 rope values in 48- or 80-wide columns)
  RopeCase(int m, int64_t hd, int64_t nh, int64_t nt, int nr, uint32_t mp = 40000, RopeFreqs fr = {},
           RowStrides st = {})
      : mode(m), head_dim(hd), n_head(nh), n_tok(nt), n_rot(nr), max_pos(mp), freqs(fr), strides(st) {}
  std::string vars() const override {
    std::string v;
    if (max_pos != 40000) {
      v = vars_of("ROPE", kv("mode", mode), kv("head_dim", head_dim), kv("n_head", n_head), kv("n_tok", n_tok),
                  kv("n_rot", n_rot), kv("max_pos", max_pos));
    } else {
      v = vars_of("ROPE", kv("mode", mode), kv("head_dim", head_dim), kv("n_head", n_head), kv("n_tok", n_tok),
                  kv("n_rot", n_rot));
    }
    if (freqs.yarn()) {
      v.insert(v.size() - 1, "," + vars_of("yarn", kv("base", freqs.base), kv("freq_scale", freqs.freq_scale),
                                           kv("ext", freqs.ext), kv("attn", freqs.attn), kv("lo", freqs.lo),
                                           kv("hi", freqs.hi)));
    }
    if (strides.any()) v.insert(v.size() - 1, "," + kv("src_stride", strides.src) + "," + kv("dst_stride", strides.dst));
    return v;
  }
  // Canonical (section 6: host-side inverse frequencies, sincos_d): the bytes must match. A GPU's float rope
  // (float-float angle, rope_sincos_f) is within a few ulp: NMSE.
  double float_max_nmse() const override { return kFloatOpNmse; }
  Instance build(std::mt19937& rng) const override {
    Instance inst;
    const int64_t sx = strides.src != 0 ? strides.src : head_dim, sd = strides.dst != 0 ? strides.dst : head_dim;
    const float* x = inst.keep(normal_floats(rng, static_cast<size_t>(sx * n_head * n_tok)));
    std::vector<int32_t> pos(static_cast<size_t>(n_tok));
    for (auto& p : pos) p = static_cast<int32_t>(rng() % max_pos);
    if (max_pos != 40000) pos.back() = static_cast<int32_t>(max_pos - 1);
    const int32_t* ps = inst.keep(pos);
    inst.outputs.push_back(float_op(f32_output("dst", sd * n_head * n_tok, Compare::Bytes), Compare::Nmse));
    const int md = mode, nr = n_rot;
    const int64_t hd = head_dim, nh = n_head, nt = n_tok;
    const RopeFreqs fr = freqs;
    inst.bind = [=](const std::vector<void*>& out) {
      strata_op op{};
      op.struct_size = sizeof op;
      op.kind = STRATA_OP_ROPE;
      op.src[0] = strided_f32(x, hd, nh, nt, sx);
      op.src[1] = tensor_i32(ps, {nt});
      op.dst = strided_f32(static_cast<float*>(out[0]), hd, nh, nt, sd);
      op.i[0] = md;
      op.i[1] = nr;
      op.f[0] = fr.base;
      op.f[1] = fr.freq_scale;
      op.f[2] = fr.ext;
      op.f[3] = fr.attn;
      op.f[4] = fr.lo;
      op.f[5] = fr.hi;
      return op;
    };
    return inst;
  }
};

// COPY (backend 1.3): f32 or i32 rows, the source's rows padded apart (nb[1] past the row), into a dense dst.
struct CopyCase : OpCase {
  GgmlType type;
  int64_t n0, n1, pad;
  CopyCase(GgmlType t, int64_t a, int64_t b, int64_t p) : type(t), n0(a), n1(b), pad(p) {}
  std::string vars() const override {
    return vars_of("COPY", kv("type", tname(type)), kv("n0", n0), kv("n1", n1), kv("pad", pad));
  }
  Instance build(std::mt19937& rng) const override {
    Instance inst;
    std::vector<uint32_t> words(static_cast<size_t>((n0 + pad) * n1));
    for (uint32_t& w : words) w = static_cast<uint32_t>(rng());
    const uint32_t* src = inst.keep(words);
    Output out;
    out.name = "dst";
    out.bytes = static_cast<size_t>(n0 * n1) * 4;
    inst.outputs.push_back(out);
    const GgmlType t = type;
    const int64_t a = n0, b = n1, p = pad;
    inst.bind = [=](const std::vector<void*>& o) {
      strata_op op{};
      op.struct_size = sizeof op;
      op.kind = STRATA_OP_COPY;
      op.src[0] = make_tensor(src, t, {a, b});
      op.src[0].nb[1] = static_cast<uint64_t>(a + p) * 4;
      op.src[0].nb[2] = op.src[0].nb[3] = op.src[0].nb[1] * static_cast<uint64_t>(b);
      op.dst = make_tensor(o[0], t, {a, b});
      return op;
    };
    return inst;
  }
};

// SIGNAL (backend 1.3): the value lands in dst.
struct SignalCase : OpCase {
  int32_t value;
  explicit SignalCase(int32_t v) : value(v) {}
  std::string vars() const override { return vars_of("SIGNAL", kv("value", value)); }
  Instance build(std::mt19937&) const override {
    Instance inst;
    Output out;
    out.name = "dst";
    out.bytes = 4;
    inst.outputs.push_back(out);
    const int32_t v = value;
    inst.bind = [=](const std::vector<void*>& o) {
      strata_op op{};
      op.struct_size = sizeof op;
      op.kind = STRATA_OP_SIGNAL;
      op.dst = tensor_i32(static_cast<int32_t*>(o[0]), {1});
      op.i[0] = v;
      return op;
    };
    return inst;
  }
};

// A random cache of `type`: columns of kv_dim values (f16/f32 from normal floats, q8_0 blocks with sane scales).
std::vector<unsigned char> random_cache(GgmlType type, int64_t kv_dim, int64_t n_ctx, std::mt19937& rng) {
  if (type == GgmlType::Q8_0) {
    std::vector<unsigned char> c = random_weights(type, n_ctx, kv_dim, rng);
    // Activation-like values: q within +-127 and scales near 1/127.
    for (size_t b = 0; b < c.size() / 34; ++b) {
      put_f16(&c[b * 34], 1.0f / 127.0f);
      for (int i = 0; i < 32; ++i) {
        if (c[b * 34 + 2 + static_cast<size_t>(i)] == 0x80) c[b * 34 + 2 + static_cast<size_t>(i)] = 0x81;
      }
    }
    return c;
  }
  return random_weights(type, n_ctx, kv_dim, rng);
}

struct KvStoreCase : OpCase {
  GgmlType type;
  int64_t kv_dim, n_ctx, n_tok;
  int64_t src_stride;  // src0's columns this many floats apart (0: dense)
  KvStoreCase(GgmlType t, int64_t kd, int64_t nc, int64_t nt, int64_t ss = 0)
      : type(t), kv_dim(kd), n_ctx(nc), n_tok(nt), src_stride(ss) {}
  std::string vars() const override {
    std::string v =
        vars_of("KV_STORE", kv("type", tname(type)), kv("kv_dim", kv_dim), kv("n_ctx", n_ctx), kv("n_tok", n_tok));
    if (src_stride != 0) v.insert(v.size() - 1, "," + kv("src_stride", src_stride));
    return v;
  }
  Instance build(std::mt19937& rng) const override {
    Instance inst;
    const int64_t sx = src_stride != 0 ? src_stride : kv_dim;
    const float* x = inst.keep(normal_floats(rng, static_cast<size_t>(sx * n_tok)));
    std::vector<int32_t> pos(static_cast<size_t>(n_ctx));
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(i);
    std::shuffle(pos.begin(), pos.end(), rng);
    pos.resize(static_cast<size_t>(n_tok));
    const int32_t* ps = inst.keep(pos);
    Output cache;
    cache.name = "dst (cache)";
    cache.initial = random_cache(type, kv_dim, n_ctx, rng);
    cache.bytes = cache.initial.size();
    cache.compare = Compare::Bytes;
    inst.outputs.push_back(cache);
    const GgmlType t = type;
    const int64_t kd = kv_dim, nc = n_ctx, nt = n_tok;
    inst.bind = [=](const std::vector<void*>& out) {
      strata_op op{};
      op.struct_size = sizeof op;
      op.kind = STRATA_OP_KV_STORE;
      op.src[0] = tensor_f32(x, {kd, nt});
      op.src[0].nb[1] = static_cast<uint64_t>(sx) * sizeof(float);
      op.src[1] = tensor_i32(ps, {nt});
      op.dst = make_tensor(out[0], t, {kd, nc});
      return op;
    };
    return inst;
  }
};

// Backend 1.6 (gpt-oss): a sliding window (i[2]) and per-head sink logits (src4).
struct AttentionExtras {
  int64_t window = 0;  // 0: none
  bool sinks = false;
};

struct AttentionCase : OpCase {
  GgmlType type;
  int64_t head_dim, n_head, n_kv_head, n_ctx, n_tok;
  int64_t first;  // the tokens' positions first, first + 1, ...; negative: see build
  AttentionExtras extras;
  AttentionCase(GgmlType t, int64_t hd, int64_t nh, int64_t nkv, int64_t nc, int64_t nt, int64_t f = -1,
                AttentionExtras x = {})
      : type(t), head_dim(hd), n_head(nh), n_kv_head(nkv), n_ctx(nc), n_tok(nt), first(f), extras(x) {}
  std::string vars() const override {
    std::string v;
    if (first >= 0) {
      v = vars_of("ATTENTION", kv("cache", tname(type)), kv("head_dim", head_dim), kv("n_head", n_head),
                  kv("n_kv_head", n_kv_head), kv("n_ctx", n_ctx), kv("n_tok", n_tok), kv("first", first));
    } else {
      v = vars_of("ATTENTION", kv("cache", tname(type)), kv("head_dim", head_dim), kv("n_head", n_head),
                  kv("n_kv_head", n_kv_head), kv("n_ctx", n_ctx), kv("n_tok", n_tok));
    }
    if (extras.window > 0) v.insert(v.size() - 1, "," + kv("window", extras.window));
    if (extras.sinks) v.insert(v.size() - 1, ",sinks=yes");
    return v;
  }
  // Double rounded once (section 6), but not bytes: a device may order the double sums differently and its libm
  // exp may differ in the last bit; either moves a float only next to a rounding boundary (a last-bit difference
  // in about one value in 10^8). Float arithmetic anywhere would give about 1e-14.
  double max_nmse() const override { return 1e-16; }
  // A GPU's default attention (float, tensor cores): the bound its engineer sets.
  double float_max_nmse() const override { return 1e-5; }
  Instance build(std::mt19937& rng) const override {
    Instance inst;
    const float* q = inst.keep(normal_floats(rng, static_cast<size_t>(head_dim * n_head * n_tok)));
    const unsigned char* k = inst.keep(random_cache(type, head_dim * n_kv_head, n_ctx, rng));
    const unsigned char* v = inst.keep(random_cache(type, head_dim * n_kv_head, n_ctx, rng));
    // A window at the end of the context, and one token near its start; or the window at `first`.
    std::vector<int32_t> pos(static_cast<size_t>(n_tok));
    for (int64_t t = 0; t < n_tok; ++t) {
      pos[static_cast<size_t>(t)] = static_cast<int32_t>(first >= 0 ? first + t : n_ctx - n_tok + t);
    }
    if (first < 0) pos[0] = 2;
    const int32_t* ps = inst.keep(pos);
    // Sinks around the scores' scale (|s| of a few units): some heads' sinks dominate, some hardly count.
    const float* sinks = extras.sinks ? inst.keep(normal_floats(rng, static_cast<size_t>(n_head), 3.0f)) : nullptr;
    inst.outputs.push_back(f32_output("dst", head_dim * n_head * n_tok, Compare::Nmse));
    const GgmlType t = type;
    const int64_t hd = head_dim, nh = n_head, nkv = n_kv_head, nc = n_ctx, nt = n_tok;
    const int32_t window = static_cast<int32_t>(extras.window);
    inst.bind = [=](const std::vector<void*>& out) {
      strata_op op{};
      op.struct_size = sizeof op;
      op.kind = STRATA_OP_ATTENTION;
      op.src[0] = tensor_f32(q, {hd, nh, nt});
      op.src[1] = make_tensor(k, t, {hd * nkv, nc});
      op.src[2] = make_tensor(v, t, {hd * nkv, nc});
      op.src[3] = tensor_i32(ps, {nt});
      op.dst = tensor_f32(static_cast<float*>(out[0]), {hd * nh, nt});
      op.i[0] = static_cast<int32_t>(nh);
      op.i[1] = static_cast<int32_t>(nkv);
      op.i[2] = window;
      if (sinks != nullptr) op.src4 = tensor_f32(sinks, {nh});
      op.f[0] = 1.0f / std::sqrt(static_cast<float>(hd));
      return op;
    };
    return inst;
  }
};

// ATTENTION with value heads of their own size (backend 1.6): dv != dk. Latent (deepseek2): one kv head, the values
// a view of the key cache's first dv columns (rows the keys' stride apart); otherwise a separate value cache of
// dv * n_kv_head columns.
struct LatentAttentionCase : OpCase {
  GgmlType type;
  int64_t key_dim, value_dim, n_head, n_kv_head, n_ctx, n_tok;
  bool latent;
  LatentAttentionCase(GgmlType t, int64_t dk, int64_t dv, int64_t nh, int64_t nkv, int64_t nc, int64_t nt, bool l)
      : type(t), key_dim(dk), value_dim(dv), n_head(nh), n_kv_head(nkv), n_ctx(nc), n_tok(nt), latent(l) {}
  std::string vars() const override {
    return vars_of("ATTENTION", kv("cache", tname(type)), kv("dk", key_dim), kv("dv", value_dim), kv("n_head", n_head),
                   kv("n_kv_head", n_kv_head), kv("n_ctx", n_ctx), kv("n_tok", n_tok),
                   kv("v", latent ? "view_of_k" : "own_cache"));
  }
  // As AttentionCase: double rounded once, the sums' order and exp's last bit may differ between devices.
  double max_nmse() const override { return 1e-16; }
  double float_max_nmse() const override { return 1e-5; }
  Instance build(std::mt19937& rng) const override {
    Instance inst;
    const float* q = inst.keep(normal_floats(rng, static_cast<size_t>(key_dim * n_head * n_tok)));
    const unsigned char* k = inst.keep(random_cache(type, key_dim * n_kv_head, n_ctx, rng));
    const unsigned char* v = latent ? k : inst.keep(random_cache(type, value_dim * n_kv_head, n_ctx, rng));
    // The window at the end of the context, and its first token near the start.
    std::vector<int32_t> pos(static_cast<size_t>(n_tok));
    for (int64_t t = 0; t < n_tok; ++t) pos[static_cast<size_t>(t)] = static_cast<int32_t>(n_ctx - n_tok + t);
    pos[0] = 2;
    const int32_t* ps = inst.keep(pos);
    inst.outputs.push_back(f32_output("dst", value_dim * n_head * n_tok, Compare::Nmse));
    const GgmlType t = type;
    const int64_t dk = key_dim, dv = value_dim, nh = n_head, nkv = n_kv_head, nc = n_ctx, nt = n_tok;
    const bool view = latent;
    inst.bind = [=](const std::vector<void*>& out) {
      strata_op op{};
      op.struct_size = sizeof op;
      op.kind = STRATA_OP_ATTENTION;
      op.src[0] = tensor_f32(q, {dk, nh, nt});
      op.src[1] = make_tensor(k, t, {dk * nkv, nc});
      op.src[2] = make_tensor(v, t, {dv * nkv, nc});
      if (view) op.src[2].nb[1] = op.src[1].nb[1];
      op.src[3] = tensor_i32(ps, {nt});
      op.dst = tensor_f32(static_cast<float*>(out[0]), {dv * nh, nt});
      op.i[0] = static_cast<int32_t>(nh);
      op.i[1] = static_cast<int32_t>(nkv);
      op.f[0] = 1.0f / std::sqrt(static_cast<float>(dk));
      return op;
    };
    return inst;
  }
};

// ROUTER on a float_label (a GPU's float softmax or sigmoid, section 6). The reference's scores s_e = p_e + bias_e
// are recomputed here in double: the backend's expert at rank j must score within kRouterTie of the reference's
// expert at rank j (so wherever neighbouring scores are further apart than float error, the ids are exactly the
// reference's, and only near-ties may swap), every id in range and once; its weights compare by NMSE with the
// double formula applied to the experts it chose (p_e [/ the chosen p summed in rank order] * factor). Gating 2:
// the scores are the logits (plus bias) and p of the chosen is the softmax over their logits alone.
constexpr double kRouterTie = 1e-5;  // float error of a score is about 1e-7

// DeepSeek-V3's expert groups (backend 1.6): i[3] n_group (0: none), i[4] the groups kept.
struct RouterGroups {
  int64_t n_group = 0, keep = 0;
};

// Group g's score: the sum of its two largest scores (its one for a group of one).
double group_score(const std::vector<double>& s, int64_t g, int64_t per) {
  std::vector<double> v(s.begin() + g * per, s.begin() + (g + 1) * per);
  std::sort(v.begin(), v.end(), std::greater<>());
  return per >= 2 ? v[0] + v[1] : v[0];
}

// The groups' ranking by score, best first, ties to the lower group.
std::vector<int64_t> rank_groups(const std::vector<double>& s, int64_t n_group) {
  const int64_t per = static_cast<int64_t>(s.size()) / n_group;
  std::vector<double> gs(static_cast<size_t>(n_group));
  for (int64_t g = 0; g < n_group; ++g) gs[static_cast<size_t>(g)] = group_score(s, g, per);
  std::vector<int64_t> order(static_cast<size_t>(n_group));
  for (int64_t g = 0; g < n_group; ++g) order[static_cast<size_t>(g)] = g;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return gs[a] > gs[b]; });
  return order;
}

std::string router_float_check(const float* l, const float* bias, int64_t ne, int64_t k, int64_t nt, int gating,
                               bool normalize, float factor, const std::vector<unsigned char>& want_ids,
                               const std::vector<unsigned char>& got_ids, const std::vector<unsigned char>& got_w,
                               RouterGroups groups = {}) {
  std::vector<int32_t> want(static_cast<size_t>(k * nt)), got(static_cast<size_t>(k * nt));
  std::memcpy(want.data(), want_ids.data(), want_ids.size());
  std::memcpy(got.data(), got_ids.data(), got_ids.size());
  std::vector<float> expect(static_cast<size_t>(k * nt));
  int64_t swapped = 0;
  for (int64_t t = 0; t < nt; ++t) {
    const float* row = l + t * ne;
    std::vector<double> p(static_cast<size_t>(ne)), s(static_cast<size_t>(ne));
    if (gating == 1) {
      for (int64_t e = 0; e < ne; ++e) p[e] = 1.0 / (1.0 + std::exp(-static_cast<double>(row[e])));
    } else if (gating == 2) {
      for (int64_t e = 0; e < ne; ++e) p[e] = static_cast<double>(row[e]);
    } else {
      double m = -std::numeric_limits<double>::infinity(), total = 0.0;
      for (int64_t e = 0; e < ne; ++e) m = std::max(m, static_cast<double>(row[e]));
      for (int64_t e = 0; e < ne; ++e) total += (p[e] = std::exp(static_cast<double>(row[e]) - m));
      for (int64_t e = 0; e < ne; ++e) p[e] /= total;
    }
    for (int64_t e = 0; e < ne; ++e) s[e] = p[e] + (bias != nullptr ? static_cast<double>(bias[e]) : 0.0);
    if (groups.n_group > 1) {
      // An expert outside the kept groups scores -inf: choosing it is never a near-tie.
      const std::vector<int64_t> ranked = rank_groups(s, groups.n_group);
      const int64_t per = ne / groups.n_group;
      for (size_t r = static_cast<size_t>(groups.keep); r < ranked.size(); ++r) {
        for (int64_t e = ranked[r] * per; e < (ranked[r] + 1) * per; ++e) s[e] = -std::numeric_limits<double>::infinity();
      }
    }
    std::vector<bool> seen(static_cast<size_t>(ne), false);
    double norm = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      const int32_t g = got[t * k + j], r = want[t * k + j];
      std::ostringstream at;
      at << "dst (ids): token " << t << " rank " << j << ": ";
      if (g < 0 || g >= ne || seen[g]) return at.str() + "expert " + std::to_string(g) + " out of range or repeated";
      seen[g] = true;
      if (std::fabs(s[g] - s[r]) > kRouterTie) {
        at << "expert " << g << " (score " << s[g] << ") where the reference has " << r << " (score " << s[r]
           << "), further apart than float error";
        return at.str();
      }
      swapped += g != r;
    }
    if (gating == 2) {
      // The chosen experts' weights: the softmax over their logits.
      const double top = p[got[t * k]];
      std::vector<double> e(static_cast<size_t>(k));
      double total = 0.0;
      for (int64_t j = 0; j < k; ++j) total += (e[j] = std::exp(p[got[t * k + j]] - top));
      for (int64_t j = 0; j < k; ++j) p[got[t * k + j]] = e[j] / total;
    }
    for (int64_t j = 0; j < k; ++j) norm += p[got[t * k + j]];
    for (int64_t j = 0; j < k; ++j) {
      const double v = p[got[t * k + j]];
      expect[t * k + j] = static_cast<float>((normalize ? v / norm : v) * static_cast<double>(factor));
    }
  }
  std::vector<unsigned char> expect_bytes(expect.size() * sizeof(float));
  std::memcpy(expect_bytes.data(), expect.data(), expect_bytes.size());
  std::string diff = nmse_mismatch("src2 (weights)", expect_bytes, got_w, kFloatOpNmse);
  // Random logits leave near-ties rare: more than one swap in a case means a ranking bug, not float error.
  if (diff.empty() && swapped > 1) diff = "dst (ids): " + std::to_string(swapped) + " near-tie swaps (at most 1 expected)";
  return diff;
}

struct RouterCase : OpCase {
  int64_t n_expert, k, n_tok;
  int gating;
  bool normalize, bias;
  bool ties;  // every token's logits tie across the choice's edge (ranks k-1 and k) and within it (ranks 0 and 1)
  RouterGroups groups;  // with ties: groups tie across the kept groups' edge and at the top (sigmoid gating)
  RouterCase(int64_t ne, int64_t k_, int64_t nt, int g, bool n, bool b, bool t = false, RouterGroups gr = {})
      : n_expert(ne), k(k_), n_tok(nt), gating(g), normalize(n), bias(b), ties(t), groups(gr) {}
  std::string vars() const override {
    const char* gate = gating == 0 ? "softmax" : gating == 1 ? "sigmoid" : "softmax_of_chosen";
    std::string v = vars_of("ROUTER", kv("n_expert", n_expert), kv("k", k), kv("n_tok", n_tok), kv("gating", gate),
                            kv("normalize", normalize ? "yes" : "no"), kv("bias", bias ? "yes" : "no"));
    if (groups.n_group > 1) v.insert(v.size() - 1, "," + kv("groups", groups.n_group) + "," + kv("keep", groups.keep));
    if (ties) v.insert(v.size() - 1, ",ties=yes");
    return v;
  }
  // Group ties (sigmoid: a score depends on its own logit and bias only): the biases repeat from group to group,
  // and each token's best group is copied into its second and its last kept group into the first dropped one, so
  // the lower group must win both ties, and the experts of the two best groups tie pairwise.
  void tie_groups(std::vector<float>& logits, const float* b) const {
    const int64_t per = n_expert / groups.n_group;
    for (int64_t t = 0; t < n_tok; ++t) {
      float* row = logits.data() + t * n_expert;
      std::vector<double> sc(static_cast<size_t>(n_expert));
      for (int64_t e = 0; e < n_expert; ++e) {
        sc[static_cast<size_t>(e)] = 1.0 / (1.0 + std::exp(-static_cast<double>(row[e]))) + static_cast<double>(b[e]);
      }
      const std::vector<int64_t> ranked = rank_groups(sc, groups.n_group);
      const auto copy = [&](int64_t from, int64_t to) { std::copy(row + from * per, row + (from + 1) * per, row + to * per); };
      copy(ranked[0], ranked[1]);
      copy(ranked[static_cast<size_t>(groups.keep - 1)], ranked[static_cast<size_t>(groups.keep)]);
    }
  }
  // Double rounded once (section 6), but not bytes: a device may order the double sums differently and its libm
  // exp may differ in the last bit; either moves a float only next to a rounding boundary (a last-bit difference
  // in about one value in 10^8). Float arithmetic anywhere would give about 1e-14.
  double max_nmse() const override { return 1e-16; }
  Instance build(std::mt19937& rng) const override {
    Instance inst;
    std::vector<float> logits = normal_floats(rng, static_cast<size_t>(n_expert * n_tok), 2.0f);
    if (ties && groups.n_group <= 1) {
      // Each token's logit at rank k-1 copied to its rank k (the lower id must win) and rank 0's to rank 1.
      for (int64_t t = 0; t < n_tok; ++t) {
        float* row = logits.data() + t * n_expert;
        std::vector<int64_t> rank(static_cast<size_t>(n_expert));
        for (int64_t e = 0; e < n_expert; ++e) rank[static_cast<size_t>(e)] = e;
        std::sort(rank.begin(), rank.end(), [&](int64_t a, int64_t b) { return row[a] > row[b]; });
        row[rank[static_cast<size_t>(k)]] = row[rank[static_cast<size_t>(k - 1)]];
        row[rank[1]] = row[rank[0]];
      }
    }
    const float* b = nullptr;
    if (ties && groups.n_group > 1) {
      std::vector<float> one = normal_floats(rng, static_cast<size_t>(n_expert / groups.n_group), 0.1f), all;
      for (int64_t g = 0; g < groups.n_group; ++g) all.insert(all.end(), one.begin(), one.end());
      b = inst.keep(all);
      tie_groups(logits, b);
    } else if (bias) {
      b = inst.keep(normal_floats(rng, static_cast<size_t>(n_expert), 0.1f));
    }
    const float* l = inst.keep(logits);
    Output ids;
    ids.name = "dst (ids)";
    ids.bytes = static_cast<size_t>(k * n_tok) * sizeof(int32_t);
    inst.outputs.push_back(float_op(ids, Compare::ByCase));
    inst.outputs.push_back(float_op(f32_output("src2 (weights)", k * n_tok, Compare::Nmse), Compare::ByCase));
    const int64_t ne = n_expert, kk = k, nt = n_tok;
    const int g = gating, norm = normalize ? 1 : 0;
    const RouterGroups gr = groups;
    inst.float_check = [=](const std::vector<std::vector<unsigned char>>& want,
                           const std::vector<std::vector<unsigned char>>& got) {
      return router_float_check(l, b, ne, kk, nt, g, norm != 0, 2.5f, want[0], got[0], got[1], gr);
    };
    inst.bind = [=](const std::vector<void*>& out) {
      strata_op op{};
      op.struct_size = sizeof op;
      op.kind = STRATA_OP_ROUTER;
      op.src[0] = tensor_f32(l, {ne, nt});
      op.src[1] = b != nullptr ? tensor_f32(b, {ne}) : no_tensor();
      op.src[2] = tensor_f32(static_cast<float*>(out[1]), {kk, nt});
      op.dst = tensor_i32(static_cast<int32_t*>(out[0]), {kk, nt});
      op.i[0] = static_cast<int32_t>(kk);
      op.i[1] = g;
      op.i[2] = norm;
      op.i[3] = static_cast<int32_t>(gr.n_group);
      op.i[4] = static_cast<int32_t>(gr.keep);
      op.f[0] = 2.5f;
      return op;
    };
    return inst;
  }
};

struct SoftmaxCase : OpCase {
  int64_t n, rows;
  float scale;
  bool masked;
  SoftmaxCase(int64_t n_, int64_t r, float s, bool m) : n(n_), rows(r), scale(s), masked(m) {}
  std::string vars() const override {
    return vars_of("SOFTMAX", kv("n", n), kv("rows", rows), kv("scale", scale), kv("masked", masked ? "yes" : "no"));
  }
  // Double rounded once (section 6), but not bytes: a device may order the double sums differently and its libm
  // exp may differ in the last bit; either moves a float only next to a rounding boundary (a last-bit difference
  // in about one value in 10^8). Float arithmetic anywhere would give about 1e-14.
  double max_nmse() const override { return 1e-16; }
  // A GPU's float softmax (exp_c, float sums, IEEE division).
  double float_max_nmse() const override { return kFloatOpNmse; }
  Instance build(std::mt19937& rng) const override {
    Instance inst;
    std::vector<float> xv = normal_floats(rng, static_cast<size_t>(n * rows), 3.0f);
    if (masked) {
      // -inf entries (a mask) weigh zero; every row keeps finite entries.
      for (size_t i = 0; i < xv.size(); ++i) {
        if (i % static_cast<size_t>(n) != 0 && rng() % 4 == 0) xv[i] = -std::numeric_limits<float>::infinity();
      }
    }
    const float* x = inst.keep(xv);
    inst.outputs.push_back(f32_output("dst", n * rows, Compare::Nmse));
    const int64_t nn = n, rr = rows;
    const float s = scale;
    inst.bind = [=](const std::vector<void*>& out) {
      strata_op op{};
      op.struct_size = sizeof op;
      op.kind = STRATA_OP_SOFTMAX;
      op.src[0] = tensor_f32(x, {nn, rr});
      op.dst = tensor_f32(static_cast<float*>(out[0]), {nn, rr});
      op.f[0] = s;
      return op;
    };
    return inst;
  }
};

// An f32 output whose first contents are `values`: the operand of an op in place (dst = src0).
Output f32_output_holding(const std::string& name, const std::vector<float>& values, Compare cmp) {
  Output o = f32_output(name, static_cast<int64_t>(values.size()), cmp);
  o.initial.resize(o.bytes);
  std::memcpy(o.initial.data(), values.data(), o.bytes);
  return o;
}

const char* yes_no(bool b) { return b ? "yes" : "no"; }

// LAYER_NORM (backend 1.7, the vision encoder's): rows of normal values, each row shifted by a mean of its own, with
// and without the weight and the bias; in place, src0 is dst (the inputs its first contents). eps is the encoder's
// 1e-6 unless given (a large one, which moves every value, checks that it is added where the reference adds it).
struct LayerNormCase : OpCase {
  int64_t n, rows;
  bool weight, bias, in_place, specials;
  float eps;
  LayerNormCase(int64_t n_, int64_t r, bool w, bool b, bool ip, bool s = false, float e = 1e-6f)
      : n(n_), rows(r), weight(w), bias(b), in_place(ip), specials(s), eps(e) {}
  std::string vars() const override {
    std::string v = vars_of("LAYER_NORM", kv("n", n), kv("rows", rows), kv("weight", yes_no(weight)),
                            kv("bias", yes_no(bias)), kv("in_place", yes_no(in_place)));
    if (specials) v.insert(v.size() - 1, "," + kv("nan_inf", "yes"));
    if (eps != 1e-6f) v.insert(v.size() - 1, "," + kv("eps", eps));
    return v;
  }
  // Float on every backend (the reference's double rounded once is the target): a float row norm is within a few ulp
  // of it (about 1e-14); a wrong mean, variance, epsilon or order of weight and bias gives far more.
  double max_nmse() const override { return kFloatOpNmse; }
  Instance build(std::mt19937& rng) const override {
    Instance inst;
    std::vector<float> xv = normal_floats(rng, static_cast<size_t>(n * rows), 2.0f);
    const std::vector<float> shift = normal_floats(rng, static_cast<size_t>(rows), 4.0f);
    for (size_t i = 0; i < xv.size(); ++i) xv[i] += shift[i / static_cast<size_t>(n)];
    if (specials) add_specials(xv, rng);
    const float* w = weight ? inst.keep(normal_floats(rng, static_cast<size_t>(n))) : nullptr;
    const float* b = bias ? inst.keep(normal_floats(rng, static_cast<size_t>(n), 0.5f)) : nullptr;
    const float* x = in_place ? nullptr : inst.keep(xv);
    inst.outputs.push_back(in_place ? f32_output_holding("dst", xv, Compare::Nmse) : f32_output("dst", n * rows, Compare::Nmse));
    const int64_t nn = n, rr = rows;
    const float e = eps;
    inst.bind = [=](const std::vector<void*>& out) {
      strata_op op{};
      op.struct_size = sizeof op;
      op.kind = STRATA_OP_LAYER_NORM;
      op.dst = tensor_f32(static_cast<float*>(out[0]), {nn, rr});
      op.src[0] = x != nullptr ? tensor_f32(x, {nn, rr}) : op.dst;
      op.src[1] = w != nullptr ? tensor_f32(w, {nn}) : no_tensor();
      op.src[2] = b != nullptr ? tensor_f32(b, {nn}) : no_tensor();
      op.f[0] = e;
      return op;
    };
    return inst;
  }
};

// GELU (backend 1.7): a quarter of the inputs uniform over [-12, 12], so both of the f16 table's clamps (-10 and 10)
// are crossed, the rest normal (sigma 2), where the forms differ (an erf GELU in place of the tanh form gives an NMSE
// near 5e-9); the first values of every case are the edges: +-10 and the floats next to them inside, +-12, +-0,
// values that round to f16 subnormals or to zero; every fifth value after them lies halfway between neighbouring
// halves (a tie, to even).
struct GeluCase : OpCase {
  int64_t n, rows;
  bool table, in_place, specials;
  GeluCase(int64_t n_, int64_t r, bool t, bool ip, bool s = false) : n(n_), rows(r), table(t), in_place(ip), specials(s) {}
  std::string vars() const override {
    std::string v = vars_of("GELU", kv("n", n), kv("rows", rows), kv("f16_table", yes_no(table)),
                            kv("in_place", yes_no(in_place)));
    if (specials) v.insert(v.size() - 1, "," + kv("nan_inf", "yes"));
    return v;
  }
  // The table form is exact on every backend (f16 results; with NaN and Inf inputs compared by value, as RMS_NORM's).
  // The tanh form is float on every backend: a few ulp a value gives about 1e-14.
  double max_nmse() const override { return table ? 0.0 : kFloatOpNmse; }
  Instance build(std::mt19937& rng) const override {
    Instance inst;
    std::uniform_real_distribution<float> u(-12.0f, 12.0f);
    std::normal_distribution<float> nd(0.0f, 2.0f);
    std::vector<float> xv(static_cast<size_t>(n * rows));
    for (float& v : xv) v = rng() % 4 == 0 ? u(rng) : nd(rng);
    const float edges[] = {-10.0f, 10.0f, std::nextafter(-10.0f, 0.0f), std::nextafter(10.0f, 0.0f), -12.0f, 12.0f,
                           0.0f, -0.0f, 3e-8f, -3e-8f, 2.9802322e-8f, 1e-5f, -1e-5f, 6.2e-5f};
    std::copy_n(edges, std::min(std::size(edges), xv.size()), xv.begin());
    for (size_t i = std::size(edges); i < xv.size(); i += 5) {
      // The midpoint of a half within (-10, 10) and the next one away from zero: exact in float.
      const auto h = static_cast<uint16_t>(rng() % 0x4900u | (rng() % 2 != 0 ? 0x8000u : 0u));  // |h| < 10
      xv[i] = 0.5f * (format::fp16_to_fp32(h) + format::fp16_to_fp32(static_cast<uint16_t>(h + 1)));
    }
    if (specials) add_specials(xv, rng);
    const float* x = in_place ? nullptr : inst.keep(xv);
    const Compare cmp = table && !specials ? Compare::Bytes : Compare::Nmse;
    inst.outputs.push_back(in_place ? f32_output_holding("dst", xv, cmp) : f32_output("dst", n * rows, cmp));
    const int64_t nn = n, rr = rows;
    const int32_t form = table ? 1 : 0;
    inst.bind = [=](const std::vector<void*>& out) {
      strata_op op{};
      op.struct_size = sizeof op;
      op.kind = STRATA_OP_GELU;
      op.dst = tensor_f32(static_cast<float*>(out[0]), {nn, rr});
      op.src[0] = x != nullptr ? tensor_f32(x, {nn, rr}) : op.dst;
      op.i[0] = form;
      return op;
    };
    return inst;
  }
};

// ROPE over position components (positions [n_tok, 4] component-major): mode 24 (backend 1.7, the vision
// encoder's 2-D RoPE: rows and columns, components 1 and 2, in 0..63 as an image's patches have them, other values in
// components 0 and 3, which the mode ignores; sections[0] row pairs, the rest of n_rot/2 column pairs) and mode 40
// (1.6, Qwen3-VL's interleaved M-RoPE: sections[0..3] the pairs of t, row, column and e; with `text` the positions
// are [n_tok], a text token's (p, p, p, 0)); freq_base 10000.
struct MultiRopeCase : OpCase {
  int mode;
  int64_t head_dim, n_head, n_tok;
  int n_rot;
  std::array<int, 4> sections;
  bool in_place, text;
  MultiRopeCase(int m, int64_t hd, int64_t nh, int64_t nt, int nr, std::array<int, 4> s, bool ip, bool tx = false)
      : mode(m), head_dim(hd), n_head(nh), n_tok(nt), n_rot(nr), sections(s), in_place(ip), text(tx) {}
  std::string vars() const override {
    return vars_of("ROPE", kv("mode", mode), kv("head_dim", head_dim), kv("n_head", n_head), kv("n_tok", n_tok),
                   kv("n_rot", n_rot), kv("sections", std::to_string(sections[0]) + "_" + std::to_string(sections[1]) +
                                                          "_" + std::to_string(sections[2]) + "_" +
                                                          std::to_string(sections[3])),
                   kv("positions", text ? "text" : "components"), kv("in_place", yes_no(in_place)));
  }
  // Canonical as the other modes (host-side frequencies, sincos_d): the bytes must match; a GPU's float rope: NMSE.
  double float_max_nmse() const override { return kFloatOpNmse; }
  Instance build(std::mt19937& rng) const override {
    Instance inst;
    const std::vector<float> xv = normal_floats(rng, static_cast<size_t>(head_dim * n_head * n_tok));
    const size_t n_comp = text ? 1 : 4;
    std::vector<int32_t> pos(n_comp * static_cast<size_t>(n_tok));
    for (size_t c = 0; c < n_comp; ++c) {
      for (size_t t = 0; t < static_cast<size_t>(n_tok); ++t) {
        pos[c * static_cast<size_t>(n_tok) + t] =
            static_cast<int32_t>(mode == 24 ? (c == 1 || c == 2 ? rng() % 64 : 100 + rng() % 900) : rng() % 4000);
      }
    }
    const int32_t* ps = inst.keep(pos);
    const float* x = in_place ? nullptr : inst.keep(xv);
    const Output dst = in_place ? f32_output_holding("dst", xv, Compare::Bytes)
                                : f32_output("dst", head_dim * n_head * n_tok, Compare::Bytes);
    inst.outputs.push_back(float_op(dst, Compare::Nmse));
    const int md = mode, nr = n_rot;
    const std::array<int, 4> sec = sections;
    const int64_t hd = head_dim, nh = n_head, nt = n_tok;
    const bool tx = text;
    inst.bind = [=](const std::vector<void*>& out) {
      strata_op op{};
      op.struct_size = sizeof op;
      op.kind = STRATA_OP_ROPE;
      op.dst = tensor_f32(static_cast<float*>(out[0]), {hd, nh, nt});
      op.src[0] = x != nullptr ? tensor_f32(x, {hd, nh, nt}) : op.dst;
      op.src[1] = tx ? tensor_i32(ps, {nt}) : tensor_i32(ps, {nt, 4});
      op.i[0] = md;
      op.i[1] = nr;
      for (int k = 0; k < 4; ++k) op.i[2 + k] = sec[static_cast<size_t>(k)];
      op.f[0] = 10000.0f;
      return op;
    };
    return inst;
  }
};

std::vector<std::shared_ptr<const OpCase>> make_cases() {
  std::vector<std::shared_ptr<const OpCase>> c;
  const GgmlType quant[] = {GgmlType::Q4_0,    GgmlType::Q4_1,   GgmlType::Q5_0,    GgmlType::Q5_1,  GgmlType::Q8_0,
                            GgmlType::Q2_K,    GgmlType::Q3_K,   GgmlType::Q4_K,    GgmlType::Q5_K,  GgmlType::Q6_K,
                            GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S,   GgmlType::IQ3_XXS, GgmlType::IQ3_S,
                            GgmlType::IQ1_S,   GgmlType::IQ1_M,  GgmlType::IQ4_NL,  GgmlType::IQ4_XS, GgmlType::MXFP4,
                            GgmlType::TQ1_0,   GgmlType::TQ2_0};
  for (GgmlType t : quant) {
    // 32-value types get a row of 7 spans (a partial group of 8); 256-value types three super-blocks.
    const int64_t n_in = format::traits(t).block_elems == 256 ? 768 : 224;
    for (int64_t n_tok : {1, 5, 9}) c.push_back(std::make_shared<MulMatCase>(t, n_in, 37, n_tok));
  }
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
    for (int64_t n_tok : {1, 9}) c.push_back(std::make_shared<MulMatCase>(t, 203, 37, n_tok));
  }
  // Long rows and many tokens: the kernels walk rows in cache-sized blocks and tokens in chunks of 8.
  c.push_back(std::make_shared<MulMatCase>(GgmlType::Q8_0, 4096, 61, 17));
  c.push_back(std::make_shared<MulMatCase>(GgmlType::Q4_K, 8192, 45, 11));
  c.push_back(std::make_shared<MulMatCase>(GgmlType::F16, 4096, 29, 3));
  // Float one-token products (the MoE router): one row a block with float4 staging, a partial row count, more
  // rows than the one-row-a-block limit (four rows a block), two and four tokens, and 16-bit weights.
  for (int64_t n_out : {128, 60}) c.push_back(std::make_shared<MulMatCase>(GgmlType::F32, 2048, n_out, 1));
  c.push_back(std::make_shared<MulMatCase>(GgmlType::F32, 1024, 2050, 2));
  c.push_back(std::make_shared<MulMatCase>(GgmlType::F32, 512, 67, 4));
  c.push_back(std::make_shared<MulMatCase>(GgmlType::BF16, 2048, 128, 1));
  // Float weights over many tokens (the vision encoder): the GPU's tiles of 128 rows x 8 tokens, partial in both.
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
    c.push_back(std::make_shared<MulMatCase>(t, 328, 133, 21));
  }
  // Prefill windows: the GPU's tiled products (64 rows x 32 tokens), with partial row and token tiles.
  for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0}) {
    for (int64_t n_tok : {33, 130}) c.push_back(std::make_shared<MulMatCase>(t, 1024, 70, n_tok));
  }
  // Expert types of the placement-invariance issue, a q4_k_m-style mix, and float experts.
  const std::pair<GgmlType, GgmlType> moe_types[] = {
      {GgmlType::Q4_K, GgmlType::Q4_K},     {GgmlType::Q5_K, GgmlType::Q5_K},   {GgmlType::Q6_K, GgmlType::Q6_K},
      {GgmlType::Q8_0, GgmlType::Q8_0},     {GgmlType::IQ2_XS, GgmlType::IQ2_XS}, {GgmlType::IQ3_S, GgmlType::IQ3_S},
      {GgmlType::IQ4_XS, GgmlType::IQ4_XS}, {GgmlType::MXFP4, GgmlType::MXFP4}, {GgmlType::Q4_K, GgmlType::Q6_K},
      {GgmlType::F16, GgmlType::F16},       {GgmlType::Q4_K, GgmlType::F32}};
  for (const auto& [in, down] : moe_types) {
    c.push_back(std::make_shared<MoeCase>(in, down, 512, 256, 1, 2, true));
    c.push_back(std::make_shared<MoeCase>(in, down, 512, 256, 7, 3, true));
  }
  c.push_back(std::make_shared<MoeCase>(GgmlType::Q4_K, GgmlType::Q6_K, 512, 256, 5, 2, false));
  // Decode, a verify window, and a prefill chunk where experts share tokens (the GPU groups pairs by expert).
  for (int64_t n_tok : {1, 6, 40}) {
    c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 512, 256, n_tok, 4));
  }
  // Prefill windows with many pairs per expert: the GPU's tiled experts (tiles of up to 32 pairs).
  for (int64_t n_tok : {33, 130}) {
    c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 512, 256, n_tok, 4));
    c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q4_K, 512, 768, n_tok, 4));
  }
  // The decode kernels' shapes: qwen3-30b-a3b's k 8 and n_ff 768 (one batch of down spans per thread), n_ff 1024
  // (a second, partial batch), n_embd 2304 (x blocks past the first loads), k 16 with repeated experts (stable
  // order for equal ids, two reduce passes), a q4_K down.
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 256, 768, 1, 8));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q4_K, 256, 768, 2, 8));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 512, 1024, 1, 8));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q4_K, 2304, 256, 2, 8));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q5_0, 5120, 96, 1, 4));  // x's blocks in 3 rounds
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 512, 256, 3, 16, true));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q8_0, GgmlType::Q8_0, 256, 96, 4, 5, true));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q8_0, GgmlType::Q8_0, 256, 96, 3, 2));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::F16, GgmlType::F32, 256, 64, 2, 3));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::IQ3_S, GgmlType::Q5_K, 512, 256, 5, 2));
  // Every other type of the decode kernels, one token and two (a precomputed third): the 32-value types as
  // llama.cpp's recipes fall back to them (GLM-4.5's Q4_K experts with 1408-value Q5_0 down rows: n_ff not a
  // multiple of 256), and the i-quants of the 1- to 3-bit recipes.
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::IQ4_NL}) {
    c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, t, 512, 96, 1, 8));
    c.push_back(std::make_shared<MoeRoutedCase>(t, t, 256, 96, 2, 4, false, Precomputed::EveryThird));
  }
  for (GgmlType t : {GgmlType::IQ1_S, GgmlType::IQ1_M, GgmlType::IQ2_XXS, GgmlType::IQ2_S, GgmlType::IQ3_XXS,
                     GgmlType::IQ3_S}) {
    c.push_back(std::make_shared<MoeRoutedCase>(t, t, 256, 256, 1, 8));
    c.push_back(std::make_shared<MoeRoutedCase>(t, t, 512, 256, 2, 4, false, Precomputed::EveryThird));
  }
  // Precomputed rows (src3) for some experts: decode windows, a token with every row precomputed, repeated ids,
  // and a prefill window.
  const auto every_third = Precomputed::EveryThird, first_token = Precomputed::FirstToken;
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 256, 768, 1, 8, false, every_third));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 256, 768, 1, 8, false, first_token));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q4_K, 512, 256, 2, 8, false, every_third));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 512, 256, 2, 4, false, first_token));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 512, 256, 8, 4, false, every_third));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q8_0, GgmlType::Q8_0, 256, 96, 8, 5, true, every_third));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 512, 256, 3, 16, true, first_token));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 512, 256, 40, 4, false, every_third));
  // src3 on prefill windows (backend 1.4: GPUs take it on every window): many pairs per expert (the GPU's tiled
  // experts), a token with every row precomputed and repeated ids there; few pairs per expert (its pair kernels),
  // float experts (no tiled kernel) and IQ3_S ones (tiled since MXFP4 and the grid i-quants got tiles; the pair
  // kernels over a quantized prefill window are the TQ2_0 case at the end).
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q4_K, 512, 768, 130, 4, false, every_third));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 512, 256, 33, 4, true, first_token));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 512, 256, 20, 3, false, every_third));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 512, 256, 12, 4, false, first_token));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::F16, GgmlType::F32, 256, 64, 17, 3, false, every_third));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::IQ3_S, GgmlType::Q5_K, 512, 256, 24, 4, false, every_third));
  // A long window whose (token, expert) pairs do not fit the GPU grouping's shared memory (12,320 of them, past its
  // 12,256; on the H100, runtime.batch 2048 at a 25% budget was refused for its 16,384): float experts take the
  // pair kernels. Small rows keep it cheap under the sanitizers.
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::F16, GgmlType::F32, 128, 32, 1540, 8));
  // Rows out (backend 1.4): one column per pair whose entry has a gate, the NULL entries' columns untouched, in
  // windows of every GPU path: decode (1 and 5 tokens, k 16 with repeated ids), the pair kernels (20 tokens, k 3:
  // few pairs per expert; float experts), IQ3_S experts (tiled) and the tiled experts (40 and 130 tokens, repeated
  // ids at 33).
  const auto rows = RoutedOut::Rows;
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 256, 768, 1, 8, false, every_third, rows));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q4_K, 512, 256, 5, 4, false, first_token, rows));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 512, 256, 3, 16, true, every_third, rows));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 512, 256, 20, 3, false, every_third, rows));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::F16, GgmlType::F32, 256, 64, 17, 3, false, first_token, rows));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::IQ3_S, GgmlType::Q5_K, 512, 256, 24, 4, false, every_third, rows));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 512, 256, 40, 4, false, every_third, rows));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q4_K, 512, 768, 130, 4, false, first_token, rows));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 512, 256, 33, 4, true, every_third, rows));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q6_K, 512, 256, 9, 8, false, Precomputed::None, rows));
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::Q4_K, GgmlType::Q8_0, GgmlType::IQ4_NL}) {
    c.push_back(std::make_shared<GetRowsCase>(t, format::traits(t).block_elems == 256 ? 512 : 96, 11, 5));
  }
  for (bool w : {true, false}) {
    for (bool s : {false, true}) c.push_back(std::make_shared<RmsNormCase>(203, 5, w, s));
  }
  c.push_back(std::make_shared<RmsNormCase>(2048, 3, true, false));
  for (uint32_t kind : {STRATA_OP_ADD, STRATA_OP_MUL}) {
    c.push_back(std::make_shared<ElementwiseCase>(kind, 203, 5, false, true));
    c.push_back(std::make_shared<ElementwiseCase>(kind, 203, 5, true, false));
  }
  c.push_back(std::make_shared<ElementwiseCase>(STRATA_OP_SWIGLU, 203, 5, false, false));
  c.push_back(std::make_shared<ElementwiseCase>(STRATA_OP_SWIGLU, 203, 5, false, true));
  c.push_back(std::make_shared<RopeCase>(0, 64, 5, 3, 64));
  c.push_back(std::make_shared<RopeCase>(2, 128, 3, 4, 128));
  c.push_back(std::make_shared<RopeCase>(2, 80, 2, 3, 32));
  // glm4moe's partial rotary: neox on the first half of each head, the rest passed through (tiny-s1: 64 / 32;
  // GLM-4.5: 128 / 64).
  c.push_back(std::make_shared<RopeCase>(2, 64, 4, 5, 32));
  c.push_back(std::make_shared<RopeCase>(2, 128, 3, 3, 64));
  for (GgmlType t : {GgmlType::F16, GgmlType::Q8_0}) {
    c.push_back(std::make_shared<KvStoreCase>(t, 256, 13, 1));
    c.push_back(std::make_shared<KvStoreCase>(t, 96, 13, 5));
  }
  for (GgmlType t : {GgmlType::F16, GgmlType::Q8_0, GgmlType::F32}) {
    c.push_back(std::make_shared<AttentionCase>(t, 64, 4, 4, 37, 1));
    c.push_back(std::make_shared<AttentionCase>(t, 128, 8, 2, 29, 5));
  }
  // The GPU's split-K path over a long cache (many chunks to combine), a 16-token window, head_dim 256 and an odd
  // one (no vector loads), group 1 and 8; its query-tiled path (32+ blocks of 64 or 32 rows) with groups 8, 3
  // (rows crossing tokens) and 2, head_dim 128, 64 and 200 (zero-padded to 256).
  c.push_back(std::make_shared<AttentionCase>(GgmlType::F16, 128, 8, 2, 5000, 2));
  c.push_back(std::make_shared<AttentionCase>(GgmlType::Q8_0, 64, 8, 1, 300, 16));
  c.push_back(std::make_shared<AttentionCase>(GgmlType::F16, 256, 2, 2, 70, 3));
  c.push_back(std::make_shared<AttentionCase>(GgmlType::F32, 37, 2, 1, 50, 3));
  c.push_back(std::make_shared<AttentionCase>(GgmlType::F16, 128, 32, 4, 100, 64));
  c.push_back(std::make_shared<AttentionCase>(GgmlType::Q8_0, 64, 48, 16, 40, 24));
  c.push_back(std::make_shared<AttentionCase>(GgmlType::F32, 200, 32, 16, 45, 20));
  // Decode at the split path's chunk boundaries (qwen3-30b-a3b's heads; a capacity of 32 splits of one 32-position
  // tile each): one chunk, two, the first tile of a fifth, all 32; three tokens of one and two
  // chunks in one launch. Then the most splits (256, two tiles a chunk past 8192 positions): all 256, and 129.
  for (int64_t first : {0, 31, 32, 127, 128, 999}) {
    c.push_back(std::make_shared<AttentionCase>(GgmlType::F16, 128, 32, 4, 1000, 1, first));
  }
  c.push_back(std::make_shared<AttentionCase>(GgmlType::F16, 128, 32, 4, 1000, 3, 30));
  for (int64_t first : {8191, 8199}) c.push_back(std::make_shared<AttentionCase>(GgmlType::F16, 128, 2, 1, 8200, 1, first));
  // A long capacity (33000 positions: 256 splits of five tiles) near its end.
  c.push_back(std::make_shared<AttentionCase>(GgmlType::F16, 128, 2, 1, 33000, 1, 32999));
  // stories260K with a q8_0 cache: heads of 8 values share their columns' q8_0 blocks.
  c.push_back(std::make_shared<AttentionCase>(GgmlType::Q8_0, 8, 8, 8, 64, 1));
  c.push_back(std::make_shared<AttentionCase>(GgmlType::Q8_0, 8, 8, 4, 64, 40));
  c.push_back(std::make_shared<RouterCase>(128, 8, 3, 0, true, false));
  c.push_back(std::make_shared<RouterCase>(60, 4, 5, 0, false, false));
  c.push_back(std::make_shared<RouterCase>(64, 6, 3, 1, true, true));
  // glm4moe's routers (sigmoid, selection bias, renormalised): tiny-s1's 16 experts top-4, GLM-4.5-Air's 128 top-8.
  c.push_back(std::make_shared<RouterCase>(16, 4, 9, 1, true, true));
  c.push_back(std::make_shared<RouterCase>(128, 8, 5, 1, true, true));
  // qwen2moe's shared-expert gate: a sigmoid ROUTER over one logit (k = 1, the weight is the sigmoid itself).
  c.push_back(std::make_shared<RouterCase>(1, 1, 7, 1, false, false));
  c.push_back(std::make_shared<RouterCase>(8, 2, 7, 0, true, false));
  // Decode shapes (one token), one expert a thread up to 256 experts, four past that (300 and 1024 experts).
  c.push_back(std::make_shared<RouterCase>(128, 8, 1, 0, true, false));
  c.push_back(std::make_shared<RouterCase>(256, 8, 1, 1, true, true));
  c.push_back(std::make_shared<RouterCase>(300, 16, 2, 0, true, true));
  c.push_back(std::make_shared<RouterCase>(1024, 8, 3, 0, true, false));
  c.push_back(std::make_shared<RouterCase>(1024, 5, 2, 1, false, true));
  c.push_back(std::make_shared<SoftmaxCase>(203, 5, 0.7f, false));
  c.push_back(std::make_shared<SoftmaxCase>(37, 6, 1.0f, true));
  c.push_back(std::make_shared<CopyCase>(GgmlType::F32, 2048, 3, 5));
  c.push_back(std::make_shared<CopyCase>(GgmlType::I32, 1280, 1, 0));  // a table of 128 expert entries
  c.push_back(std::make_shared<CopyCase>(GgmlType::I32, 7, 300, 1));
  c.push_back(std::make_shared<SignalCase>(1));
  c.push_back(std::make_shared<SignalCase>(-7));
  // Positions up to 262,144 (a long context): a float angle would be 0.03 rad off there (the GPU's float rope
  // keeps it in float-float). At the end, so the cases before keep their seeds.
  c.push_back(std::make_shared<RopeCase>(2, 128, 4, 6, 128, 262145));
  c.push_back(std::make_shared<RopeCase>(0, 64, 2, 5, 64, 262145));
  // Backend 1.6 (gpt-oss), after the cases before so that their seeds stay. Attention with a sliding window of 16
  // over 40 positions (token 0 at position 2, inside its window's start), a window longer than every position,
  // per-head sinks alone and with either window, on each cache type; then a prefill window whose every token's
  // window starts at another column (gpt-oss: 64 heads over 8 kv heads, head_dim 64).
  for (GgmlType t : {GgmlType::F16, GgmlType::Q8_0, GgmlType::F32}) {
    c.push_back(std::make_shared<AttentionCase>(t, 64, 4, 2, 40, 6, -1, AttentionExtras{16, false}));
    c.push_back(std::make_shared<AttentionCase>(t, 64, 4, 2, 40, 6, -1, AttentionExtras{64, false}));
    c.push_back(std::make_shared<AttentionCase>(t, 64, 4, 2, 40, 6, -1, AttentionExtras{0, true}));
    c.push_back(std::make_shared<AttentionCase>(t, 64, 4, 2, 40, 6, -1, AttentionExtras{16, true}));
    c.push_back(std::make_shared<AttentionCase>(t, 64, 4, 2, 40, 6, -1, AttentionExtras{64, true}));
  }
  c.push_back(std::make_shared<AttentionCase>(GgmlType::F16, 64, 64, 8, 300, 40, 0, AttentionExtras{16, true}));
  c.push_back(std::make_shared<AttentionCase>(GgmlType::F16, 64, 8, 1, 2000, 3, 1990, AttentionExtras{128, true}));
  // YaRN: gpt-oss-like (neox, n_rot 32 of head_dim 64, base 150000, freq_scale 1/32, ext 1, attn_factor 1.3466,
  // correction range 4..9) and deepseek-like (adjacent pairs, n_rot 16, base 10000, freq_scale 1/40, range 2..6,
  // attn_factor 1), positions up to 4096; and attn_factor alone (ext 0).
  c.push_back(std::make_shared<RopeCase>(2, 64, 4, 6, 32, 4096, RopeFreqs{150000.0f, 1.0f / 32, 1.0f, 1.3466f, 4.0f, 9.0f}));
  c.push_back(std::make_shared<RopeCase>(0, 16, 5, 6, 16, 4096, RopeFreqs{10000.0f, 1.0f / 40, 1.0f, 1.0f, 2.0f, 6.0f}));
  c.push_back(std::make_shared<RopeCase>(2, 64, 3, 4, 64, 4096, RopeFreqs{10000.0f, 0.5f, 0.0f, 1.25f, 0.0f, 0.0f}));
  // Gating 2 (gpt-oss's router: the logits choose, the weights are the softmax over the k chosen): 4 of 12 with and
  // without ties, normalised and with a selection bias, and gpt-oss-20b's 4 of 32.
  c.push_back(std::make_shared<RouterCase>(12, 4, 5, 2, false, false));
  c.push_back(std::make_shared<RouterCase>(12, 4, 5, 2, false, false, true));
  c.push_back(std::make_shared<RouterCase>(12, 4, 5, 2, true, true, true));
  c.push_back(std::make_shared<RouterCase>(32, 4, 3, 2, false, false));
  // Expert forms: SwiGLU-OAI with all three biases over float and quantized experts (F32 with partial vectors of
  // rows, MXFP4 as gpt-oss ships, Q8_0, Q4_K), and the biases alone; on MOE (rows out too) and MOE_ROUTED (sums,
  // precomputed rows, rows out).
  const Form oai = Form::OaiBiases;
  const std::pair<GgmlType, GgmlType> form_types[] = {{GgmlType::MXFP4, GgmlType::MXFP4},
                                                      {GgmlType::Q8_0, GgmlType::Q8_0},
                                                      {GgmlType::Q4_K, GgmlType::Q4_K}};
  c.push_back(std::make_shared<MoeCase>(GgmlType::F32, GgmlType::F32, 203, 90, 5, 3, true, oai));
  for (const auto& [in, down] : form_types) c.push_back(std::make_shared<MoeCase>(in, down, 512, 256, 7, 3, true, oai));
  c.push_back(std::make_shared<MoeCase>(GgmlType::Q4_K, GgmlType::Q6_K, 512, 256, 5, 2, false, Form::Biases));
  c.push_back(std::make_shared<MoeCase>(GgmlType::F32, GgmlType::F32, 203, 90, 7, 4, true, Form::OaiNan));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::F32, GgmlType::F32, 203, 90, 6, 4, false, Precomputed::None,
                                              RoutedOut::Sums, oai));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::MXFP4, GgmlType::MXFP4, 256, 160, 1, 4, false,
                                              Precomputed::None, RoutedOut::Sums, oai));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::MXFP4, GgmlType::MXFP4, 256, 160, 40, 4, false,
                                              Precomputed::None, RoutedOut::Sums, oai));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q8_0, GgmlType::Q8_0, 256, 96, 4, 5, true, Precomputed::None,
                                              RoutedOut::Sums, oai));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q4_K, 512, 256, 33, 4, false,
                                              Precomputed::None, RoutedOut::Sums, oai));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q4_K, GgmlType::Q4_K, 512, 256, 8, 4, false, every_third,
                                              RoutedOut::Sums, oai));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::MXFP4, GgmlType::MXFP4, 256, 160, 20, 3, false, every_third,
                                              rows, oai));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::Q8_0, GgmlType::Q8_0, 256, 96, 4, 5, true, Precomputed::None,
                                              RoutedOut::Sums, Form::Biases));
  // Backend 1.6 (deepseek2), after the cases before so that their seeds stay. MUL_MAT over stacks of 4 and 16
  // matrices: the absorbed query's strided views (src1 columns 16 floats past the row, dst columns 16 past theirs:
  // the tiny file's 64 + 16) and the dense V_b product, over F32, F16 and Q8_0; DeepSeek-V3's K_b (128 x 512 per head)
  // for one token.
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0}) {
    c.push_back(std::make_shared<StackedMulMatCase>(t, 32, 64, 4, 3, 16, 16));
    c.push_back(std::make_shared<StackedMulMatCase>(t, 64, 32, 16, 5));
    c.push_back(std::make_shared<StackedMulMatCase>(t, 96, 40, 16, 9, 32, 8));
  }
  c.push_back(std::make_shared<StackedMulMatCase>(GgmlType::Q8_0, 128, 512, 16, 1, 64, 64));
  // Value heads narrower than key heads: the latent (one kv head, V the keys' first columns) of the tiny file (80 /
  // 64) and of DeepSeek-V3 (576 / 512, q8_0 too), a decode step of 16 heads; and a separate value cache with dv
  // below and above dk (two kv heads).
  for (GgmlType t : {GgmlType::F16, GgmlType::F32}) {
    c.push_back(std::make_shared<LatentAttentionCase>(t, 80, 64, 4, 1, 37, 5, true));
  }
  for (GgmlType t : {GgmlType::F16, GgmlType::Q8_0, GgmlType::F32}) {
    c.push_back(std::make_shared<LatentAttentionCase>(t, 576, 512, 8, 1, 20, 3, true));
  }
  c.push_back(std::make_shared<LatentAttentionCase>(GgmlType::F16, 576, 512, 16, 1, 300, 1, true));
  c.push_back(std::make_shared<LatentAttentionCase>(GgmlType::F16, 64, 32, 4, 2, 30, 3, false));
  c.push_back(std::make_shared<LatentAttentionCase>(GgmlType::Q8_0, 64, 96, 4, 2, 30, 3, false));
  // Expert groups: DeepSeek-V3's 256 experts in 8 groups of 32, 4 kept, k 8, sigmoid with a selection bias, with
  // and without ties; softmax over 4 groups of 4 keeping 2; groups of one expert.
  c.push_back(std::make_shared<RouterCase>(256, 8, 5, 1, true, true, false, RouterGroups{8, 4}));
  c.push_back(std::make_shared<RouterCase>(256, 8, 5, 1, true, true, true, RouterGroups{8, 4}));
  c.push_back(std::make_shared<RouterCase>(16, 4, 7, 0, false, false, false, RouterGroups{4, 2}));
  c.push_back(std::make_shared<RouterCase>(8, 2, 3, 1, true, true, false, RouterGroups{8, 3}));
  // RMS_NORM and ROPE on deepseek2's strided views: the latent (the first 64 of 80-wide columns), the key's rope part
  // ([16, 1, n], rows 80 apart) and the query's ([16, n_head, n] from rows 48 apart into rows 80 apart), YaRN.
  c.push_back(std::make_shared<RmsNormCase>(64, 5, true, false, RowStrides{80, 80}));
  c.push_back(std::make_shared<RmsNormCase>(64, 3, true, true, RowStrides{80, 72}));
  const RopeFreqs deepseek{10000.0f, 1.0f / 40, 1.0f, 1.0f, 2.0f, 6.0f};
  c.push_back(std::make_shared<RopeCase>(0, 16, 1, 6, 16, 4096, deepseek, RowStrides{80, 80}));
  c.push_back(std::make_shared<RopeCase>(0, 16, 4, 5, 16, 4096, deepseek, RowStrides{48, 80}));
  c.push_back(std::make_shared<RopeCase>(2, 32, 3, 4, 16, 40000, RopeFreqs{}, RowStrides{40, 0}));
  // A plain MUL_MAT and KV_STORE over strided columns (quantized and float weights; f16 and q8_0 caches).
  c.push_back(std::make_shared<MulMatCase>(GgmlType::Q8_0, 64, 37, 5, RowStrides{80, 48}));
  c.push_back(std::make_shared<MulMatCase>(GgmlType::F16, 64, 37, 9, RowStrides{72, 40}));
  for (GgmlType t : {GgmlType::F16, GgmlType::Q8_0}) c.push_back(std::make_shared<KvStoreCase>(t, 64, 13, 5, 80));
  // Backend 1.7, Qwen3-VL's vision encoder: LAYER_NORM over its widths (1152, 4608) and an odd one, weight and bias
  // each present or absent, in place, NaN and Inf, large epsilons; GELU over its MLP widths (4304, 4608) and an odd one in both forms,
  // in place, NaN and Inf; ROPE mode 24 over its heads (72 wide, and 64) with a quarter of head_dim in each section,
  // in place, and unequal sections with values past n_rot (copied).
  c.push_back(std::make_shared<LayerNormCase>(1152, 16, true, true, false));
  c.push_back(std::make_shared<LayerNormCase>(4608, 9, true, true, false));
  c.push_back(std::make_shared<LayerNormCase>(37, 5, false, false, false));
  c.push_back(std::make_shared<LayerNormCase>(37, 5, true, false, false));
  c.push_back(std::make_shared<LayerNormCase>(1152, 3, false, true, false));
  c.push_back(std::make_shared<LayerNormCase>(1152, 12, true, true, true));
  c.push_back(std::make_shared<LayerNormCase>(4608, 4, false, false, true));
  c.push_back(std::make_shared<LayerNormCase>(37, 6, true, true, false, true));
  c.push_back(std::make_shared<LayerNormCase>(37, 4, true, true, false, false, 0.5f));
  c.push_back(std::make_shared<LayerNormCase>(1152, 2, false, false, true, false, 3.0f));
  for (bool table : {false, true}) {
    c.push_back(std::make_shared<GeluCase>(4304, 5, table, false));
    c.push_back(std::make_shared<GeluCase>(4608, 3, table, true));
    c.push_back(std::make_shared<GeluCase>(37, 5, table, false));
    c.push_back(std::make_shared<GeluCase>(203, 4, table, false, true));
  }
  c.push_back(std::make_shared<MultiRopeCase>(24, 72, 16, 50, 72, std::array{18, 18, 0, 0}, false));
  c.push_back(std::make_shared<MultiRopeCase>(24, 64, 16, 50, 64, std::array{16, 16, 0, 0}, false));
  c.push_back(std::make_shared<MultiRopeCase>(24, 72, 16, 49, 72, std::array{18, 18, 0, 0}, true));
  c.push_back(std::make_shared<MultiRopeCase>(24, 80, 3, 7, 64, std::array{20, 12, 0, 0}, false));
  // Mode 40, Qwen3-VL's text model: its real sections (24, 20, 20, 0) over 128-wide heads, the tiny files'
  // (12, 10, 10, 0), sections that leave pairs to e, text positions, in place.
  c.push_back(std::make_shared<MultiRopeCase>(40, 128, 4, 9, 128, std::array{24, 20, 20, 0}, false));
  c.push_back(std::make_shared<MultiRopeCase>(40, 64, 4, 17, 64, std::array{12, 10, 10, 0}, false));
  c.push_back(std::make_shared<MultiRopeCase>(40, 64, 2, 5, 64, std::array{8, 6, 6, 4}, true));
  c.push_back(std::make_shared<MultiRopeCase>(40, 128, 4, 9, 128, std::array{24, 20, 20, 0}, false, true));
  // The GPU's decode kernels for IQ2_XS (Qwen3-235B's 2-bit recipe) and MXFP4 (gpt-oss) experts: one token at
  // qwen3's k 8 and n_ff 768, a verify window with repeated ids and precomputed rows, rows out.
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::IQ2_XS, GgmlType::IQ2_XS, 256, 768, 1, 8));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::IQ2_XS, GgmlType::IQ2_XS, 512, 256, 5, 8, true, every_third));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::IQ2_XS, GgmlType::IQ2_XS, 256, 256, 3, 4, false, first_token,
                                              rows));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::MXFP4, GgmlType::MXFP4, 256, 160, 5, 4, true, every_third,
                                              RoutedOut::Sums, oai));
  // The router's product in verify windows of 5 to 8 tokens: the GPU's staged launches of up to 4 tokens each.
  for (int64_t n_tok : {5, 8}) c.push_back(std::make_shared<MulMatCase>(GgmlType::F32, 2048, 128, n_tok));
  // The GPU's tiled products of MXFP4 (gpt-oss) and the grid i-quants (IQ2_XS: Qwen3-235B's 2-bit recipe; IQ2_XXS
  // to IQ1_M: the low-bit DeepSeek and Kimi files) over prefill windows (the types with 16-value scales, IQ2_XS,
  // IQ2_S and IQ1_M, have tiles on sm_90 only). MUL_MAT as for Q4_K above (64 rows x 32 tokens, partial in both),
  // and MXFP4 rows of 33 spans (a last chunk of one span, 17-byte blocks at every offset in a 16-byte unit).
  for (GgmlType t : {GgmlType::MXFP4, GgmlType::IQ2_XS, GgmlType::IQ2_XXS, GgmlType::IQ2_S, GgmlType::IQ3_XXS,
                     GgmlType::IQ3_S, GgmlType::IQ1_S, GgmlType::IQ1_M}) {
    for (int64_t n_tok : {33, 130}) c.push_back(std::make_shared<MulMatCase>(t, 1024, 70, n_tok));
  }
  c.push_back(std::make_shared<MulMatCase>(GgmlType::MXFP4, 1056, 70, 40));
  // Tiled experts (16 experts, k 4: four or more pairs per expert) as for Q4_K above; gpt-oss's form over rows of
  // 17 and 9 spans with precomputed rows; IQ2_XS with rows out and with repeated ids; the low-bit mixes.
  for (int64_t n_tok : {33, 130}) {
    c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::MXFP4, GgmlType::MXFP4, 512, 256, n_tok, 4));
    c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::IQ2_XS, GgmlType::IQ2_XS, 512, 768, n_tok, 4));
  }
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::MXFP4, GgmlType::MXFP4, 544, 288, 130, 4, false, every_third,
                                              RoutedOut::Sums, oai));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::IQ2_XS, GgmlType::IQ2_XS, 512, 256, 40, 4, false, every_third,
                                              rows));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::IQ2_XS, GgmlType::IQ2_XS, 512, 256, 33, 4, true, first_token));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::IQ2_XXS, GgmlType::IQ3_XXS, 512, 256, 33, 4));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::IQ1_S, GgmlType::IQ2_S, 512, 256, 33, 4));
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::IQ1_M, GgmlType::IQ3_S, 512, 256, 33, 4));
  // A prefill window of experts without a tiled kernel (TQ2_0) and many pairs per expert: the GPU's pair kernels.
  c.push_back(std::make_shared<MoeRoutedCase>(GgmlType::TQ2_0, GgmlType::TQ2_0, 512, 256, 24, 4, false, every_third));
  // Verify windows of 2 and 8 tokens through the GPU's block-wide window kernel: a long row (8 tokens' partials
  // halve its rows a block), the output head's type, a 32-value type with a partial group of spans.
  for (int64_t n_tok : {2, 8}) {
    c.push_back(std::make_shared<MulMatCase>(GgmlType::Q4_K, 4096, 70, n_tok));
    c.push_back(std::make_shared<MulMatCase>(GgmlType::IQ4_NL, 224, 37, n_tok));
  }
  c.push_back(std::make_shared<MulMatCase>(GgmlType::Q6_K, 2048, 45, 8));
  // cpu_avx2's token tiles (16 tokens a register) on every quantized type: one tile and five tokens through the
  // one-token driver (21), two tiles the second of 12 tokens (28); 32-value types with a partial group of spans.
  for (GgmlType t : quant) {
    const int64_t n_in = format::traits(t).block_elems == 256 ? 768 : 224;
    for (int64_t n_tok : {21, 28}) c.push_back(std::make_shared<MulMatCase>(t, n_in, 37, n_tok));
  }
  return c;
}

}  // namespace

const std::vector<std::shared_ptr<const OpCase>>& all_cases() {
  static const std::vector<std::shared_ptr<const OpCase>> cases = make_cases();
  return cases;
}

}  // namespace strata::test
