// torch.ops.pg_predict.tree_ensemble for CUDA tensors (built with -DPG_PREDICT_CUDA=ON).
//
// Same op, same packed model (kernels/tree_ensemble.hpp, packed by pack() on the CPU: the one
// source of the layout), same decisions bit for bit: every node test is the unsigned compare
// of the CPU kernel on the same per-feature ranks; only the order of the leaf additions
// differs (sums agree within float rounding).
//
// Perfect layout, three launches on the current stream:
//   ranks:  one thread per (row, feature): the rank of x among the feature's cuts → q[F × rows]
//           (feature-major, so the threads of a warp, which walk consecutive rows, read
//           neighbouring words when they test the same feature)
//   trees:  one thread per (row, 16-tree block): walks the block's 16 trees (the block's node
//           words and leaves staged in shared memory when they fit), writes the sum of its 16
//           leaves to partial[block][row]
//   reduce: one thread per row: margins[row][group] = sum of its blocks' partials, in order
// The generic layout (deep trees, > 128 features) is scored by the CPU kernel through host
// copies: correct, not fast.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>

#include "pg_predict/common/error.hpp"
#include "pg_predict/kernels/tree_ensemble.hpp"
#include "pg_predict/kernels/tree_ensemble_gpu.hpp"

namespace pg_predict::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerThread = 8;        // rows each thread of the trees kernel walks
constexpr int64_t kMaxPartials = 1 << 26; // floats in partial[] per chunk of rows (256 MiB)

__global__ void ranks_kernel(const float* __restrict__ x, int64_t rows, int F,
                             const float* __restrict__ cuts, const int32_t* __restrict__ cut_offset,
                             const int32_t* __restrict__ cut_steps, bool less_equal,
                             uint32_t* __restrict__ q) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= rows * F) return;
    const int f = static_cast<int>(i % F);
    const int64_t row = i / F;
    const float v = x[i];
    q[int64_t(f) * rows + row] = gpu::rank_word(cuts + cut_offset[f], cut_steps[f], v, less_equal);
}

__global__ void trees_kernel(const uint32_t* __restrict__ q, int64_t rows, int F,
                             const uint32_t* __restrict__ nodes, const float* __restrict__ leaves,
                             int D, bool stage, float* __restrict__ partial) {
    extern __shared__ uint32_t staged[];
    const int64_t b = blockIdx.y;
    const int64_t node_words = int64_t(kLanes) * ((int64_t(1) << D) - 1);
    const int64_t leaf_words = int64_t(kLanes) << D;
    const uint32_t* words = nodes + b * node_words;
    const float* lv = leaves + b * leaf_words;
    if (stage) {
        for (int64_t k = threadIdx.x; k < node_words; k += blockDim.x) staged[k] = words[k];
        float* staged_leaves = reinterpret_cast<float*>(staged + node_words);
        for (int64_t k = threadIdx.x; k < leaf_words; k += blockDim.x) staged_leaves[k] = lv[k];
        __syncthreads();
        words = staged;
        lv = staged_leaves;
    }
    const int64_t first = int64_t(blockIdx.x) * blockDim.x * kRowsPerThread + threadIdx.x;
    for (int k = 0; k < kRowsPerThread; ++k) {
        const int64_t row = first + int64_t(k) * blockDim.x;
        if (row >= rows) return;
        partial[b * rows + row] = gpu::walk_block(words, lv, D, q + row, rows, F);
    }
}

__global__ void reduce_kernel(const float* __restrict__ partial, int64_t rows, int64_t units, int G,
                              const int32_t* __restrict__ block_group, float* __restrict__ margins) {
    const int64_t row = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    float* m = margins + row * G;
    for (int g = 0; g < G; ++g) m[g] = 0.0f;
    for (int64_t b = 0; b < units; ++b) m[block_group[b]] += partial[b * rows + row];
}

int64_t blocks_for(int64_t n, int64_t per_block) { return (n + per_block - 1) / per_block; }

void check_input(const at::Tensor& t, at::ScalarType type, const at::Device& device, const char* name) {
    TORCH_CHECK(t.scalar_type() == type, "pg_predict::tree_ensemble: ", name, " must be ",
                c10::toString(type), ", got ", c10::toString(t.scalar_type()));
    TORCH_CHECK(t.device() == device, "pg_predict::tree_ensemble: ", name, " must be on ", device,
                " with x, got ", t.device());
    TORCH_CHECK(t.dim() <= 1, "pg_predict::tree_ensemble: ", name, " must be one-dimensional");
}

// The generic layout: the CPU kernel on host copies (the op's CPU checks apply).
at::Tensor score_on_host(const at::Tensor& x, const at::Tensor& meta, const at::Tensor& nodes,
                         const at::Tensor& leaves, const at::Tensor& cuts, const at::Tensor& aux) {
    const at::Tensor hx = x.cpu(), hm = meta.cpu(), hn = nodes.cpu(), hl = leaves.cpu(), hc = cuts.cpu(),
                     ha = aux.cpu();
    const PackedView v = make_view(hm.data_ptr<int64_t>(), hm.numel(), hn.data_ptr<int32_t>(), hn.numel(),
                                   hl.data_ptr<float>(), hl.numel(), hc.data_ptr<float>(), hc.numel(),
                                   ha.data_ptr<int32_t>(), ha.numel());
    at::Tensor out = at::empty({hx.size(0), v.num_groups}, hx.options());
    score(v, hx.data_ptr<float>(), hx.size(0), hx.size(1), out.data_ptr<float>());
    return out.to(x.device());
}

at::Tensor tree_ensemble_cuda(const at::Tensor& x_in, const at::Tensor& meta_in, const at::Tensor& nodes_in,
                              const at::Tensor& leaves_in, const at::Tensor& cuts_in, const at::Tensor& aux_in) {
    TORCH_CHECK(x_in.dim() == 2, "pg_predict::tree_ensemble: x must be [rows, features]");
    TORCH_CHECK(x_in.is_cuda(), "pg_predict::tree_ensemble (CUDA): x must be a CUDA tensor");
    const c10::cuda::CUDAGuard guard(x_in.device());
    const at::Device device = x_in.device();
    const at::Tensor x = x_in.to(at::kFloat).contiguous();
    const at::Tensor meta = meta_in.contiguous(), nodes = nodes_in.contiguous(),
                     leaves = leaves_in.contiguous(), cuts = cuts_in.contiguous(), aux = aux_in.contiguous();
    check_input(meta, at::kLong, device, "meta");
    check_input(nodes, at::kInt, device, "nodes");
    check_input(leaves, at::kFloat, device, "leaves");
    check_input(cuts, at::kFloat, device, "cuts");
    check_input(aux, at::kInt, device, "aux");
    try {
        // The header and aux are small: validated on the host by the CPU kernel's own checks.
        // For the perfect layout make_view reads only meta, aux and the array sizes, so the
        // device pointers of nodes, leaves and cuts are passed through, never dereferenced.
        const at::Tensor meta_h = meta.cpu(), aux_h = aux.cpu();
        const int64_t* mh = meta_h.data_ptr<int64_t>();
        if (meta_h.numel() > kMetaLayout && mh[kMetaLayout] != static_cast<int64_t>(Layout::Perfect))
            return score_on_host(x, meta, nodes, leaves, cuts, aux);
        const PackedView v = make_view(mh, meta_h.numel(), nodes.data_ptr<int32_t>(), nodes.numel(),
                                       leaves.data_ptr<float>(), leaves.numel(), cuts.data_ptr<float>(),
                                       cuts.numel(), aux_h.data_ptr<int32_t>(), aux_h.numel());
        const int64_t rows = x.size(0);
        const int F = v.num_features, G = v.num_groups, D = v.depth;
        TORCH_CHECK(x.size(1) == F, "pg_predict::tree_ensemble: batch has ", x.size(1),
                    " columns, the model reads ", F);
        at::Tensor out = at::zeros({rows, G}, x.options());
        if (rows == 0 || v.units == 0) return out;
        TORCH_CHECK(v.units <= 65535, "pg_predict::tree_ensemble (CUDA): more than 65535 tree blocks");

        const int32_t* aux_d = aux.data_ptr<int32_t>();
        const int32_t* cut_offset = aux_d;
        const int32_t* cut_steps = aux_d + F + 1;
        const int32_t* block_group = aux_d + 2 * F + 1;
        const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();

        // Shared memory for one block's words and leaves, if the device allows that much.
        const int64_t smem = 4 * int64_t(kLanes) * (((int64_t(1) << D) - 1) + (int64_t(1) << D));
        int smem_optin = 0;  // (not ATen/cuda/CUDAContext.h's device properties: that header needs cuBLAS & co.)
        C10_CUDA_CHECK(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device.index()));
        const int64_t smem_max = smem_optin;
        const bool stage = smem <= smem_max;
        if (stage && smem > 48 * 1024)
            C10_CUDA_CHECK(cudaFuncSetAttribute(trees_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                static_cast<int>(smem)));

        // Rows in chunks so that partial[] (units × chunk floats) stays bounded.
        const int64_t chunk = std::max<int64_t>(kThreads, std::min<int64_t>(rows, kMaxPartials / v.units));
        at::Tensor q = at::empty({std::min(rows, chunk) * std::max(F, 1)}, x.options().dtype(at::kInt));
        at::Tensor partial = at::empty({v.units * std::min(rows, chunk)}, x.options());
        for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
            const int64_t n = std::min(chunk, rows - r0);
            uint32_t* qd = reinterpret_cast<uint32_t*>(q.data_ptr<int32_t>());
            if (F > 0) {
                ranks_kernel<<<blocks_for(n * F, kThreads), kThreads, 0, stream>>>(
                    x.data_ptr<float>() + r0 * F, n, F, cuts.data_ptr<float>(), cut_offset, cut_steps,
                    v.less_equal, qd);
                C10_CUDA_CHECK(cudaGetLastError());
            }
            const dim3 grid(static_cast<unsigned>(blocks_for(n, int64_t(kThreads) * kRowsPerThread)),
                            static_cast<unsigned>(v.units));
            trees_kernel<<<grid, kThreads, stage ? smem : 0, stream>>>(
                qd, n, F, reinterpret_cast<const uint32_t*>(nodes.data_ptr<int32_t>()), leaves.data_ptr<float>(),
                D, stage, partial.data_ptr<float>());
            C10_CUDA_CHECK(cudaGetLastError());
            reduce_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(
                partial.data_ptr<float>(), n, v.units, G, block_group, out.data_ptr<float>() + r0 * G);
            C10_CUDA_CHECK(cudaGetLastError());
        }
        return out;
    } catch (const Error& e) {
        TORCH_CHECK(false, "pg_predict::tree_ensemble: ", e.what());
    }
    return at::Tensor();  // not reached: TORCH_CHECK(false) throws
}

}  // namespace
}  // namespace pg_predict::kernels

TORCH_LIBRARY_IMPL(pg_predict, CUDA, m) {
    m.impl("tree_ensemble", TORCH_FN(pg_predict::kernels::tree_ensemble_cuda));
}
