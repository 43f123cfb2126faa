#include "WriterPool.hh"

namespace wanio {

WriterPool::WriterPool(int threads) {
    threads_.reserve(threads);
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

WriterPool::~WriterPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
}

void WriterPool::post(std::function<void()> task) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        tasks_.push_back(std::move(task));
    }
    wake_.notify_one();
}

void WriterPool::run() {
    for (;;) {
        std::function<void()> task;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
            // Drain queued work even when stopping: dropping a task would lose data.
            if (tasks_.empty()) return;
            task = std::move(tasks_.front());
            tasks_.pop_front();
        }
        task();
    }
}

}  // namespace wanio
