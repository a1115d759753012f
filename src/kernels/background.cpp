#include "pg_predict/kernels/background.hpp"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "pg_predict/kernels/thread_pool.hpp"

namespace pg_predict::kernels {

namespace {

class Background {
public:
    bool start(std::function<void()> job, int threads) {
        std::unique_lock<std::mutex> lock(mutex_);
        if (pending_) return false;
        if (!started_) {
            // Started with every signal blocked; it inherits the mask (as the pool's threads).
            sigset_t all, saved;
            sigfillset(&all);
            pthread_sigmask(SIG_SETMASK, &all, &saved);
            std::thread([this] { loop(); }).detach();
            pthread_sigmask(SIG_SETMASK, &saved, nullptr);
            started_ = true;
        }
        job_ = std::move(job);
        threads_ = threads;
        error_ = nullptr;
        pending_ = true;
        done_ = false;
        lock.unlock();
        wake_.notify_one();
        return true;
    }

    // Waits for the job, taking chunks of its parallel runs meanwhile; its exception, if any.
    std::exception_ptr wait(bool help) {
        std::unique_lock<std::mutex> lock(mutex_);
        if (!pending_) return nullptr;
        while (!done_) {
            if (help) {
                lock.unlock();
                help_parallel();
                lock.lock();
            }
            // The job may start another run after this one: look again shortly.
            finished_.wait_for(lock, std::chrono::microseconds(50), [this] { return done_; });
        }
        pending_ = false;
        job_ = nullptr;
        std::exception_ptr error = error_;
        error_ = nullptr;
        return error;
    }

    bool running() {
        std::lock_guard<std::mutex> lock(mutex_);
        return pending_;
    }

private:
    void loop() {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            wake_.wait(lock, [this] { return pending_ && !done_ && !running_; });
            running_ = true;
            std::function<void()> job = job_;
            const int threads = threads_;
            lock.unlock();
            std::exception_ptr error;
            set_background_threads(threads);
            try {
                job();
            } catch (...) {
                error = std::current_exception();
            }
            set_background_threads(0);
            lock.lock();
            error_ = error;
            running_ = false;
            done_ = true;
            finished_.notify_all();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_, finished_;
    bool started_ = false;
    bool pending_ = false;  // a job was started and not yet waited for
    bool running_ = false;  // the background thread is inside a job
    bool done_ = false;
    std::function<void()> job_;
    int threads_ = 1;
    std::exception_ptr error_;
};

Background& background() {
    static Background* instance = new Background();  // never destroyed: its thread may sleep in it
    return *instance;
}

}  // namespace

bool start_background(std::function<void()> job, int threads) {
    return background().start(std::move(job), threads < 1 ? 1 : threads);
}

void finish_background() {
    if (std::exception_ptr error = background().wait(true)) std::rethrow_exception(error);
}

void abandon_background() noexcept {
    try {
        background().wait(false);
    } catch (...) {
    }
}

bool background_running() noexcept {
    try {
        return background().running();
    } catch (...) {
        return false;
    }
}

}  // namespace pg_predict::kernels
