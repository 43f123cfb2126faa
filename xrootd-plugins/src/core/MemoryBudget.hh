// A global cap on bytes buffered by write-behind. acquire() blocks until the
// bytes are available or the deadline passes, which is what turns a slow disk
// into TCP backpressure instead of unbounded memory growth.
//
// It also keeps the buffers it has lent out for the next acquire (buffer() and
// recycle()), up to its capacity: a fresh 8 MiB buffer is 2048 page faults and
// as many zeroed pages (on a VM that hands freed memory back to its host, far
// more), and the copy into it was what held a 10 Gbit/s pull to 3.6 Gbit/s
// (docs/benchmarks.md). What is kept and what is in use never exceed the
// capacity together.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "AlignedBuffer.hh"

namespace wanio {

class MemoryBudget {
  public:
    explicit MemoryBudget(std::uint64_t capacity) : capacity_(capacity) {}

    // Returns true once `bytes` are reserved, false if `deadline` passed first.
    bool acquire(std::uint64_t bytes, std::chrono::steady_clock::time_point deadline);
    void release(std::uint64_t bytes);

    // A buffer of `size` bytes for bytes acquired: a kept one of that size when there
    // is one, else a new one (check valid()).
    std::unique_ptr<AlignedBuffer> buffer(std::size_t size);
    // Takes a buffer back, before its bytes are released: kept for buffer() while the
    // kept buffers fit the capacity, else freed.
    void recycle(std::unique_ptr<AlignedBuffer> buffer);

    std::uint64_t inUse() const;
    std::uint64_t peak() const;
    std::uint64_t keptBytes() const;
    std::uint64_t capacity() const { return capacity_; }

  private:
    const std::uint64_t capacity_;
    mutable std::mutex mutex_;
    std::condition_variable freed_;
    std::uint64_t used_ = 0;
    std::uint64_t peak_ = 0;
    std::vector<std::unique_ptr<AlignedBuffer>> kept_;
    std::uint64_t keptBytes_ = 0;
};

}  // namespace wanio
