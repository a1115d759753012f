// The RBF kernel matrix K[i, j] = exp(-gamma · ‖x_i - s_j‖²) of a batch against support vectors
// (SVC, SVR, OneClassSVM, KernelPCA with kernel='rbf'), fused in one pass so the [rows × n]
// distance matrix is never materialized three times over, as cdist, square and exp did.
//
// ‖x - s‖² is summed over the features in order, one fused multiply-add per feature, like
// libsvm's loop (which rounds the product separately: the two differ by an ulp at most); exp is
// a Cody-Waite reduction and a degree-13 Taylor polynomial (within an ulp of the correctly
// rounded value). Every path (AVX-512, AVX2, portable) does the same operations in the same
// order, so they give identical bits.
#pragma once

#include <cstdint>

#include "pg_predict/kernels/tree_ensemble.hpp"  // Isa

namespace pg_predict::kernels {

// Support vectors laid out for the kernel: column-major, each feature's n values padded with
// zeros to a multiple of kRbfLanes (svt is cols × padded_n).
constexpr int64_t kRbfLanes = 16;
int64_t rbf_padded(int64_t n);

// out: rows × n, overwritten. x: rows × cols, row-major. Runs over row blocks on torch's
// intra-op thread count in pg_predict's own pool; throws Error(Cancelled) on an interrupt.
void rbf_kernel(const double* x, int64_t rows, int64_t cols, const double* svt, int64_t n, double gamma,
                double* out, Isa isa);

// Defined beside the registration of torch.ops.pg_predict.rbf_kernel; the compiler references it
// so a static link keeps the registrar.
int rbf_op_anchor();

namespace detail {
// One entry per SIMD file, each scoring rows [begin, end); *_compiled() false where the file was
// built without its flags.
bool rbf_avx512_compiled();
void rbf_rows_avx512(const double* x, int64_t begin, int64_t end, int64_t cols, const double* svt, int64_t n,
                     double gamma, double* out);
bool rbf_avx2_compiled();
void rbf_rows_avx2(const double* x, int64_t begin, int64_t end, int64_t cols, const double* svt, int64_t n,
                   double gamma, double* out);
}  // namespace detail

}  // namespace pg_predict::kernels
