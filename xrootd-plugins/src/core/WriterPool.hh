// A fixed pool of std::threads running disk-write tasks. Deliberately not the
// XrdScheduler: blocking pwrite()s there would starve protocol threads.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace wanio {

class WriterPool {
  public:
    explicit WriterPool(int threads);
    ~WriterPool();
    WriterPool(const WriterPool&) = delete;
    WriterPool& operator=(const WriterPool&) = delete;

    void post(std::function<void()> task);
    int size() const { return static_cast<int>(threads_.size()); }

  private:
    void run();

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> tasks_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace wanio
