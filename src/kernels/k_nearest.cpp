// The k nearest columns of each row (kernels/k_nearest.hpp).
#include "pg_predict/kernels/k_nearest.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

#include "pg_predict/kernels/tree_ensemble.hpp"  // detail::parallel_for

namespace pg_predict::kernels {
namespace {

constexpr int64_t kNeighborRows = 16;

// (distance, column) in a stable ascending sort's order: NaN after every number.
struct Entry {
    double d;
    int64_t i;
};
inline bool before(const Entry& a, const Entry& b) {
    const bool an = std::isnan(a.d), bn = std::isnan(b.d);
    if (an != bn) return bn;  // a number before NaN
    if (!an && a.d != b.d) return a.d < b.d;
    return a.i < b.i;
}

void row(const double* d, int64_t n, int64_t k, double* dk, int64_t* ik, std::vector<Entry>& heap) {
    // A max-heap (by `before`) of the k best so far; columns come in ascending order, so a later
    // column enters only when strictly before the worst kept one.
    heap.clear();
    for (int64_t j = 0; j < n; ++j) {
        const Entry e{d[j], j};
        if (static_cast<int64_t>(heap.size()) < k) {
            heap.push_back(e);
            std::push_heap(heap.begin(), heap.end(), before);
        } else if (before(e, heap.front())) {
            std::pop_heap(heap.begin(), heap.end(), before);
            heap.back() = e;
            std::push_heap(heap.begin(), heap.end(), before);
        }
    }
    std::sort_heap(heap.begin(), heap.end(), before);
    for (int64_t j = 0; j < k; ++j) {
        dk[j] = heap[j].d;
        ik[j] = heap[j].i;
    }
}

}  // namespace

void k_nearest(const double* d, int64_t rows, int64_t n, int64_t k, double* dk, int64_t* ik) {
    if (rows <= 0 || k <= 0) return;
    detail::parallel_for(0, rows, kNeighborRows, [&](int64_t begin, int64_t end) {
        std::vector<Entry> heap;
        heap.reserve(static_cast<size_t>(k));
        for (int64_t r = begin; r < end; ++r) row(d + r * n, n, k, dk + r * k, ik + r * k, heap);
    });
}

}  // namespace pg_predict::kernels
