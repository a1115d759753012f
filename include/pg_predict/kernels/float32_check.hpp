// The op a program calls where its trees read its featurized columns as float32
// (src/kernels/float32_check_op.cpp): referencing the anchor keeps the op linked.
#pragma once

namespace pg_predict::kernels {

int float32_check_op_anchor();

}  // namespace pg_predict::kernels
