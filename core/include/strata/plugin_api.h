/* strata/plugin_api.h: the C boundary between the Strata host and its plugins.
 *
 * The only header a plugin includes from the host. Plain C: no C++ types, exceptions or aborts cross it.
 *
 * Changelog. The ABI has a major and a minor. A differing major is refused by the host (both numbers named).
 * A minor is append-only: a member added in minor N sits at the end of its struct, and the host reads or calls
 * it only when the other side's minor is >= N, its struct_size covers it, and (for functions) it is non-NULL.
 * Each interface family has a version of its own, with the same rules, in its own changelog below.
 *
 *   ABI 1.0  (2026-11-30)  strata_plugin_descriptor, strata_host_api, strata_plugin_instance with
 *                          get_interface(family, version); STRATA_PLUGIN_DEFINE; families backend 1,
 *                          expert_pool 1, balancer 1, link 1.
 *   ABI 1.1  (2026-12-04)  strata_plugin_descriptor.required_options: the options a launch must give, so that a
 *                          listing (`strata plugins`) shows them instead of calling init with none.
 *
 * Family changelogs (family major.minor):
 *   backend 1.0      devices (count, properties); ops described by strata_op (supports_op, compute); the op list
 *                    of strata_op_kind; strata_moe_op for expert-grouped MoE.
 *   backend 1.1      STRATA_OP_MOE_ROUTED with strata_expert_table (experts chosen on the device, no host step);
 *                    STRATA_OP_TIMESTAMP (device clock stamps);
 *                    memory of a device: buffer_alloc, buffer_free, copy, synchronize (NULL for a backend whose
 *                    device addresses host memory, like cpu_avx2).
 *   backend 1.2      streams and events (stream_create/destroy, event_create/destroy/record/query/synchronize,
 *                    stream_wait), copy_async on a stream, compute_async (enqueue without waiting), host_register
 *                    (page-lock host memory the caller owns, e.g. a mapped model file, read-only) and host_unregister;
 *                    MOE_ROUTED's optional src3 (weighted rows computed elsewhere, for entries with a NULL gate).
 *   backend 1.3      STRATA_OP_COPY, STRATA_OP_SIGNAL and STRATA_OP_WAIT: a device program that hands work to the
 *                    host and waits for its results through flags in mapped memory, with no host synchronization
 *                    between its ops (the hybrid path's fast mode); MOE_ROUTED's i[0] = 1: src3's ready flag.
 *   backend 1.4      MOE_ROUTED's i[2] = 1, rows out: each computed pair's weighted row into its own column of dst,
 *                    nothing summed, so one layer's experts can be computed in several ops (chunks of experts as
 *                    their weights arrive) and summed by a last MOE_ROUTED whose src3 holds the other chunks' rows;
 *                    cuda takes src3 on every window.
 *   backend 1.5      stamps: SIGNAL's and WAIT's optional src1 (i64 [1]) and, with MOE_ROUTED's i[3] = 1, the i64 after
 *                    src3's ready flag (first 8-byte boundary) get the device's clock (TIMESTAMP's) as the flag is
 *                    raised, as the wait ends, and as the sums start waiting on the ready flag: a program's hand-offs
 *                    timed on the device with no launch of their own.
 *   backend 1.6      gpt-oss's and deepseek2's ops: strata_op.src4 (appended; ATTENTION's sinks); ATTENTION's i[2]
 *                    sliding window and value heads of their own size; MUL_MAT over a stack of matrices (per head);
 *                    ROUTER's expert groups (i[3], i[4]);
 *                    ROPE's YaRN (f[2] ext_factor, f[3] attn_factor, f[4..5] correction range); ROUTER's gating 2
 *                    (top-k by logit, weights softmaxed over the chosen); strata_expert_form (expert biases and the
 *                    clamped SwiGLU-OAI) through strata_moe_op.form and strata_expert_table.form (appended).
 *                    A backend that does not compute a form, a window, sinks or YaRN says so in supports_op.
 *                    strata_op grew, and ops travel in arrays, so the host refuses a backend plugin below 1.6 and
 *                    a plugin refuses op arrays whose struct_size is not its own sizeof(strata_op).
 *   backend 1.7      the vision encoder's ops (Qwen3-VL's projector on the engine's backend): STRATA_OP_LAYER_NORM,
 *                    STRATA_OP_GELU and ROPE's mode 24 (2-D vision rotary: neox halves, the rotated pairs split
 *                    between a row and a column section, each section's frequencies counted from 0). Appended kinds:
 *                    the host asks supports_op before using them and encodes images on the CPU otherwise.
 *   backend 1.8      copy_batch_async: many host-to-device copies enqueued in one call (an expert of a mapped
 *                    GGUF is three slices; a MoE layer's misses are a dozen), where each copy_async costs the
 *                    host some microseconds on the critical path. The host loops over copy_async when it is NULL.
 *   expert_pool 1.0  worker_count; compute(moe): one weighted row per (token, expert), never a summed row.
 *   expert_pool 1.1  set_worker_limit(n): later calls use at most n workers (0: all again), so that another
 *                    process gets the other cores (POOL_HOLD); the rows' bytes do not change.
 *   expert_pool 1.2  describe(): one line, how many threads compute and why (the host's set-up line).
 *   balancer 1.0     observe(samples) after a window; choose(layer, misses) -> how many go over PCIe.
 *   link 1.0         peer residency lookup and liveness of the other engine.
 *
 * Ownership and lifetime: strings and tables a plugin returns stay valid until its instance is destroyed; the
 * host never unloads a library while anything it made is alive. Statuses are made by the host (status_new)
 * and owned by whoever receives them; NULL means OK.
 */
#ifndef STRATA_PLUGIN_API_H
#define STRATA_PLUGIN_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STRATA_ABI_MAJOR 1u
#define STRATA_ABI_MINOR 1u

#if defined(__GNUC__)
#define STRATA_EXPORT __attribute__((visibility("default")))
#else
#define STRATA_EXPORT
#endif

/* ---- statuses ------------------------------------------------------------------------------------------ */

/* Opaque; made by the host's status_new, read by the host. NULL is success. */
typedef struct strata_status strata_status;

typedef enum strata_status_code {
  STRATA_OK = 0,
  STRATA_ERR_INVALID_ARGUMENT = 1, /* bad option, bad value, bad shape */
  STRATA_ERR_UNSUPPORTED = 2,      /* the plugin cannot do this here (op, type, device) */
  STRATA_ERR_OUT_OF_MEMORY = 3,
  STRATA_ERR_DEVICE = 4,           /* driver or device failure */
  STRATA_ERR_INTERNAL = 5,         /* a bug, or an exception caught at the boundary */
  STRATA_ERR_UNAVAILABLE = 6       /* a peer or resource that is gone or not ready */
} strata_status_code;

/* ---- logging --------------------------------------------------------------------------------------------- */

typedef enum strata_log_level {
  STRATA_LOG_DEBUG = 0,
  STRATA_LOG_INFO = 1,
  STRATA_LOG_WARN = 2,
  STRATA_LOG_ERROR = 3
} strata_log_level;

/* ---- what the host gives a plugin at init --------------------------------------------------------------- */

typedef struct strata_host_api {
  uint32_t struct_size; /* sizeof(strata_host_api) as the host was built */
  uint32_t abi_major;
  uint32_t abi_minor;
  uint32_t reserved0;
  /* 1.0 */
  void (*log)(strata_log_level level, const char* plugin_name, const char* message);
  strata_status* (*status_new)(strata_status_code code, const char* message);
  const char* (*host_version)(void); /* "0.1.0" */
} strata_host_api;

/* ---- what a plugin says about itself, before init --------------------------------------------------------- */

typedef enum strata_plugin_kind {
  STRATA_KIND_BACKEND = 1, /* a device backend (cpu_avx2, cuda, hip); may also provide an expert_pool */
  STRATA_KIND_FEATURE = 2  /* a feature behind a family interface (pcie_balance: balancer; peerlink: link) */
} strata_plugin_kind;

typedef struct strata_plugin_descriptor {
  uint32_t struct_size; /* sizeof(strata_plugin_descriptor) as the plugin was built */
  uint32_t abi_major;   /* STRATA_ABI_MAJOR the plugin was built against */
  uint32_t abi_minor;
  uint32_t kind;        /* strata_plugin_kind */
  const char* name;     /* "cpu_avx2": what YAML launches call it */
  const char* version;  /* the plugin's own version, "0.1.0" */
  const char* families; /* the interface families it provides, comma-separated: "backend,expert_pool" */
  uint32_t score;       /* 0: not usable on this machine (a normal outcome); higher wins for `auto` */
  uint32_t reserved0;
  const char* score_reason; /* why the score is what it is: "AVX2+FMA+F16C", "no AMD GPU" */
  /* 1.1 */
  const char* required_options; /* the options init fails without, comma-separated KEY=WHAT ("file=PATH,role=0|1");
                                 * NULL or "": none. A host that lists plugins does not call init with no options
                                 * for such a plugin: it shows it usable with what a launch must give it. */
} strata_plugin_descriptor;

/* ---- a plugin instance ------------------------------------------------------------------------------------ */

typedef struct strata_plugin_instance {
  uint32_t struct_size; /* sizeof(strata_plugin_instance) as the plugin was built */
  uint32_t reserved0;
  void* ctx;
  /* 1.0: the table of `family` at major `version`, or NULL when not provided. The table starts with
   * strata_interface_header; it stays valid until destroy. */
  const void* (*get_interface)(void* ctx, const char* family, uint32_t version);
  void (*destroy)(void* ctx);
} strata_plugin_instance;

/* Every family table starts with this. */
typedef struct strata_interface_header {
  uint32_t struct_size;
  uint32_t minor;
} strata_interface_header;

/* ---- family: backend -------------------------------------------------------------------------------------- */

#define STRATA_BACKEND_FAMILY "backend"
#define STRATA_BACKEND_VERSION 1u
#define STRATA_BACKEND_MINOR 8u

typedef enum strata_device_kind { STRATA_DEVICE_CPU = 1, STRATA_DEVICE_GPU = 2 } strata_device_kind;

typedef struct strata_device_info {
  uint32_t struct_size;
  uint32_t kind;            /* strata_device_kind */
  const char* name;         /* "NVIDIA H200", "Intel Xeon (AVX-512 VNNI)" */
  const char* arch;         /* "sm_90", "gfx90a", "x86-64-v4" */
  uint64_t memory_total;    /* bytes */
  uint64_t memory_free;     /* bytes, at the time of the call */
  uint32_t compute_units;   /* SMs, CUs or worker threads */
  uint32_t reserved0;
} strata_device_info;

/* A tensor the host describes. `data` is memory the backend can address (host memory for a CPU backend, memory
 * from buffer_alloc for a GPU). ne[0] is the innermost dimension (ggml's order); nb[] are byte strides; rows of
 * block types are whole blocks. Unused dimensions have ne = 1. */
typedef struct strata_tensor {
  void* data;
  uint32_t type;     /* ggml type id (F32 = 0, F16 = 1, I32 = 26, quantized types as GGUF stores them) */
  uint32_t n_dims;
  int64_t ne[4];
  uint64_t nb[4];
} strata_tensor;

/* The ops a backend runs. Shapes are given per op; "rows" are ne[0]-long vectors, one per token unless said.
 * Every op's exact semantics (and its reference implementation) is in core/src/reference/; matrix products and
 * experts follow docs/CANONICAL_ARITHMETIC.md bit for bit. */
typedef enum strata_op_kind {
  STRATA_OP_GET_ROWS = 1,    /* dst f32 [n_embd, n_tok] = src0 (table [n_embd, n_vocab], any type) rows at src1 (i32 [n_tok]) */
  STRATA_OP_RMS_NORM = 2,    /* dst f32 = src0 f32 [n, rows] * (1/sqrt(mean(x^2) + f[0] eps)) * src1 f32 [n] */
  STRATA_OP_MUL_MAT = 3,     /* dst f32 [n_out, n_tok] = src0 (weight [n_in, n_out], any type) x src1 f32 [n_in, n_tok];
                              * 1.6: src0 ne[2] = B > 1, a stack of B matrices (nb[2] apart): src1 f32 [n_in, B, n_tok]
                              * and dst f32 [n_out, B, n_tok], dst[:, b, t] = matrix b x src1[:, b, t] (per-head
                              * products: deepseek2's absorbed attention) */
  STRATA_OP_ADD = 4,         /* dst = src0 + src1 (same shape, or src1 one row broadcast) */
  STRATA_OP_MUL = 5,         /* dst = src0 * src1 (same shape, or src1 one row broadcast) */
  STRATA_OP_SWIGLU = 6,      /* dst = silu(src0) * src1 (canonical: exp_c, one division) */
  STRATA_OP_ROPE = 7,        /* dst f32 [head_dim, n_head, n_tok] = rope(src0) at positions src1 (i32 [n_tok]);
                              * i[0] mode (0 = adjacent pairs, 2 = neox halves), i[1] n_rot; f[0] freq_base, f[1] freq_scale.
                              * 1.6 YaRN: f[2] ext_factor (0: off), f[3] attn_factor (cos and sin are multiplied by it;
                              * 0 reads as 1), f[4] and f[5] the correction range lo, hi (the host floors and ceils them):
                              * with ext_factor != 0, pair p's frequency is inv_freq_p * (freq_scale * (1 - mix) + mix),
                              * mix = ext_factor * (1 - clamp((p - lo) / max(0.001, hi - lo), 0, 1)), and the angle is
                              * pos * that (core/src/reference/op_rope.cpp says it in full);
                              * 1.6 interleaved M-RoPE (Qwen3-VL): i[0] = 40 (neox pairs), i[2..5] the pairs given to
                              * the position components (t, row, column, e); src1 i32 [n_tok, 4] holds the components
                              * component-major (or [n_tok]: a text token, (p, p, p, 0)); pair k takes row when
                              * k % 3 == 1 && k < 3 i[3], column when k % 3 == 2 && k < 3 i[4], t when k % 3 == 0 &&
                              * k < 3 i[2], e otherwise;
                              * 1.7 2-D vision RoPE (Qwen3-VL's projector): i[0] = 24, neox pairs (k, k + n_rot/2) for
                              * k < n_rot/2 = i[2] + i[3]; src1 i32 [n_tok, 4] component-major as for mode 40; pair
                              * k < i[2] turns by the row component (1) with index k, pair k >= i[2] by the column
                              * component (2) with index k - i[2]; the angle is pos * freq_base^(-2 index / (n_rot/2)),
                              * no scaling (f[1..5] ignored) */
  STRATA_OP_KV_STORE = 8,    /* dst (cache [kv_dim, n_ctx], f16 or q8_0) columns at src1 (i32 [n_tok] positions) = src0 f32 [kv_dim, n_tok] */
  STRATA_OP_ATTENTION = 9,   /* dst f32 [head_dim * n_head, n_tok] = attention of src0 (q f32 [head_dim, n_head, n_tok]) over
                              * src1 (k cache) and src2 (v cache) [head_dim * n_kv_head, n_ctx], causal at positions src3
                              * (i32 [n_tok]: token t sees cache columns 0..pos_t); i[0] n_head, i[1] n_kv_head, f[0] scale.
                              * 1.6: i[2] a sliding window W (0: none): token t sees columns pos_t - W < j <= pos_t only;
                              * value heads may differ in size from key heads (deepseek2's latent attention): dv =
                              * src2.ne[0] / n_kv_head, dst f32 [dv * n_head, n_tok]; src2 may be a view of src1's
                              * first columns (rows nb[1] apart, the keys' stride);
                              * src4 (when op.struct_size covers it and src4.data is not NULL) f32 [n_head] sink logits:
                              * head h's softmax denominator gains exp(sink_h) (unscaled), no value row */
  STRATA_OP_ROUTER = 10,     /* src0 logits f32 [n_expert, n_tok] -> dst i32 ids [k, n_tok] and src2 f32 weights [k, n_tok]
                              * (an output); i[0] k, i[1] gating (0 softmax, 1 sigmoid, 2 (1.6) the k largest logits
                              * chosen, their weights the softmax over those k logits alone), i[2] normalize top-k weights;
                              * 1.6: i[3] n_group > 1 with i[4] topk_group: the experts form n_group equal groups of
                              * consecutive ids, a group's score is the sum of its two largest p_e + bias_e, and only
                              * the topk_group best groups (ties to the lower group) are eligible (DeepSeek-V3);
                              * f[0] weight scale; src1 optional f32 [n_expert] selection bias (or data NULL) */
  STRATA_OP_MOE = 11,        /* experts of a window: `extra` is a strata_moe_op; dst f32 [n_embd, n_tok] = for each token the
                              * sum of its experts' weighted rows in ascending expert id (canonical arithmetic) */
  STRATA_OP_SOFTMAX = 12,    /* dst = softmax(src0 * f[0]) per row */
  /* 1.1 */
  STRATA_OP_MOE_ROUTED = 13, /* experts chosen on the device: `extra` is a strata_expert_table; src0 x f32 [n_embd, n_tok]
                              * (the normed rows), src1 ids i32 [k, n_tok], src2 weights f32 [k, n_tok] (ROUTER's outputs);
                              * dst f32 [n_embd, n_tok] = for each token the sum of its k experts' weighted rows in ascending
                              * expert id (canonical arithmetic), exactly what MOE gives for the same choices.
                              * 1.2: src3 optional (data NULL: absent), f32 [n_embd, k * n_tok]: column t * k + j holds
                              * the weighted row of token t's pair j computed elsewhere (an expert pool's row), rows
                              * nb[1] apart, in memory the device addresses (cuda: device memory or mapped, registered
                              * host memory). A pair with a valid id whose table entry has gate == NULL takes its row
                              * from that column and computes nothing; the other pairs are computed as without src3;
                              * the sum's order (ascending id, stable by j) and every byte of dst are unchanged. Only
                              * the entries the routes name are looked at for a NULL gate. A routed entry with a NULL gate while src3 is
                              * absent is the caller's error: a backend that reads the ids on the host refuses it, one
                              * that reads them on the device cannot check it. A backend may take src3 only for some
                              * windows (supports_op says; cuda takes it on every window since 1.4, with the ready
                              * flag below on windows of up to 8 tokens).
                              * 1.3: i[0] = 1: src3 comes with a ready flag, the i32 right after its last column (at
                              * src3.data + ne[1] * nb[1]), which another thread raises (nonzero, release) once src3 is
                              * written, while the op may already run: src3 is read only after the flag is seen
                              * (acquire, system scope), the computed pairs before it. A backend that runs ops on the
                              * calling thread gives up after i[1] ms (0: 60000) with STRATA_ERR_UNAVAILABLE.
                              * 1.4: i[2] = 1, rows out: dst is f32 [n_embd, k * n_tok] (rows nb[1] apart, memory the
                              * device addresses). For each pair p = t * k + j with a valid id whose table entry has a
                              * non-NULL gate, column p = that pair's weighted row (route weight times
                              * down(SwiGLU(gate x, up x)), canonical arithmetic): exactly the bytes the summing op adds
                              * for that pair in the same window (same x, ids, weights, n_tok and table types). Other
                              * columns (NULL gate, invalid id) are not written; nothing is summed. src3 must be absent
                              * and i[0] = 0. So rows-out ops over disjoint sets of experts, then a summing MOE_ROUTED
                              * whose other entries are NULL with src3 = their columns, give dst bytes equal to one
                              * MOE_ROUTED over all experts. A backend may take rows out only for some windows
                              * (supports_op says).
                              * 1.5: i[3] = 1 (with i[0] = 1): the i64 at the first 8-byte boundary after the ready flag
                              * gets the device's clock as the op starts waiting on the flag (its own pairs computed). */
  STRATA_OP_TIMESTAMP = 14,  /* dst i64 [1] = the device's clock in nanoseconds when the op runs, after every op before
                              * it in the list (a GPU's global timer; the host's monotonic clock on a CPU): stamps
                              * around a span of ops time it on the device, inside a graph too */
  /* 1.3 */
  STRATA_OP_COPY = 15,       /* dst = src0: same type (4-byte elements: F32 or I32) and shape [ne0, ne1], rows nb[1] apart
                              * in each; either may be mapped host memory (a table the host wrote, rows it will read) */
  STRATA_OP_SIGNAL = 16,     /* dst i32 [1] in memory the host reads (mapped) = i[0], stored once every op before it is done
                              * and its writes are visible to the host (release, system scope); 1.5: src1, when it has data,
                              * an i64 [1] that gets the device's clock as the flag is raised */
  STRATA_OP_WAIT = 17,       /* the ops after it start once the i32 at src0 (memory the host writes: mapped) is >= i[0]
                              * (acquire, system scope: what the host wrote before the flag is then visible to them).
                              * Someone else must set the flag: a backend that runs ops on the calling thread waits in
                              * the op for another thread, and gives up with STRATA_ERR_UNAVAILABLE after i[1] ms
                              * (0: 60000); a GPU waits without a limit, so its host must always set the flag; 1.5: src1,
                              * when it has data, an i64 [1] that gets the device's clock as the wait ends */
  /* 1.7 */
  STRATA_OP_LAYER_NORM = 18, /* dst f32 = (x - mean(x)) / sqrt(var(x) + f[0] eps) * src1 + src2 per row of src0 f32
                              * [n, rows...] (var the mean of squared deviations); src1 (weight) and src2 (bias) f32 [n],
                              * each absent when its data is NULL. dst may be src0 (in place) */
  STRATA_OP_GELU = 19,       /* dst f32 = gelu(src0 f32), the tanh form 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2)));
                              * i[0] = 1: as ggml's CPU table computes it, f16(gelu(f16(x))) for -10 < x < 10, 0 at or
                              * below -10, x at or above 10 (f16: round to nearest even). dst may be src0 */
} strata_op_kind;

#define STRATA_OP_MAX_SRC 4
#define STRATA_OP_MAX_PARAMS 8

typedef struct strata_op {
  uint32_t struct_size;
  uint32_t kind; /* strata_op_kind */
  strata_tensor dst;
  strata_tensor src[STRATA_OP_MAX_SRC];
  int32_t i[STRATA_OP_MAX_PARAMS];
  float f[STRATA_OP_MAX_PARAMS];
  const void* extra; /* op-specific (STRATA_OP_MOE: const strata_moe_op*) */
  /* 1.6 */
  strata_tensor src4; /* a fifth source (ATTENTION: the sinks); read only when struct_size covers it */
} strata_op;

/* 1.6: what an expert computes beside its three products: biases and the gated activation. Per expert e and
 * row r (docs/CANONICAL_ARITHMETIC.md section 3): g = gate_r . x (+ gate_bias[e * n_ff + r]),
 * u = up_r . x (+ up_bias[e * n_ff + r]), h = act(g, u), y = down . h (+ down_bias[e * n_embd + r]), row = weight * y.
 * Biases are f32 in memory the backend's device addresses, NULL when absent. */
typedef enum strata_expert_activation {
  STRATA_EXPERT_SWIGLU = 0,    /* h = silu(g) * u */
  STRATA_EXPERT_SWIGLU_OAI = 1 /* gpt-oss: gc = min(g, limit), uc = clamp(u, -limit, limit) (NaN stays NaN),
                                * h = (gc / (1 + exp(-(alpha * gc)))) * (uc + 1) */
} strata_expert_activation;

typedef struct strata_expert_form {
  uint32_t activation; /* strata_expert_activation */
  float alpha, limit;  /* SWIGLU_OAI's (gpt-oss: 1.702, 7) */
  uint32_t reserved0;
  const float* gate_bias; /* [n_ff, n_expert] by expert id */
  const float* up_bias;   /* [n_ff, n_expert] */
  const float* down_bias; /* [n_embd, n_expert] */
} strata_expert_form;

/* One expert's matrices (ggml blocks), wherever they live: host RAM, a VRAM cache slot, a staging slot. */
typedef struct strata_expert_weights {
  const void* gate; /* [n_embd, n_ff] (ggml ne order: rows of n_embd) */
  const void* up;   /* [n_embd, n_ff] */
  const void* down; /* [n_ff, n_embd] */
  uint32_t gate_type, up_type, down_type;
  uint32_t reserved0;
} strata_expert_weights;

/* The experts of one layer for one window: for each listed expert, the tokens routed to it. */
typedef struct strata_moe_op {
  uint32_t n_embd, n_ff;
  uint32_t n_tok, n_experts;             /* tokens in the window; entries in `experts` */
  const uint32_t* expert_ids;            /* [n_experts] ascending */
  const strata_expert_weights* weights;  /* [n_experts] */
  const uint32_t* token_offsets;         /* [n_experts + 1] into token_index/route_weight (CSR) */
  const uint32_t* token_index;           /* which window row each (expert, token) pair reads */
  const float* route_weight;             /* the router's weight of each pair */
  const float* x;                        /* [n_embd, n_tok] the normed input rows (f32) */
  float* rows;                           /* [n_embd, n_pairs] out: one weighted row per pair, never summed; may be NULL
                                          * when only dst (the per-token sums) is wanted */
  const strata_expert_form* form;        /* 1.6: biases and activation (NULL: plain SwiGLU, no biases) */
} strata_moe_op;

/* 1.1: every expert of a layer, indexed by expert id, for STRATA_OP_MOE_ROUTED. All experts of a table share the
 * three types below (each entry's own types must equal them). `experts` and the matrices it points at are memory
 * the backend's device addresses; a table can be rewritten between computes (an expert cache moving slots). */
typedef struct strata_expert_table {
  uint32_t n_embd, n_ff, n_expert;
  uint32_t gate_type, up_type, down_type;
  const strata_expert_weights* experts; /* [n_expert] */
  const strata_expert_form* form;       /* 1.6: biases (device memory) and activation (NULL: plain SwiGLU) */
} strata_expert_table;

/* 1.1: memory of a device. */
typedef enum strata_buffer_kind {
  STRATA_BUFFER_DEVICE = 1,      /* device memory */
  STRATA_BUFFER_HOST_PINNED = 2, /* page-locked host memory the device copies from and to at full speed */
  STRATA_BUFFER_HOST_MAPPED = 3  /* page-locked host memory that kernels address directly (same pointer) */
} strata_buffer_kind;

typedef enum strata_copy_kind {
  STRATA_COPY_HOST_TO_DEVICE = 1,
  STRATA_COPY_DEVICE_TO_HOST = 2,
  STRATA_COPY_DEVICE_TO_DEVICE = 3
} strata_copy_kind;

/* 1.2: a device's queues of work. A stream runs what is enqueued on it in order; an event marks a point of a
 * stream that other streams and the host can wait for. NULL as a stream means the compute stream (where compute
 * and compute_async run their ops). */
typedef struct strata_stream_s* strata_stream;
typedef struct strata_event_s* strata_event;

/* 1.2: host_register flags. */
#define STRATA_REGISTER_READ_ONLY 1u /* the device only reads it (a read-only file mapping can be registered) */
#define STRATA_REGISTER_MAPPED 2u    /* kernels may address it directly (same pointer) */

typedef struct strata_backend_v1 {
  strata_interface_header header;
  /* 1.0 */
  uint32_t (*device_count)(void* ctx);
  strata_status* (*device_info)(void* ctx, uint32_t index, strata_device_info* out);
  /* 1 when `device` can run `op` with these types and shapes, 0 otherwise ("not supported" is not an error). */
  uint32_t (*supports_op)(void* ctx, uint32_t device, const strata_op* op);
  /* Runs ops in order on `device`; returns once all are done (GPU backends: once they are enqueued and
   * synchronized on its compute stream). */
  strata_status* (*compute)(void* ctx, uint32_t device, const strata_op* ops, size_t n_ops);
  /* 1.1; all NULL for a backend whose devices address host memory (ops then take host pointers). */
  /* `bytes` of `kind` on `device`, aligned to 256 bytes; *out is NULL on failure (a status says why). */
  strata_status* (*buffer_alloc)(void* ctx, uint32_t device, uint64_t bytes, uint32_t kind, void** out);
  void (*buffer_free)(void* ctx, uint32_t device, void* buffer);
  /* Copies `bytes` between host and device memory (strata_copy_kind); returns when the copy is done. */
  strata_status* (*copy)(void* ctx, uint32_t device, void* dst, const void* src, uint64_t bytes, uint32_t kind);
  /* Waits until everything enqueued on `device` is done. */
  strata_status* (*synchronize)(void* ctx, uint32_t device);
  /* 1.2; all NULL for a backend without streams. */
  strata_status* (*stream_create)(void* ctx, uint32_t device, strata_stream* out);
  /* Waits for the stream's work, then releases it. */
  void (*stream_destroy)(void* ctx, uint32_t device, strata_stream stream);
  strata_status* (*event_create)(void* ctx, uint32_t device, strata_event* out);
  void (*event_destroy)(void* ctx, uint32_t device, strata_event event);
  /* Marks the current end of `stream` (NULL: the compute stream). */
  strata_status* (*event_record)(void* ctx, uint32_t device, strata_event event, strata_stream stream);
  /* Work enqueued on `stream` from now on starts after `event`'s point is done. */
  strata_status* (*stream_wait)(void* ctx, uint32_t device, strata_stream stream, strata_event event);
  /* *done = 1 when everything before the event's point is done (or it was never recorded), 0 otherwise. */
  strata_status* (*event_query)(void* ctx, uint32_t device, strata_event event, uint32_t* done);
  strata_status* (*event_synchronize)(void* ctx, uint32_t device, strata_event event);
  /* Enqueues a copy on `stream` and returns; host memory must be pinned, mapped or registered to be copied
   * asynchronously (other host memory is copied before the call returns). */
  strata_status* (*copy_async)(void* ctx, uint32_t device, void* dst, const void* src, uint64_t bytes, uint32_t kind,
                               strata_stream stream);
  /* compute's ops, enqueued on the compute stream without waiting for them; the op array may be freed on return,
   * the memory the ops address must stay until an event recorded after them is done. */
  strata_status* (*compute_async)(void* ctx, uint32_t device, const strata_op* ops, size_t n_ops);
  /* Page-locks `bytes` of host memory at `ptr` (any alignment; the pages around it are included) so copies read
   * it at full speed; flags: STRATA_REGISTER_*. Fails with a status (never aborts) when the memory cannot be
   * locked: the caller then copies from it as pageable memory. */
  strata_status* (*host_register)(void* ctx, uint32_t device, void* ptr, uint64_t bytes, uint32_t flags);
  /* Undoes host_register(ptr); unknown pointers are ignored. */
  void (*host_unregister)(void* ctx, uint32_t device, void* ptr);
  /* 1.8; NULL: the host calls copy_async for each. `count` copies of `kind` enqueued on `stream` as copy_async
   * would enqueue them one after another (the batch runs in the stream's order; its copies may run in any order
   * among themselves, so their destinations must not overlap). */
  strata_status* (*copy_batch_async)(void* ctx, uint32_t device, void* const* dsts, const void* const* srcs,
                                     const uint64_t* bytes, uint32_t count, uint32_t kind, strata_stream stream);
} strata_backend_v1;

/* ---- family: expert_pool ---------------------------------------------------------------------------------- */

#define STRATA_EXPERT_POOL_FAMILY "expert_pool"
#define STRATA_EXPERT_POOL_VERSION 1u
#define STRATA_EXPERT_POOL_MINOR 2u

typedef struct strata_expert_pool_v1 {
  strata_interface_header header;
  /* 1.0 */
  uint32_t (*worker_count)(void* ctx);
  /* Computes every pair of `moe` from host memory and writes its weighted row to moe->rows (one row per
   * (token, expert) pair, never summed), then stores done_value to *done_flag (when not NULL) with release
   * ordering. Returns when all rows are written. */
  strata_status* (*compute)(void* ctx, const strata_moe_op* moe, volatile uint32_t* done_flag, uint32_t done_value);
  /* 1.1: between calls; worker_count then reports the limit. */
  strata_status* (*set_worker_limit)(void* ctx, uint32_t n);
  /* 1.2: one line for the host's set-up line: how many threads compute, and why that many. */
  const char* (*describe)(void* ctx);
} strata_expert_pool_v1;

/* ---- family: balancer ------------------------------------------------------------------------------------- */

#define STRATA_BALANCER_FAMILY "balancer"
#define STRATA_BALANCER_VERSION 1u
#define STRATA_BALANCER_MINOR 0u

/* One layer's measured costs in one window. */
typedef struct strata_balance_sample {
  uint32_t layer;
  uint32_t n_cpu;   /* misses computed by the pool */
  uint32_t n_pcie;  /* misses read over PCIe */
  uint32_t reserved0;
  double pool_us;   /* the host's side: from the layer's routes seen to the pool's rows handed over (planning and
                     * the pool's call; the host's clock; 0 with n_cpu 0) */
  double gpu_us;    /* the device's side, from the same moment: its routes out to its own experts (hits and PCIe)
                     * done, on the device's clock (backend 1.5 stamps); without stamps, the host's routes seen to
                     * the PCIe copies landed */
} strata_balance_sample;

typedef struct strata_balancer_v1 {
  strata_interface_header header;
  /* 1.0 */
  strata_status* (*observe)(void* ctx, const strata_balance_sample* samples, size_t n);
  /* How many of a layer's n_miss misses to read over PCIe; UINT32_MAX: no opinion yet (the host uses its own
   * share, pcie_frac). Called while a window is placed, observe after it: possibly from different threads. */
  uint32_t (*choose)(void* ctx, uint32_t layer, uint32_t n_miss);
  /* A one-line summary of the fitted costs, for the decode summary. */
  const char* (*describe)(void* ctx);
} strata_balancer_v1;

/* ---- family: link ----------------------------------------------------------------------------------------- */
/* Two engine processes, one card each, joined by a small shared-memory file (peerlink). Each publishes which
 * experts its card holds; each may ask the other for the weighted rows of experts the other's card holds, and a
 * service thread of the other computes them on its card. The plugin owns the file and its protocol (roles,
 * generation, heartbeats, residency under a seqlock, one request box per direction); the host computes. */

#define STRATA_LINK_FAMILY "link"
#define STRATA_LINK_VERSION 1u
#define STRATA_LINK_MINOR 0u

/* What both engines of a link must agree on; the file's layout follows from it. */
typedef struct strata_link_geometry {
  uint32_t n_layer;     /* residency: n_layer x n_expert bits, layer-major, bit (e % 8) of byte (l x n_expert + e) / 8 */
  uint32_t n_expert;
  uint32_t n_embd;      /* floats in a row */
  uint32_t k_max;       /* the most experts one token routes to */
  uint32_t max_tokens;  /* the most tokens one request carries */
  uint32_t reserved;     /* 0; not compared */
  char fingerprint[64]; /* the model's (NUL-terminated): engines of different models refuse to link */
} strata_link_geometry;

/* One request, as pointers into the mapped file (valid while the link is open). The requester fills the arrays x,
 * ids, weights and experts and hands layer, n_tok, k and n_experts to send() (the server sees them here); the server
 * writes rows and served. The server treats the box as untrusted: a request whose sizes, experts or ids do not fit
 * its model is answered with nothing served. */
typedef struct strata_link_request {
  uint32_t layer, n_tok, k, n_experts;
  uint32_t* experts;  /* [n_experts], ascending: the experts asked for */
  float* x;           /* [n_embd, n_tok]: the layer's normed rows */
  int32_t* ids;       /* [k, n_tok]: the router's choices */
  float* weights;     /* [k, n_tok] */
  float* rows;        /* [n_embd, k x n_tok]: column t x k + j holds token t's pair j when its expert was served */
  uint8_t* served;    /* [n_experts]: 1 when the server computed that expert's rows, 0 when its card no longer holds it */
} strata_link_request;

typedef struct strata_link_v1 {
  strata_interface_header header;
  /* 1.0 */
  /* Maps the link file of the plugin's options (creating or laying it out again when no live engine holds it),
   * takes this engine's role, and starts its heartbeat. STRATA_ERR_INVALID_ARGUMENT, naming the problem and the fix:
   * the role is held by a live process, or the other role's live engine has another geometry, fingerprint or
   * version. */
  strata_status* (*open)(void* ctx, const strata_link_geometry* geometry);
  /* Whether this engine's service answers the other's requests (LINK_SERVE); off after open. */
  strata_status* (*set_serving)(void* ctx, uint32_t on);
  /* Publishes this card's residency (the geometry's bitmap); call it only once the copies have landed. An engine
   * that rewrites slots publishes their experts as absent first. */
  strata_status* (*publish)(void* ctx, const uint8_t* bits);
  /* 1 when the other engine is attached, alive (its process exists and its heartbeat is fresh), serving, and has
   * answered every earlier request of this engine; 0 otherwise. */
  uint32_t (*peer_ready)(void* ctx);
  /* Copies the other engine's residency (consistent: read under its seqlock). Returns 0, leaving bits alone, when
   * it published none or is not alive. */
  uint32_t (*peer_residency)(void* ctx, uint8_t* bits);
  /* The requester: this engine's request box, to fill; then send it; then await the answer. await returns 1 when
   * answered, 0 when the deadline (option deadline_ms) passed or the other engine died or detached first; after a 0,
   * peer_ready stays 0 until the other has caught up with the request (or a new engine took its role). One request
   * is outstanding per direction: send refuses (STRATA_ERR_UNAVAILABLE) while the last is unanswered, so fill the
   * outbox only when peer_ready is 1. */
  strata_status* (*outbox)(void* ctx, strata_link_request* out);
  strata_status* (*send)(void* ctx, uint32_t layer, uint32_t n_tok, uint32_t k, uint32_t n_experts);
  uint32_t (*await_answer)(void* ctx);
  /* The service: waits up to wait_us for the other's request; 1 with *out filled when one is pending, 0 otherwise
   * (when not serving it still waits, so a service loop does not spin). answer() marks it answered (rows and served
   * written). */
  uint32_t (*next_request)(void* ctx, uint32_t wait_us, strata_link_request* out);
  void (*answer)(void* ctx);
  /* One line: the file, the role, the generation, the deadline, the other engine's state. */
  const char* (*describe)(void* ctx);
} strata_link_v1;

/* ---- the two exports -------------------------------------------------------------------------------------- */

#define STRATA_PLUGIN_QUERY_SYMBOL "strata_plugin_query"
#define STRATA_PLUGIN_INIT_SYMBOL "strata_plugin_init"

/* Returns the descriptor; callable before init and more than once. Must not fail. */
typedef const strata_plugin_descriptor* (*strata_plugin_query_fn)(void);
/* options: n_options "key=value" strings (the plugin's YAML section, flattened; keys without the plugin's
 * name). A plugin rejects a key it does not know with STRATA_ERR_INVALID_ARGUMENT naming the key. */
typedef strata_status* (*strata_plugin_init_fn)(const strata_host_api* host, const char* const* options,
                                                size_t n_options, strata_plugin_instance* out);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* STRATA_PLUGIN_DEFINE(query_impl, init_impl) defines a plugin's two exports.
 *
 *   const strata_plugin_descriptor* query_impl(void);
 *   strata_status* init_impl(const strata_host_api*, const char* const*, size_t, strata_plugin_instance*);
 *
 * In C++ the exports are noexcept trampolines: an exception escaping init_impl becomes a status
 * (STRATA_ERR_INTERNAL with its message); one escaping query_impl yields NULL, which the host rejects. */
#ifdef __cplusplus
#include <exception>
#define STRATA_PLUGIN_DEFINE(query_impl, init_impl)                                                           \
  extern "C" STRATA_EXPORT const strata_plugin_descriptor* strata_plugin_query(void) noexcept {              \
    try {                                                                                                      \
      return query_impl();                                                                                     \
    } catch (...) {                                                                                            \
      return nullptr;                                                                                          \
    }                                                                                                          \
  }                                                                                                            \
  extern "C" STRATA_EXPORT strata_status* strata_plugin_init(const strata_host_api* host,                     \
                                                            const char* const* options, size_t n_options,     \
                                                            strata_plugin_instance* out) noexcept {           \
    try {                                                                                                      \
      return init_impl(host, options, n_options, out);                                                        \
    } catch (const std::exception& e) {                                                                        \
      return host->status_new(STRATA_ERR_INTERNAL, e.what());                                                 \
    } catch (...) {                                                                                            \
      return host->status_new(STRATA_ERR_INTERNAL, "unknown exception in strata_plugin_init");                \
    }                                                                                                          \
  }
#else
#define STRATA_PLUGIN_DEFINE(query_impl, init_impl)                                                           \
  STRATA_EXPORT const strata_plugin_descriptor* strata_plugin_query(void) { return query_impl(); }            \
  STRATA_EXPORT strata_status* strata_plugin_init(const strata_host_api* host, const char* const* options,    \
                                                  size_t n_options, strata_plugin_instance* out) {            \
    return init_impl(host, options, n_options, out);                                                          \
  }
#endif

#endif /* STRATA_PLUGIN_API_H */
