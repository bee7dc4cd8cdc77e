// ROUTER (expert selection per token) and SOFTMAX, in double and rounded to float once, the reference's
// operations in its order (docs/CANONICAL_ARITHMETIC.md section 6). Softmax: e_i = s * x_i, m = max e,
// exp(e_i - m) summed over ascending i, one division per value. ROUTER: probabilities by softmax or sigmoid
// (1 / (1 + exp(-x))), selection by probability plus the optional bias, top k by descending score (ties: the lower
// id first), weights = the selected experts' probabilities, optionally divided by their sum (rank order), times
// f[0]. Gating 2 (gpt-oss, backend 1.6): the logits themselves select, and the chosen experts' weights are the
// softmax over their k logits alone, exp(c_j - c_0) / (their sum in rank order), c_0 the first chosen; then the
// normalising and f[0] as above. Expert groups (DeepSeek-V3, backend 1.6: i[3] n_group > 1, i[4] topk_group): a
// group of consecutive ids scores the sum of its two largest scores (its one for a one-expert group), the
// topk_group best groups are kept (ties: the lower group), and the top k are taken among their experts only. The
// rows are short (experts, attention-sized rows): scalar double with the libm exp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "ops.hpp"
#include "tensor_view.hpp"

namespace strata::cpu {
namespace {

// Selection order key: NaN scores sort last (as -inf), so the order stays a strict weak ordering.
double rank_key(double s) { return std::isnan(s) ? -std::numeric_limits<double>::infinity() : s; }

// p[i] = softmax(x * s)_i over n values, in double.
void softmax_row(const float* x, double s, double* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) p[i] = s * static_cast<double>(x[i]);
  const double m = *std::max_element(p, p + n);
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    p[i] = std::exp(p[i] - m);
    total = total + p[i];
  }
  for (int64_t i = 0; i < n; ++i) p[i] = p[i] / total;
}

// Gating 2: the chosen experts' logits p[order[0..k)] become their softmax, exp(c_j - c_0) over the sum in rank
// order (c_0 the first chosen's logit), in double.
void softmax_chosen(const int32_t* order, int k, double* p) {
  const double top = p[order[0]];
  std::vector<double> e(static_cast<size_t>(k));
  double total = 0.0;
  for (int j = 0; j < k; ++j) {
    e[static_cast<size_t>(j)] = std::exp(p[order[j]] - top);
    total = total + e[static_cast<size_t>(j)];
  }
  for (int j = 0; j < k; ++j) p[order[j]] = e[static_cast<size_t>(j)] / total;
}

// Expert groups: kept[g] for the topk_group best of n_group groups of consecutive experts by the sum of their two
// largest scores (ties to the lower group); group_score and groups are work space of n_group.
void keep_best_groups(const double* score, int64_t n_expert, int64_t n_group, int64_t topk_group,
                      std::vector<double>& group_score, std::vector<int32_t>& groups, std::vector<char>& kept) {
  const int64_t per = n_expert / n_group;
  for (int64_t g = 0; g < n_group; ++g) {
    const double* s = score + g * per;
    double first = s[0], second = -std::numeric_limits<double>::infinity();
    for (int64_t i = 1; i < per; ++i) {
      if (s[i] > first) {
        second = first;
        first = s[i];
      } else if (s[i] > second) {
        second = s[i];
      }
    }
    // One addition of the two largest (commutative: the order the reference adds them in does not matter).
    group_score[static_cast<size_t>(g)] = per >= 2 ? first + second : first;
  }
  std::iota(groups.begin(), groups.end(), 0);
  std::partial_sort(groups.begin(), groups.begin() + topk_group, groups.end(), [&](int32_t a, int32_t c) {
    const double sa = rank_key(group_score[static_cast<size_t>(a)]), sc = rank_key(group_score[static_cast<size_t>(c)]);
    return sa > sc || (sa == sc && a < c);
  });
  std::fill(kept.begin(), kept.end(), 0);
  for (int64_t r = 0; r < topk_group; ++r) kept[static_cast<size_t>(groups[static_cast<size_t>(r)])] = 1;
}

}  // namespace

Check check_softmax(const strata_op& op) {
  if (auto e = check_rows(op.src[0], "src0", format::GgmlType::F32)) return e;
  if (auto e = check_rows(op.dst, "dst", format::GgmlType::F32)) return e;
  if (op.dst.ne[0] != op.src[0].ne[0] || row_count(op.dst) != row_count(op.src[0])) {
    return std::string("dst shape differs from src0");
  }
  return std::nullopt;
}

void run_softmax(Context& ctx, const strata_op& op) {
  const int64_t n = op.src[0].ne[0];
  for_items(ctx, row_count(op.src[0]), n * 16, [&](int64_t b, int64_t e) {
    std::vector<double> p(static_cast<size_t>(n));
    for (int64_t r = b; r < e; ++r) {
      softmax_row(row_ptr<const float>(op.src[0], r), static_cast<double>(op.f[0]), p.data(), n);
      float* out = row_ptr<float>(op.dst, r);
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(p[static_cast<size_t>(i)]);
    }
  });
}

Check check_router(const strata_op& op) {
  const strata_tensor &logits = op.src[0], &bias = op.src[1], &weights = op.src[2], &ids = op.dst;
  if (auto e = check_matrix(logits, "src0 (logits)", format::GgmlType::F32)) return e;
  if (auto e = check_matrix(ids, "dst (ids)", format::GgmlType::I32)) return e;
  if (auto e = check_matrix(weights, "src2 (weights)", format::GgmlType::F32)) return e;
  const int k = op.i[0];
  const int64_t n_expert = logits.ne[0];
  if (k <= 0 || k > n_expert) return "k " + std::to_string(k) + " must be within 1.." + std::to_string(n_expert);
  if (op.i[1] < 0 || op.i[1] > 2) {
    return "gating " + std::to_string(op.i[1]) + " (known: 0 softmax, 1 sigmoid, 2 softmax over the chosen)";
  }
  if (op.i[3] > 1) {
    const int64_t n_group = op.i[3], topk_group = op.i[4];
    if (n_expert % n_group != 0 || topk_group < 1 || topk_group > n_group || k > topk_group * (n_expert / n_group)) {
      return "expert groups (i[3] = " + std::to_string(n_group) + ") must divide the " + std::to_string(n_expert) +
             " experts, with i[4] (groups kept) " + std::to_string(topk_group) + " in 1..groups holding at least k";
    }
  }
  if (ids.ne[0] != k || ids.ne[1] != logits.ne[1] || weights.ne[0] != k || weights.ne[1] != logits.ne[1]) {
    return std::string("dst and src2 must be [k, n_tok]");
  }
  if (bias.data != nullptr) {
    if (auto e = check_rows(bias, "src1 (bias)", format::GgmlType::F32)) return e;
    if (bias.ne[0] != n_expert || row_count(bias) != 1) return std::string("src1 (bias) must be one row of n_expert");
  }
  return std::nullopt;
}

void run_router(Context& ctx, const strata_op& op) {
  const strata_tensor &logits = op.src[0], &bias = op.src[1], &weights = op.src[2], &ids = op.dst;
  const int k = op.i[0];
  const int gating = op.i[1];
  const bool normalize = op.i[2] != 0;
  const double wscale = static_cast<double>(op.f[0]);
  const int64_t n = logits.ne[0];
  const auto* b = static_cast<const float*>(bias.data);
  const int64_t n_group = op.i[3] > 1 ? op.i[3] : 1, topk_group = op.i[4], per_group = n / n_group;
  for_items(ctx, logits.ne[1], n * 16, [&](int64_t lo, int64_t hi) {
    std::vector<double> prob(static_cast<size_t>(n)), score(static_cast<size_t>(n));
    std::vector<int32_t> order(static_cast<size_t>(n));
    std::vector<double> group_score(static_cast<size_t>(n_group));
    std::vector<int32_t> groups(static_cast<size_t>(n_group));
    std::vector<char> kept(static_cast<size_t>(n_group), 1);
    for (int64_t t = lo; t < hi; ++t) {
      const float* x = row_ptr<const float>(logits, t);
      if (gating == 1) {
        for (int64_t i = 0; i < n; ++i) prob[static_cast<size_t>(i)] = 1.0 / (1.0 + std::exp(-static_cast<double>(x[i])));
      } else if (gating == 2) {
        for (int64_t i = 0; i < n; ++i) prob[static_cast<size_t>(i)] = static_cast<double>(x[i]);
      } else {
        softmax_row(x, 1.0, prob.data(), n);
      }
      for (int64_t i = 0; i < n; ++i) {
        const double pi = prob[static_cast<size_t>(i)];
        score[static_cast<size_t>(i)] = b != nullptr ? pi + static_cast<double>(b[i]) : pi;
      }
      if (n_group > 1) keep_best_groups(score.data(), n, n_group, topk_group, group_score, groups, kept);
      std::iota(order.begin(), order.end(), 0);
      // Experts of the kept groups first (all are kept without groups), then by descending score, ties lower id.
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t c) {
        const char ka = kept[static_cast<size_t>(a / per_group)], kc = kept[static_cast<size_t>(c / per_group)];
        if (ka != kc) return ka > kc;
        const double sa = rank_key(score[static_cast<size_t>(a)]), sc = rank_key(score[static_cast<size_t>(c)]);
        return sa > sc || (sa == sc && a < c);
      });
      if (gating == 2) softmax_chosen(order.data(), k, prob.data());
      int32_t* id_out = row_ptr<int32_t>(ids, t);
      float* w_out = row_ptr<float>(weights, t);
      double sum = 0.0;
      for (int j = 0; j < k; ++j) sum = sum + prob[static_cast<size_t>(order[static_cast<size_t>(j)])];
      for (int j = 0; j < k; ++j) {
        id_out[j] = order[static_cast<size_t>(j)];
        double w = prob[static_cast<size_t>(order[static_cast<size_t>(j)])];
        if (normalize) w = w / sum;
        w_out[j] = static_cast<float>(w * wscale);
      }
    }
  });
}

}  // namespace strata::cpu
