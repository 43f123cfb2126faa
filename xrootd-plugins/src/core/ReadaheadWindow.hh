// Decides when and what to prefetch for one reader: keeps `window` bytes
// ahead of a sequential reader, topping up once half of it has been consumed,
// and does nothing for random access. Reads that arrive out of order within
// one window of the reader's front (parallel chunk reads served by several
// threads) still count as sequential. Thread-safe; pure logic (the caller
// issues the actual posix_fadvise/readahead).
#pragma once

#include <sys/types.h>

#include <mutex>

namespace wanio {

class ReadaheadWindow {
  public:
    explicit ReadaheadWindow(off_t window) : window_(window) {}

    // Records a read of [offset, offset+size). Returns true with the range to
    // prefetch if one should be issued now.
    bool onRead(off_t offset, off_t size, off_t& prefetchFrom, off_t& prefetchLen);

  private:
    const off_t window_;
    std::mutex mutex_;
    off_t front_ = 0;  // the furthest end read so far by the sequential stream
    off_t edge_ = 0;   // end of what has been prefetched
};

}  // namespace wanio
