// Per-file write-behind: the caller's write() only copies into chunk buffers;
// a bounded number of pwrite()s per file run in the shared WriterPool, each
// also computing the adler32 of its chunk. The first I/O error is sticky and
// returned by every later call, so a client learns about it within one request.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

#include "AdlerTracker.hh"
#include "Chunk.hh"
#include "ChunkAssembler.hh"
#include "MemoryBudget.hh"
#include "PluginCounters.hh"
#include "WriterPool.hh"

namespace wanio {

struct WriteBehindSettings {
    std::size_t chunkSize = 8u << 20;
    int perFileWriters = 4;  // concurrent pwrite()s for this file
    int perFileQueue = 16;   // chunks queued or in flight before write() blocks
    int waitSeconds = 120;   // longest block in write() before -ETIMEDOUT
    bool writeback = true;   // sync_file_range(WRITE) after each chunk
    bool checksum = true;    // streaming adler32
};

struct WriteBehindStats {
    std::uint64_t bytes = 0;         // bytes accepted from the caller
    std::uint64_t chunks = 0;        // chunks written to disk
    int maxConcurrent = 0;           // most pwrite()s in flight at once
    std::uint64_t blockedNanos = 0;  // time write() spent waiting for queue/memory
    std::uint64_t directChunks = 0;  // chunks written through the O_DIRECT fd
};

class WriteBehindFile {
  public:
    // `fd` stays owned by the caller and must outlive this object; `directFd`
    // (or -1) is an optional O_DIRECT descriptor of the same file. `counters` (the
    // process's when null) receives the monitoring totals.
    WriteBehindFile(int fd, int directFd, const WriteBehindSettings& settings, WriterPool& pool,
                    MemoryBudget& budget, PluginCounters* counters = nullptr);
    ~WriteBehindFile();
    WriteBehindFile(const WriteBehindFile&) = delete;
    WriteBehindFile& operator=(const WriteBehindFile&) = delete;

    // Returns len, or -errno (sticky error, -ETIMEDOUT on backpressure timeout).
    ssize_t write(const void* data, off_t offset, std::size_t len);
    // Reserves disk space up front so a full disk fails the first write.
    int preallocate(off_t size);
    // Writes out everything buffered and waits for it. Returns 0 or the sticky -errno.
    int drain();
    // Records an error found by the owner (e.g. a failed truncate) as sticky.
    void fail(int negErrno);

    int error() const;
    off_t logicalSize() const;
    bool hasBufferedData() const;
    // After drain(): the whole-file adler32 if the writes covered [0, fileSize) exactly once.
    bool wholeFileAdler(off_t fileSize, std::uint32_t& adler) const;
    void invalidateChecksum();
    WriteBehindStats stats() const;

  private:
    using Clock = std::chrono::steady_clock;

    int allocateChunk(std::unique_ptr<AlignedBuffer>& out, std::unique_lock<std::mutex>& lock);
    int enqueue(Chunk&& chunk);
    void pump();
    void writeChunk(const std::shared_ptr<Chunk>& chunk);
    int writeAll(int fd, const char* data, std::size_t len, off_t offset);
    void setErrorLocked(int negErrno);
    // A chunk left the queue (written, failed or discarded): the queue gauges go down.
    void dequeued(std::size_t length);

    const int fd_;
    std::atomic<int> directFd_;
    const WriteBehindSettings settings_;
    WriterPool& pool_;
    MemoryBudget& budget_;
    PluginCounters& counters_;

    // Serialises callers of write()/drain(): the assembler is not re-entrant and
    // a caller waiting for queue space or memory releases mutex_.
    std::mutex callerGate_;
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    ChunkAssembler assembler_;
    std::deque<std::shared_ptr<Chunk>> waiting_;
    int running_ = 0;
    int error_ = 0;
    off_t logicalSize_ = 0;
    AdlerTracker adler_;
    WriteBehindStats stats_;
    // Valid only during write(): the lock and deadline used by the assembler callbacks.
    std::unique_lock<std::mutex>* callerLock_ = nullptr;
    Clock::time_point deadline_;
};

}  // namespace wanio
