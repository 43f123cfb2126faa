// A global cap on bytes buffered by write-behind. acquire() blocks until the
// bytes are available or the deadline passes, which is what turns a slow disk
// into TCP backpressure instead of unbounded memory growth.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace wanio {

class MemoryBudget {
  public:
    explicit MemoryBudget(std::uint64_t capacity) : capacity_(capacity) {}

    // Returns true once `bytes` are reserved, false if `deadline` passed first.
    bool acquire(std::uint64_t bytes, std::chrono::steady_clock::time_point deadline);
    void release(std::uint64_t bytes);

    std::uint64_t inUse() const;
    std::uint64_t peak() const;
    std::uint64_t capacity() const { return capacity_; }

  private:
    const std::uint64_t capacity_;
    mutable std::mutex mutex_;
    std::condition_variable freed_;
    std::uint64_t used_ = 0;
    std::uint64_t peak_ = 0;
};

}  // namespace wanio
