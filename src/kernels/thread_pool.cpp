#include "pg_predict/kernels/thread_pool.hpp"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "pg_predict/common/interrupt.hpp"

namespace pg_predict::kernels {

namespace {

class Pool {
public:
    // Workers are never joined: the backend exits with them asleep, like libgomp's.
    void run(int threads, int64_t begin, int64_t end, int64_t grain,
             const std::function<void(int64_t, int64_t)>& fn) {
        // One run at a time: the backend's thread and the background thread (background.hpp)
        // may both score; the second waits for the first run to end.
        std::lock_guard<std::mutex> one_run(run_mutex_);
        std::unique_lock<std::mutex> lock(mutex_);
        grow(threads - 1);
        job_ = &fn;
        begin_ = begin;
        end_ = end;
        grain_ = grain;
        next_.store(begin);
        error_ = nullptr;
        helpers_wanted_ = threads - 1;
        helpers_running_ = 0;
        generation_++;
        lock.unlock();
        wake_.notify_all();

        work();

        lock.lock();
        done_.wait(lock, [this] { return helpers_wanted_ == 0 && helpers_running_ == 0; });
        job_ = nullptr;
        if (error_) std::rethrow_exception(error_);
        check_interrupts();  // the chunks stopped early for it
    }

    // The calling thread takes chunks of the run under way, if any, until none are left.
    void help() {
        std::unique_lock<std::mutex> lock(mutex_);
        if (job_ != nullptr) work_as_helper(lock);
    }

private:
    void grow(int workers) {
        while ((int)workers_.size() < workers) {
            // Start the thread with every signal blocked; it inherits the mask.
            sigset_t all, saved;
            sigfillset(&all);
            pthread_sigmask(SIG_SETMASK, &all, &saved);
            workers_.emplace_back([this] { loop(); });
            workers_.back().detach();
            pthread_sigmask(SIG_SETMASK, &saved, nullptr);
        }
    }

    void loop() {
        uint64_t seen = 0;
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            wake_.wait(lock, [&] { return generation_ != seen && helpers_wanted_ > 0; });
            seen = generation_;
            helpers_wanted_--;
            work_as_helper(lock);
        }
    }

    // Takes chunks, counted as a running helper so that run() waits for it; called and returns
    // with the lock held.
    void work_as_helper(std::unique_lock<std::mutex>& lock) {
        helpers_running_++;
        lock.unlock();
        work();
        lock.lock();
        helpers_running_--;
        if (helpers_wanted_ == 0 && helpers_running_ == 0) done_.notify_all();
    }

    // Takes chunks until none are left or an interrupt is pending (the caller throws for it).
    void work() {
        for (;;) {
            if (interrupt_pending()) return;
            int64_t chunk = next_.fetch_add(grain_);
            if (chunk >= end_) return;
            try {
                (*job_)(chunk, std::min(end_, chunk + grain_));
            } catch (...) {
                std::lock_guard<std::mutex> guard(error_mutex_);
                if (!error_) error_ = std::current_exception();
                next_.store(end_);
            }
        }
    }

    std::mutex run_mutex_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable done_;
    std::vector<std::thread> workers_;
    uint64_t generation_ = 0;
    int helpers_wanted_ = 0;
    int helpers_running_ = 0;
    const std::function<void(int64_t, int64_t)>* job_ = nullptr;
    int64_t begin_ = 0, end_ = 0, grain_ = 1;
    std::atomic<int64_t> next_{0};
    std::mutex error_mutex_;
    std::exception_ptr error_;
};

Pool& pool() {
    static Pool* instance = new Pool();  // never destroyed: workers may still be asleep in it
    return *instance;
}

}  // namespace

namespace {
thread_local int background_threads = 0;  // set on the background thread while it runs a job
std::atomic<int> requested_pool_threads{1};
}  // namespace

void set_pool_threads(int threads) noexcept { requested_pool_threads.store(std::max(threads, 1)); }

int pool_threads() noexcept { return requested_pool_threads.load(std::memory_order_relaxed); }

void set_background_threads(int threads) noexcept { background_threads = threads; }

bool on_background_thread() noexcept { return background_threads > 0; }

void help_parallel() { pool().help(); }

void run_parallel(int threads, int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn) {
    if (end <= begin) return;
    grain = std::max<int64_t>(grain, 1);
    int64_t chunks = (end - begin + grain - 1) / grain;
    // The background thread's runs always go through the pool, so that the backend's thread
    // can join them (help_parallel) once it has read the next batch.
    const bool background = background_threads > 0;
    if (background) threads = background_threads;
    threads = (int)std::min<int64_t>(std::max(threads, 1), chunks);
    if (threads <= 1 && !(background && chunks > 1)) {
        for (int64_t chunk = begin; chunk < end; chunk += grain) {
            check_interrupts();
            fn(chunk, std::min(end, chunk + grain));
        }
        return;
    }
    pool().run(threads, begin, end, grain, fn);
}

}  // namespace pg_predict::kernels
