// Reads ahead of sequential readers on threads of its own. A prefetch request is cut
// into segments that the pool's threads bring into the page cache side by side, so
// several disk reads are in flight (the AENEAS study: parallel disk accesses help)
// while the thread serving the client goes on sending. Each segment is mapped and
// populated (madvise MADV_POPULATE_READ): the worker waits for the disk, the data is
// not copied to user space, and the later sendfile()/read() finds it in memory.
// Prefetching is a hint: a full queue drops the request, errors are only counted.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "UniqueFd.hh"

namespace wanio {

struct WanConfig;

class ReadaheadPool {
  public:
    struct Stats {
        std::uint64_t requests = 0;  // prefetch() calls accepted
        std::uint64_t dropped = 0;   // prefetch() calls refused (queue full)
        std::uint64_t segments = 0;  // segments populated
        std::uint64_t bytes = 0;     // bytes populated
        std::uint64_t errors = 0;    // segments that failed (ignored)
        std::uint64_t queued = 0;    // segments waiting for a thread now
    };

    // `threads` workers, requests cut into `segment`-byte pieces, at most `maxQueued`
    // segments waiting (beyond that a request is dropped whole).
    ReadaheadPool(int threads, off_t segment, std::size_t maxQueued);
    ~ReadaheadPool();
    ReadaheadPool(const ReadaheadPool&) = delete;
    ReadaheadPool& operator=(const ReadaheadPool&) = delete;

    // The process's one pool, made by the first call from wanio.rd.threads and
    // wanio.rd.readahead (both layers are configured from the same file, so they ask for
    // the same settings). Null when either is 0: the callers then hint the kernel inline.
    static ReadaheadPool* shared(const WanConfig& config);

    // Queues [from, from+len) of `fd` (clamped to the file's size). The descriptor is
    // duplicated, so the caller may close its own at once. False if dropped.
    bool prefetch(int fd, off_t from, off_t len);
    // Blocks until every queued segment has been worked on (tests, shutdown).
    void waitIdle();
    Stats stats() const;

  private:
    struct Segment {
        std::shared_ptr<UniqueFd> fd;
        off_t offset;
        off_t length;
    };
    void run();
    bool populate(const Segment& segment);

    const off_t segment_;
    const std::size_t maxQueued_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable idle_;
    std::deque<Segment> queue_;
    int busy_ = 0;
    bool stopping_ = false;
    Stats stats_;
    std::vector<std::thread> threads_;
};

// Prefetches [from, from+len) of `fd` as `config` asks: on the shared pool's threads
// (wanio.rd.threads), else, or when the pool's queue is full, as a kernel readahead
// hint (POSIX_FADV_WILLNEED) from the calling thread. True when the pool took it.
bool prefetch(const WanConfig& config, int fd, off_t from, off_t len);

}  // namespace wanio
