// The background thread (kernels/background.hpp): a job's parallel runs go through the pool
// with the thread count it was given, the waiting thread joins them, every chunk runs once,
// errors reach the waiter, a busy thread refuses a second job, and abandoning drops the error.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "pg_predict/kernels/background.hpp"
#include "pg_predict/kernels/thread_pool.hpp"

using namespace pg_predict::kernels;

namespace {

void count_rows(std::vector<std::atomic<int>>* seen, std::atomic<int>* threads_asked) {
    // The job asks for 8 threads; on the background thread the pool takes the job's count.
    run_parallel(8, 0, static_cast<int64_t>(seen->size()), 64, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; r++) (*seen)[r]++;
        std::this_thread::sleep_for(std::chrono::microseconds(20));  // leave chunks to join
    });
    (*threads_asked)++;
}

}  // namespace

TEST(Background, EveryChunkRunsOnceAndTheWaiterJoins) {
    for (int threads : {1, 2, 3}) {
        for (int64_t rows : {1, 64, 65, 20000}) {
            std::vector<std::atomic<int>> seen(rows);
            for (auto& s : seen) s = 0;
            std::atomic<int> runs{0};
            ASSERT_TRUE(start_background([&] { count_rows(&seen, &runs); }, threads));
            EXPECT_TRUE(background_running());
            finish_background();
            EXPECT_FALSE(background_running());
            EXPECT_EQ(runs.load(), 1);
            for (int64_t r = 0; r < rows; r++) ASSERT_EQ(seen[r].load(), 1) << "threads " << threads << " row " << r;
        }
    }
    finish_background();  // nothing pending: nothing to do
}

TEST(Background, ABusyThreadRefusesASecondJob) {
    std::atomic<bool> release{false};
    ASSERT_TRUE(start_background([&] { while (!release) std::this_thread::yield(); }, 1));
    int ran = 0;
    EXPECT_FALSE(start_background([&] { ran++; }, 1));
    release = true;
    finish_background();
    EXPECT_EQ(ran, 0);
    ASSERT_TRUE(start_background([&] { ran++; }, 1));
    finish_background();
    EXPECT_EQ(ran, 1);
}

TEST(Background, ErrorsReachTheWaiterOrAreDropped) {
    ASSERT_TRUE(start_background(
        [] { run_parallel(2, 0, 1000, 10, [](int64_t begin, int64_t) { if (begin == 500) throw std::runtime_error("chunk"); }); },
        2));
    EXPECT_THROW(finish_background(), std::runtime_error);
    ASSERT_TRUE(start_background([] { throw std::runtime_error("job"); }, 1));
    abandon_background();  // waits, drops the error
    EXPECT_FALSE(background_running());
    // The pool and the thread still work, and the backend thread's own runs are unaffected.
    std::atomic<int64_t> total{0};
    ASSERT_TRUE(start_background([&] { run_parallel(1, 0, 1000, 10, [&](int64_t b, int64_t e) { total += e - b; }); }, 2));
    run_parallel(2, 0, 1000, 10, [&](int64_t b, int64_t e) { total += e - b; });
    finish_background();
    EXPECT_EQ(total.load(), 2000);
}
