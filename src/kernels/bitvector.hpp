// The bitvector layout's internals (see kernels/tree_ensemble.hpp): bitvector_pack.cpp packs
// and checks it; bitvector_portable.cpp and bitvector_avx2.cpp score it, equal bit for bit.
#pragma once

#include <cstdint>

#include "pg_predict/kernels/tree_ensemble.hpp"

namespace pg_predict::kernels::detail {

// Words of one block of trees: its state for 16 rows (the AVX2 pass) is 16 KB, half of L1,
// leaving room for the entries streaming through.
constexpr int kBitvectorBlockWords = 256;
constexpr int kBitvectorMaxFeatures = 4096;
constexpr int kBitvectorWordBits = 32;  // leaves per word

bool bitvector_eligible(const spec::TreeEnsemble&);
// Whether the bitvector layout scores this (eligible, perfect-layout) ensemble faster.
bool bitvector_cheaper(const spec::TreeEnsemble&);
// Appends the bitvector arrays to a generic packing of the same ensemble.
void pack_bitvectors(const spec::TreeEnsemble&, PackedEnsemble& generic);
// v covers the whole arrays on entry; on return its generic fields cover the generic part and
// v.bits the bitvector arrays. Throws Error(InvalidModel) for anything scoring could trip on.
void check_bitvectors(const int64_t* meta, int64_t meta_size, PackedView& v);
// The first part of check_bitvectors: the header's sizes, and v narrowed to the generic part
// (v.bits set to where the bitvector arrays lie, unchecked). Built without the layout too, so
// that a stored bitvector program is scored through its generic part.
void narrow_bitvectors(const int64_t* meta, int64_t meta_size, PackedView& v);

void score_bitvector_portable(const PackedView&, const float* x, int64_t rows, int64_t cols, float* margins);
// nullptr where the file was built without AVX2 flags
PerfectPath bitvector_avx2_path();

}  // namespace pg_predict::kernels::detail
