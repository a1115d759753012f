// What every TorchScript operator of src/kernels (*_op.cpp) shares: its registration with the
// anchor that keeps it linked, and the guard around its kernel. A pg_predict::Error the kernel
// throws (a cancel too: the runtime then sees the pending interrupt) becomes the op's own
// c10::Error, "pg_predict::<op>: <message>", which is what the TorchScript interpreter can carry
// back to the runtime. Torch TUs only.
#pragma once

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include "pg_predict/common/error.hpp"

namespace pg_predict::kernels {

template <typename Body>
auto op_guard(const char* op, Body&& body) -> decltype(body()) {
    try {
        return body();
    } catch (const Error& e) {
        TORCH_CHECK(false, "pg_predict::", op, ": ", e.what());
    }
}

// A new [rows, width] tensor of `options` that fill(out) writes, under op_guard.
template <typename Fill>
at::Tensor op_output(const char* op, int64_t rows, int64_t width, const at::TensorOptions& options, Fill&& fill) {
    at::Tensor out = at::empty({rows, width}, options);
    op_guard(op, [&] { fill(out); });
    return out;
}

// t as a contiguous float64 tensor (the float64 kernels' inputs).
inline at::Tensor float64_contiguous(const at::Tensor& t) { return t.to(at::kDouble).contiguous(); }

}  // namespace pg_predict::kernels

// Registers torch.ops.pg_predict.<op> (`schema`, implemented by `fn`) and defines the anchor
// `int pg_predict::kernels::<anchor>()` that code emitting calls to the op references, so that a
// static link keeps this object and its registrar. At namespace scope, once per op file.
#define PG_PREDICT_KERNEL_OP(anchor, schema, fn)            \
    int pg_predict::kernels::anchor() { return 1; }         \
    TORCH_LIBRARY_FRAGMENT(pg_predict, m) { m.def(schema, TORCH_FN(fn)); }
