#include "gnnkern.h"
#include <stdio.h>

int main(void) {
  int32_t src[] = {0, 1, 2}, dst[] = {1, 2, 1};
  gk_graph g;
  if (gk_graph_from_coo_i32(3, 3, 3, src, dst, &g) != GK_OK) {
    fprintf(stderr, "%s\n", gk_last_error_message());
    return 1;
  }
  float x[3 * 2] = {1, 2, 3, 4, 5, 6}, out[3 * 2];
  int64_t shape[2] = {3, 2};
  DLTensor tx = {x, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, NULL, 0};
  DLTensor tout = {out, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, NULL, 0};
  /* DGL's copy_u_sum: out[v] = sum of x[u] over edges u -> v. */
  gk_status s = gk_gspmm(g, GK_OP_COPY_LHS, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM,
                         &tx, NULL, &tout, NULL, NULL);
  if (s != GK_OK) fprintf(stderr, "%s: %s\n", gk_status_name(s), gk_last_error_message());
  else printf("out[1] = (%g, %g)\n", out[2], out[3]); /* (6, 8): x[0] + x[2] */
  gk_graph_destroy(g);
  return s != GK_OK;
}
