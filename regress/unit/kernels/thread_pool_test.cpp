// The kernel's thread pool: every chunk runs exactly once, whatever the thread count, and an
// exception in one chunk reaches the caller.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "pg_predict/kernels/thread_pool.hpp"

using pg_predict::kernels::run_parallel;

TEST(ThreadPool, EveryChunkRunsOnce) {
    for (int threads : {1, 2, 3, 8}) {
        for (int64_t rows : {0, 1, 63, 64, 65, 10000}) {
            std::vector<std::atomic<int>> seen(rows);
            for (auto& s : seen) s = 0;
            run_parallel(threads, 0, rows, 64, [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; r++) seen[r]++;
            });
            for (int64_t r = 0; r < rows; r++) ASSERT_EQ(seen[r].load(), 1) << "threads " << threads << " row " << r;
        }
    }
}

TEST(ThreadPool, ManyRunsInARow) {
    std::atomic<int64_t> total{0};
    for (int run = 0; run < 2000; run++)
        run_parallel(2 + run % 3, 0, 1000, 10, [&](int64_t begin, int64_t end) { total += end - begin; });
    EXPECT_EQ(total.load(), 2000 * 1000);
}

TEST(ThreadPool, ExceptionReachesTheCaller) {
    EXPECT_THROW(run_parallel(2, 0, 1000, 10,
                              [](int64_t begin, int64_t) {
                                  if (begin == 500) throw std::runtime_error("chunk failed");
                              }),
                 std::runtime_error);
    // and the pool still works afterwards
    std::atomic<int64_t> total{0};
    run_parallel(2, 0, 100, 10, [&](int64_t begin, int64_t end) { total += end - begin; });
    EXPECT_EQ(total.load(), 100);
}
