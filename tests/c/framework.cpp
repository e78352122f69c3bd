// A small C++ "framework" on top of libgnnkern.a, as a DGL-like runtime
// would use it: RAII graph and tensor types over the C ABI, and a two-layer
// GCN (aggregation by gnnkern, dense transforms in C++) with its backward
// pass. tests/c_abi.rs writes the problem to a file, runs this program,
// and compares what it writes with the same model computed through the
// Rust API on the reference backend.
//
//   framework <input> <output>
//
// Layer l: Z_l = (Â H_{l-1}) W_l, H_1 = relu(Z_1), output Z_2, where
// Â[v, u] = w_e = 1 / sqrt(outdeg(u) · indeg(v)) is applied by gnnkern's
// u_mul_e_sum. Loss = Σ Z_2 ⊙ T. Outputs: Z_2, dL/dX, dL/dW_1, dL/dW_2 and
// dL/dw (the gradient w.r.t. the edge weights, summed over both layers).
#include "gnnkern.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace fw {

// Any gk_ failure becomes an exception carrying the library's message.
void check(gk_status s, const char *what) {
  if (s != GK_OK)
    throw std::runtime_error(std::string(what) + ": " + gk_status_name(s) + ": " + gk_last_error_message());
}

class Graph {
 public:
  Graph(int64_t n, const std::vector<int64_t> &src, const std::vector<int64_t> &dst) {
    check(gk_graph_from_coo_i64(n, n, (int64_t)src.size(), src.data(), dst.data(), &handle_), "graph");
  }
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;
  ~Graph() { gk_graph_destroy(handle_); }
  gk_graph handle() const { return handle_; }

 private:
  gk_graph handle_{};
};

// A dense row-major float32 tensor owning its memory.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;

  Tensor(int64_t rows, int64_t cols) : shape{rows, cols}, data((size_t)(rows * cols), 0.0f) {}
  int64_t rows() const { return shape[0]; }
  int64_t cols() const { return shape[1]; }
  float &at(int64_t r, int64_t c) { return data[(size_t)(r * cols() + c)]; }
  float at(int64_t r, int64_t c) const { return data[(size_t)(r * cols() + c)]; }

  // A DLPack view (valid while this tensor lives and is not resized).
  DLTensor dl() {
    DLTensor t{};
    t.data = data.data();
    t.device.device_type = kDLCPU;
    t.ndim = 2;
    t.dtype.code = kDLFloat;
    t.dtype.bits = 32;
    t.dtype.lanes = 1;
    t.shape = shape.data();
    t.strides = nullptr;
    return t;
  }
};

Tensor matmul(const Tensor &a, const Tensor &b) {  // a · b
  Tensor c(a.rows(), b.cols());
  for (int64_t i = 0; i < a.rows(); ++i)
    for (int64_t k = 0; k < a.cols(); ++k)
      for (int64_t j = 0; j < b.cols(); ++j) c.at(i, j) += a.at(i, k) * b.at(k, j);
  return c;
}

Tensor matmul_tn(const Tensor &a, const Tensor &b) {  // aᵀ · b
  Tensor c(a.cols(), b.cols());
  for (int64_t k = 0; k < a.rows(); ++k)
    for (int64_t i = 0; i < a.cols(); ++i)
      for (int64_t j = 0; j < b.cols(); ++j) c.at(i, j) += a.at(k, i) * b.at(k, j);
  return c;
}

Tensor matmul_nt(const Tensor &a, const Tensor &b) {  // a · bᵀ
  Tensor c(a.rows(), b.rows());
  for (int64_t i = 0; i < a.rows(); ++i)
    for (int64_t j = 0; j < b.rows(); ++j)
      for (int64_t k = 0; k < a.cols(); ++k) c.at(i, j) += a.at(i, k) * b.at(j, k);
  return c;
}

// GCN aggregation: out[v] = Σ_{e=(u,v)} h[u] · w[e].
Tensor aggregate(const Graph &g, Tensor &h, Tensor &w, int64_t num_nodes) {
  Tensor out(num_nodes, h.cols());
  DLTensor th = h.dl(), tw = w.dl(), to = out.dl();
  check(gk_gspmm(g.handle(), GK_OP_MUL, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM, &th, &tw, &to, nullptr, nullptr),
        "aggregate");
  return out;
}

// Backward of `aggregate`: gradients w.r.t. h and the edge weights.
void aggregate_backward(const Graph &g, Tensor &h, Tensor &w, Tensor &grad_out, Tensor &grad_h, Tensor &grad_w) {
  DLTensor th = h.dl(), tw = w.dl(), tg = grad_out.dl(), tgh = grad_h.dl(), tgw = grad_w.dl();
  check(gk_gspmm_backward(g.handle(), GK_OP_MUL, GK_TARGET_SRC, GK_TARGET_EDGE, GK_REDUCE_SUM, &th, &tw, &tg, nullptr,
                          &tgh, &tgw),
        "aggregate backward");
}

struct Problem {
  int64_t n = 0, e = 0, in = 0, hid = 0, out = 0;
  std::vector<int64_t> src, dst;
  std::vector<float> x, w1, w2, t;
};

template <class T>
void read_into(std::ifstream &f, std::vector<T> &v, size_t n) {
  v.resize(n);
  for (auto &x : v)
    if (!(f >> x)) throw std::runtime_error("input file is truncated");
}

Problem read_problem(const char *path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error(std::string("cannot open ") + path);
  Problem p;
  f >> p.n >> p.e >> p.in >> p.hid >> p.out;
  read_into(f, p.src, (size_t)p.e);
  read_into(f, p.dst, (size_t)p.e);
  read_into(f, p.x, (size_t)(p.n * p.in));
  read_into(f, p.w1, (size_t)(p.in * p.hid));
  read_into(f, p.w2, (size_t)(p.hid * p.out));
  read_into(f, p.t, (size_t)(p.n * p.out));
  return p;
}

Tensor from(const std::vector<float> &v, int64_t rows, int64_t cols) {
  Tensor t(rows, cols);
  t.data = v;
  return t;
}

void write(std::FILE *f, const char *name, const Tensor &t) {
  std::fprintf(f, "%s %zu\n", name, t.data.size());
  for (float v : t.data) std::fprintf(f, "%.9g\n", v);
}

}  // namespace fw

int main(int argc, char **argv) {
  using namespace fw;
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <input> <output>\n", argv[0]);
    return 2;
  }
  try {
    check(gk_set_num_threads(2), "threads");
    Problem p = read_problem(argv[1]);
    Graph g(p.n, p.src, p.dst);

    // Symmetric normalisation as edge weights.
    std::vector<int64_t> outdeg((size_t)p.n, 0), indeg((size_t)p.n, 0);
    for (int64_t e = 0; e < p.e; ++e) ++outdeg[(size_t)p.src[(size_t)e]], ++indeg[(size_t)p.dst[(size_t)e]];
    Tensor w(p.e, 1);
    for (int64_t e = 0; e < p.e; ++e)
      w.at(e, 0) = (float)(1.0 / std::sqrt((double)outdeg[(size_t)p.src[(size_t)e]] * (double)indeg[(size_t)p.dst[(size_t)e]]));

    Tensor x = from(p.x, p.n, p.in), w1 = from(p.w1, p.in, p.hid), w2 = from(p.w2, p.hid, p.out);
    Tensor t = from(p.t, p.n, p.out);

    // Forward.
    Tensor a1 = aggregate(g, x, w, p.n);
    Tensor z1 = matmul(a1, w1);
    Tensor h1 = z1;
    for (float &v : h1.data) v = v > 0.0f ? v : 0.0f;
    Tensor a2 = aggregate(g, h1, w, p.n);
    Tensor z2 = matmul(a2, w2);

    // Backward of L = Σ z2 ⊙ t.
    Tensor dz2 = t;
    Tensor dw2 = matmul_tn(a2, dz2);
    Tensor da2 = matmul_nt(dz2, w2);
    Tensor dh1(p.n, p.hid), dw_edge2(p.e, 1);
    aggregate_backward(g, h1, w, da2, dh1, dw_edge2);
    Tensor dz1 = dh1;
    for (size_t i = 0; i < dz1.data.size(); ++i)
      if (z1.data[i] <= 0.0f) dz1.data[i] = 0.0f;
    Tensor dw1 = matmul_tn(a1, dz1);
    Tensor da1 = matmul_nt(dz1, w1);
    Tensor dx(p.n, p.in), dw_edge1(p.e, 1);
    aggregate_backward(g, x, w, da1, dx, dw_edge1);
    Tensor dw_edge(p.e, 1);
    for (int64_t e = 0; e < p.e; ++e) dw_edge.at(e, 0) = dw_edge1.at(e, 0) + dw_edge2.at(e, 0);

    std::FILE *f = std::fopen(argv[2], "w");
    if (!f) throw std::runtime_error(std::string("cannot write ") + argv[2]);
    write(f, "z2", z2);
    write(f, "dx", dx);
    write(f, "dw1", dw1);
    write(f, "dw2", dw2);
    write(f, "dw_edge", dw_edge);
    std::fclose(f);
    std::printf("framework: GCN forward/backward on %lld nodes, %lld edges (backend %d, ISA %d)\n", (long long)p.n,
                (long long)p.e, (int)gk_last_backend(), (int)gk_last_isa());
  } catch (const std::exception &ex) {
    std::fprintf(stderr, "framework: %s\n", ex.what());
    return 1;
  }
  return 0;
}
