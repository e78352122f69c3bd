/* A C consumer of libgnnkern.a: every op family on a small graph against a
 * naive C loop, and every class of bad call (each must return its status,
 * name the problem in gk_last_error_message() and leave outputs untouched).
 * Built and run by tests/c_abi.rs; prints "smoke: N checks passed". */
#include "gnnkern.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int checks = 0;

#define CHECK(cond, ...)                                                    \
  do {                                                                      \
    ++checks;                                                               \
    if (!(cond)) {                                                          \
      fprintf(stderr, "smoke.c:%d: check failed: %s: ", __LINE__, #cond);   \
      fprintf(stderr, __VA_ARGS__);                                         \
      fprintf(stderr, " (last error: %s)\n", gk_last_error_message());      \
      exit(1);                                                              \
    }                                                                       \
  } while (0)

/* Expects `call` to fail with `status` and a message containing `needle`. */
#define EXPECT_ERROR(call, status, needle)                                  \
  do {                                                                      \
    gk_status s_ = (call);                                                  \
    CHECK(s_ == (status), "%s returned %s, expected %s", #call,             \
          gk_status_name(s_), gk_status_name(status));                      \
    CHECK(strstr(gk_last_error_message(), (needle)) != NULL,                \
          "message of %s lacks \"%s\"", #call, (needle));                   \
  } while (0)

/* A compact float32 CPU tensor over caller memory. */
static DLTensor f32_tensor(float *data, int32_t ndim, int64_t *shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

static int all_equal(const float *x, size_t n, float v) {
  for (size_t i = 0; i < n; ++i)
    if (x[i] != v) return 0;
  return 1;
}

enum { N = 5, E = 7, D = 3 };
/* Edges u -> v; node 4 has no in-edges, edge 6 is a self-loop. */
static const int32_t SRC[E] = {0, 1, 2, 3, 0, 1, 2};
static const int32_t DST[E] = {1, 2, 0, 0, 3, 1, 2};

int main(void) {
  printf("gnnkern %s, detected ISA %d\n", gk_version(), (int)gk_detected_isa());
  CHECK(gk_set_num_threads(2) == GK_OK, "set_num_threads");
  int32_t threads = 0;
  CHECK(gk_get_num_threads(&threads) == GK_OK && threads == 2, "threads = %d", threads);
  CHECK(gk_last_backend() == GK_BACKEND_NONE, "no op has run yet");
  int32_t pinned = -1;
  CHECK(gk_get_thread_pinning(&pinned) == GK_OK && pinned == 0, "pinning is off by default (%d)", pinned);
  EXPECT_ERROR(gk_set_thread_pinning(2), GK_ERROR_INVALID_ARGUMENT, "not 0 (off) or 1");
  EXPECT_ERROR(gk_get_thread_pinning(NULL), GK_ERROR_NULL_POINTER, "out is NULL");
  /* The ops below run on pinned workers; the pool keeps its 2 threads. */
  CHECK(gk_set_thread_pinning(1) == GK_OK, "pin the workers");
  CHECK(gk_get_thread_pinning(&pinned) == GK_OK && pinned == 1, "pinning is on (%d)", pinned);
  CHECK(gk_get_num_threads(&threads) == GK_OK && threads == 2, "threads after pinning = %d", threads);

  gk_graph g;
  CHECK(gk_graph_from_coo_i32(N, N, E, SRC, DST, &g) == GK_OK, "from_coo");
  gk_graph_info info;
  CHECK(gk_graph_get_info(g, &info) == GK_OK, "info");
  CHECK(info.num_src == N && info.num_dst == N && info.num_edges == E && info.index_type == GK_INDEX_INT32,
        "info %lld %lld %lld", (long long)info.num_src, (long long)info.num_dst, (long long)info.num_edges);

  float x[N * D], w[E], out[N * D], expect[N * D];
  for (int i = 0; i < N * D; ++i) x[i] = (float)(i % 7) - 2.5f;
  for (int e = 0; e < E; ++e) w[e] = 0.5f + (float)e;
  int64_t x_shape[2] = {N, D}, w_shape[2] = {E, 1}, out_shape[2] = {N, D};
  DLTensor tx = f32_tensor(x, 2, x_shape), tw = f32_tensor(w, 2, w_shape), tout = f32_tensor(out, 2, out_shape);

  /* u_mul_e_sum: out[v] = sum over edges (u, v) of x[u] * w[e]. */
  CHECK(gk_gspmm(g, GK_OP_MUL, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM, &tx, &tw, &tout, NULL, NULL) == GK_OK,
        "u_mul_e_sum");
  memset(expect, 0, sizeof expect);
  for (int e = 0; e < E; ++e)
    for (int k = 0; k < D; ++k) expect[DST[e] * D + k] += x[SRC[e] * D + k] * w[e];
  for (int i = 0; i < N * D; ++i) CHECK(fabsf(out[i] - expect[i]) <= 1e-5f, "out[%d] = %g, expected %g", i, out[i], expect[i]);
  CHECK(gk_last_backend() != GK_BACKEND_NONE, "a backend is reported");
  CHECK(gk_last_isa() != GK_ISA_DEFAULT, "an ISA is reported");

  /* copy_u_max with arg outputs. */
  int32_t arg_u[N * D], arg_e[N * D];
  DLTensor tau = tout, tae = tout;
  tau.data = arg_u;
  tau.dtype.code = kDLInt;
  tae.data = arg_e;
  tae.dtype.code = kDLInt;
  CHECK(gk_gspmm(g, GK_OP_COPY_LHS, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_MAX, &tx, NULL, &tout, &tau, &tae) == GK_OK,
        "copy_u_max");
  for (int v = 0; v < N; ++v)
    for (int k = 0; k < D; ++k) {
      float best = 0.0f;
      int found = 0;
      for (int e = 0; e < E; ++e)
        if (DST[e] == v && (!found || x[SRC[e] * D + k] > best)) best = x[SRC[e] * D + k], found = 1;
      CHECK(out[v * D + k] == best, "max out[%d][%d] = %g, expected %g", v, k, out[v * D + k], best);
      CHECK(found ? x[arg_u[v * D + k] * D + k] == best && SRC[arg_e[v * D + k]] == arg_u[v * D + k]
                  : arg_u[v * D + k] == -1 && arg_e[v * D + k] == -1,
            "arg of [%d][%d]", v, k);
    }

  /* u_dot_v g-SDDMM and edge softmax (+ backward) on its result. */
  float logits[E], soft[E], gsoft[E], glog[E];
  int64_t e_shape[2] = {E, 1};
  DLTensor tl = f32_tensor(logits, 2, e_shape), ts = f32_tensor(soft, 2, e_shape);
  DLTensor tg = f32_tensor(gsoft, 2, e_shape), tgl = f32_tensor(glog, 2, e_shape);
  CHECK(gk_gsddmm(g, GK_OP_DOT, GK_TARGET_SRC, GK_TARGET_DST, &tx, &tx, &tl) == GK_OK, "u_dot_v");
  for (int e = 0; e < E; ++e) {
    float dot = 0.0f;
    for (int k = 0; k < D; ++k) dot += x[SRC[e] * D + k] * x[DST[e] * D + k];
    CHECK(fabsf(logits[e] - dot) <= 1e-5f, "dot[%d] = %g, expected %g", e, logits[e], dot);
  }
  CHECK(gk_edge_softmax(g, &tl, &ts) == GK_OK, "edge_softmax");
  for (int v = 0; v < N; ++v) {
    double total = 0.0;
    int deg = 0;
    for (int e = 0; e < E; ++e)
      if (DST[e] == v) total += soft[e], ++deg;
    CHECK(deg == 0 || fabs(total - 1.0) < 1e-5, "softmax of node %d sums to %g", v, total);
  }
  for (int e = 0; e < E; ++e) gsoft[e] = (float)e;
  CHECK(gk_edge_softmax_backward(g, &ts, &tg, &tgl) == GK_OK, "edge_softmax_backward");
  for (int e = 0; e < E; ++e) {
    double dot = 0.0;
    for (int f = 0; f < E; ++f)
      if (DST[f] == DST[e]) dot += gsoft[f] * soft[f];
    double expected = soft[e] * (gsoft[e] - dot);
    CHECK(fabs(glog[e] - expected) < 1e-5, "grad_logits[%d] = %g, expected %g", e, glog[e], expected);
  }

  /* g-SpMM backward of u_mul_e_sum w.r.t. both operands. */
  float gout[N * D], gx[N * D], gw[E];
  for (int i = 0; i < N * D; ++i) gout[i] = 0.25f * (float)i;
  DLTensor tgo = f32_tensor(gout, 2, out_shape), tgx = f32_tensor(gx, 2, x_shape), tgw = f32_tensor(gw, 2, w_shape);
  CHECK(gk_gspmm_backward(g, GK_OP_MUL, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM, &tx, &tw, &tgo, NULL, &tgx, &tgw) ==
            GK_OK,
        "gspmm_backward");
  for (int u = 0; u < N; ++u)
    for (int k = 0; k < D; ++k) {
      double s = 0.0;
      for (int e = 0; e < E; ++e)
        if (SRC[e] == u) s += gout[DST[e] * D + k] * w[e];
      CHECK(fabs(gx[u * D + k] - s) < 1e-4, "grad_x[%d][%d] = %g, expected %g", u, k, gx[u * D + k], s);
    }
  for (int e = 0; e < E; ++e) {
    double s = 0.0;
    for (int k = 0; k < D; ++k) s += gout[DST[e] * D + k] * x[SRC[e] * D + k];
    CHECK(fabs(gw[e] - s) < 1e-4, "grad_w[%d] = %g, expected %g", e, gw[e], s);
  }

  /* ---- Bad calls: each an error with a message, nothing written. ---- */
  for (int i = 0; i < N * D; ++i) out[i] = -7.0f;
  EXPECT_ERROR(gk_gspmm(g, GK_OP_COPY_LHS, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM, NULL, NULL, &tout, NULL, NULL),
               GK_ERROR_OPERAND, "none was given");
  EXPECT_ERROR(gk_gspmm(g, GK_OP_COPY_LHS, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM, &tx, &tw, &tout, NULL, NULL),
               GK_ERROR_OPERAND, "rhs was given but operator copy_lhs ignores it");
  EXPECT_ERROR(gk_gspmm(g, GK_OP_COPY_LHS, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM, &tx, NULL, &tout, &tau, NULL),
               GK_ERROR_OPERAND, "only by max/min");
  EXPECT_ERROR(gk_gspmm(g, GK_OP_COPY_LHS, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM, &tx, NULL, NULL, NULL, NULL),
               GK_ERROR_NULL_POINTER, "out");
  EXPECT_ERROR(gk_gspmm(g, (gk_op)42, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM, &tx, NULL, &tout, NULL, NULL),
               GK_ERROR_INVALID_ENUM, "op = 42");
  EXPECT_ERROR(gk_gspmm(g, GK_OP_COPY_LHS, (gk_target)-3, GK_TARGET_EDGE, GK_REDUCE_SUM, &tx, NULL, &tout, NULL, NULL),
               GK_ERROR_INVALID_ENUM, "lhs_target = -3");
  DLTensor bad = tx;
  bad.dtype.bits = 64;
  EXPECT_ERROR(gk_gspmm(g, GK_OP_COPY_LHS, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM, &bad, NULL, &tout, NULL, NULL),
               GK_ERROR_DTYPE, "lhs: dtype");
  bad = tx;
  bad.device.device_type = kDLCUDA;
  EXPECT_ERROR(gk_gspmm(g, GK_OP_COPY_LHS, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM, &bad, NULL, &tout, NULL, NULL),
               GK_ERROR_DEVICE, "kDLCUDA");
  /* A transposed view: strides {1, N} for shape {N, D} (DGL issue #6049). */
  int64_t t_strides[2] = {1, N};
  bad = tx;
  bad.strides = t_strides;
  EXPECT_ERROR(gk_gspmm(g, GK_OP_COPY_LHS, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM, &bad, NULL, &tout, NULL, NULL),
               GK_ERROR_LAYOUT, "strides [1, 5]");
  /* Compact strides given explicitly are fine; a size-1 dim's stride is ignored. */
  int64_t c_strides[2] = {D, 1};
  DLTensor strided = tx;
  strided.strides = c_strides;
  CHECK(gk_gspmm(g, GK_OP_COPY_LHS, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM, &strided, NULL, &tout, NULL, NULL) ==
            GK_OK,
        "explicit compact strides");
  for (int i = 0; i < N * D; ++i) out[i] = -7.0f;
  bad = tx;
  bad.byte_offset = 2;
  EXPECT_ERROR(gk_gspmm(g, GK_OP_COPY_LHS, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM, &bad, NULL, &tout, NULL, NULL),
               GK_ERROR_LAYOUT, "not aligned");
  int64_t short_shape[2] = {N - 1, D};
  bad = f32_tensor(x, 2, short_shape);
  EXPECT_ERROR(gk_gspmm(g, GK_OP_COPY_LHS, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM, &bad, NULL, &tout, NULL, NULL),
               GK_ERROR_SHAPE, "expected shape");
  int64_t neg_shape[2] = {N, -D};
  bad = f32_tensor(x, 2, neg_shape);
  EXPECT_ERROR(gk_gspmm(g, GK_OP_COPY_LHS, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM, &bad, NULL, &tout, NULL, NULL),
               GK_ERROR_SHAPE, "negative extent");
  DLTensor alias = f32_tensor(x, 2, out_shape);
  EXPECT_ERROR(gk_gspmm(g, GK_OP_COPY_LHS, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM, &tx, NULL, &alias, NULL, NULL),
               GK_ERROR_ALIASING, "overlaps");
  int64_t arg_bad[2] = {N, D};
  DLTensor targ64 = f32_tensor((float *)arg_u, 2, arg_bad);
  targ64.dtype.code = kDLInt;
  targ64.dtype.bits = 64;
  EXPECT_ERROR(gk_gspmm(g, GK_OP_COPY_LHS, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_MAX, &tx, NULL, &tout, &targ64, NULL),
               GK_ERROR_DTYPE, "int32");
  CHECK(all_equal(out, N * D, -7.0f), "a failed call wrote to its output");

  /* Graph construction errors. */
  gk_graph h = {12345};
  int32_t bad_src[E] = {0, 1, 2, 3, 9, 1, 2};
  EXPECT_ERROR(gk_graph_from_coo_i32(N, N, E, bad_src, DST, &h), GK_ERROR_INDEX_OUT_OF_RANGE, "src[4] = 9");
  EXPECT_ERROR(gk_graph_from_coo_i32(N, N, -1, SRC, DST, &h), GK_ERROR_INVALID_ARGUMENT, "negative");
  EXPECT_ERROR(gk_graph_from_coo_i32(N, N, E, NULL, DST, &h), GK_ERROR_NULL_POINTER, "src");
  EXPECT_ERROR(gk_graph_from_coo_i32((int64_t)1 << 40, N, E, SRC, DST, &h), GK_ERROR_INVALID_GRAPH, "int32");
  int64_t bad_indptr[N + 1] = {0, 2, 1, 3, 5, 7};
  int64_t indices[E] = {1, 3, 2, 1, 0, 2, 0};
  EXPECT_ERROR(gk_graph_from_csr_i64(N, N, E, bad_indptr, indices, NULL, &h), GK_ERROR_INVALID_GRAPH, "non-decreasing");
  CHECK(h.id == 12345, "a failed constructor wrote the handle");

  /* CSR and CSC with int64 ids give the same results as COO. */
  int64_t indptr[N + 1] = {0, 2, 4, 6, 7, 7}, eids[E] = {0, 4, 1, 5, 2, 6, 3};
  int64_t csr_idx[E] = {1, 3, 2, 1, 0, 2, 0};
  gk_graph g64;
  CHECK(gk_graph_from_csr_i64(N, N, E, indptr, csr_idx, eids, &g64) == GK_OK, "from_csr_i64");
  float out64[N * D];
  DLTensor tout64 = f32_tensor(out64, 2, out_shape);
  CHECK(gk_gspmm(g64, GK_OP_MUL, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM, &tx, &tw, &tout64, NULL, NULL) == GK_OK,
        "u_mul_e_sum on the CSR graph");
  for (int i = 0; i < N * D; ++i) CHECK(fabsf(out64[i] - expect[i]) <= 1e-5f, "csr out[%d]", i);
  gk_graph rev;
  CHECK(gk_graph_reverse(g64, &rev) == GK_OK, "reverse");
  CHECK(gk_graph_destroy(g64) == GK_OK, "destroy csr graph");
  /* The reverse handle keeps the shared storage alive. */
  CHECK(gk_graph_get_info(rev, &info) == GK_OK && info.index_type == GK_INDEX_INT64, "reverse info");
  CHECK(gk_graph_destroy(rev) == GK_OK, "destroy reverse");

  /* Destroyed and invented handles are errors, never crashes. */
  CHECK(gk_graph_destroy(g) == GK_OK, "destroy");
  EXPECT_ERROR(gk_graph_destroy(g), GK_ERROR_INVALID_HANDLE, "not live");
  EXPECT_ERROR(gk_gspmm(g, GK_OP_COPY_LHS, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM, &tx, NULL, &tout, NULL, NULL),
               GK_ERROR_INVALID_HANDLE, "not live");
  gk_graph zero = {0};
  EXPECT_ERROR(gk_graph_get_info(zero, &info), GK_ERROR_INVALID_HANDLE, "handle 0");
  EXPECT_ERROR(gk_set_backend((gk_backend)99), GK_ERROR_INVALID_ENUM, "backend = 99");
  EXPECT_ERROR(gk_set_num_threads(-2), GK_ERROR_INVALID_ARGUMENT, "negative");
  CHECK(strcmp(gk_status_name(GK_ERROR_LAYOUT), "GK_ERROR_LAYOUT") == 0, "status names");
  CHECK(gk_graph_live_count() == 0, "%lld handles leaked", (long long)gk_graph_live_count());

  printf("smoke: %d checks passed\n", checks);
  return 0;
}
