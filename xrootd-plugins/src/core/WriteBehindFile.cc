#include "WriteBehindFile.hh"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>

namespace wanio {

WriteBehindFile::WriteBehindFile(int fd, int directFd, const WriteBehindSettings& settings,
                                 WriterPool& pool, MemoryBudget& budget, PluginCounters* counters)
    : fd_(fd),
      directFd_(directFd),
      settings_(settings),
      pool_(pool),
      budget_(budget),
      counters_(counters ? *counters : PluginCounters::process()),
      assembler_(
          settings.chunkSize,
          [this](std::unique_ptr<AlignedBuffer>& out) { return allocateChunk(out, *callerLock_); },
          [this](Chunk&& chunk) { return enqueue(std::move(chunk)); }) {}

WriteBehindFile::~WriteBehindFile() {
    // Never leave a writer task pointing at a dead object.
    drain();
}

ssize_t WriteBehindFile::write(const void* data, off_t offset, std::size_t len) {
    std::lock_guard<std::mutex> gate(callerGate_);
    std::unique_lock<std::mutex> lock(mutex_);
    if (error_ != 0) return error_;
    callerLock_ = &lock;
    deadline_ = Clock::now() + std::chrono::seconds(settings_.waitSeconds);
    ssize_t rc = assembler_.add(static_cast<const char*>(data), offset, len);
    callerLock_ = nullptr;
    if (rc < 0) {
        setErrorLocked(static_cast<int>(rc));
        return error_;
    }
    stats_.bytes += len;
    PluginCounters::add(counters_.receivedBytes, len);
    logicalSize_ = std::max(logicalSize_, offset + static_cast<off_t>(len));
    return rc;
}

int WriteBehindFile::allocateChunk(std::unique_ptr<AlignedBuffer>& out,
                                   std::unique_lock<std::mutex>& lock) {
    const auto start = Clock::now();
    // Per-file bound first: it keeps one fast client from taking all the memory.
    bool ok = changed_.wait_until(lock, deadline_, [this] {
        return error_ != 0 || static_cast<int>(waiting_.size()) + running_ < settings_.perFileQueue;
    });
    if (ok && error_ == 0) ok = budget_.acquire(settings_.chunkSize, deadline_);
    const auto waited = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
    stats_.blockedNanos += waited;
    PluginCounters::add(counters_.blockedNanos, waited);
    if (error_ != 0) {
        if (ok) budget_.release(settings_.chunkSize);
        return error_;
    }
    if (!ok) return -ETIMEDOUT;
    out = budget_.buffer(settings_.chunkSize);
    if (!out->valid()) {
        out.reset();
        budget_.release(settings_.chunkSize);
        return -ENOMEM;
    }
    return 0;
}

int WriteBehindFile::enqueue(Chunk&& chunk) {
    if (error_ != 0) {
        chunk.buffer.reset();
        budget_.release(settings_.chunkSize);
        return error_;
    }
    PluginCounters::add(counters_.queuedChunks, 1);
    PluginCounters::add(counters_.queuedBytes, static_cast<std::int64_t>(chunk.length()));
    waiting_.push_back(std::make_shared<Chunk>(std::move(chunk)));
    pump();
    return 0;
}

void WriteBehindFile::pump() {
    while (running_ < settings_.perFileWriters && !waiting_.empty()) {
        std::shared_ptr<Chunk> next = std::move(waiting_.front());
        waiting_.pop_front();
        ++running_;
        stats_.maxConcurrent = std::max(stats_.maxConcurrent, running_);
        pool_.post([this, next] { writeChunk(next); });
    }
}

int WriteBehindFile::writeAll(int fd, const char* data, std::size_t len, off_t offset) {
    std::size_t done = 0;
    while (done < len) {
        ssize_t n = ::pwrite(fd, data + done, len - done, offset + static_cast<off_t>(done));
        if (n < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        if (n == 0) return -EIO;  // no progress: treat as an I/O error, never spin
        done += static_cast<std::size_t>(n);
    }
    return 0;
}

void WriteBehindFile::writeChunk(const std::shared_ptr<Chunk>& chunk) {
    const off_t offset = chunk->fileOffset();
    const std::size_t len = chunk->length();
    int rc = 0;
    bool direct = false;
    const int dfd = directFd_.load();
    // O_DIRECT only for whole aligned chunks; heads and tails go through the page cache.
    if (dfd >= 0 && chunk->begin == 0 && len == settings_.chunkSize &&
        len % AlignedBuffer::kAlignment == 0) {
        rc = writeAll(dfd, chunk->bytes(), len, offset);
        if (rc == -EINVAL) {
            directFd_.store(-1);  // filesystem refuses O_DIRECT (e.g. tmpfs): fall back
            rc = writeAll(fd_, chunk->bytes(), len, offset);
        } else {
            direct = true;
        }
    } else {
        rc = writeAll(fd_, chunk->bytes(), len, offset);
    }
    if (rc == 0 && settings_.writeback && !direct) {
        // Start writeback now so dirty pages do not pile up into a flush cliff.
        ::sync_file_range(fd_, offset, static_cast<off_t>(len), SYNC_FILE_RANGE_WRITE);
    }
    std::uint32_t adler = 0;
    if (rc == 0 && settings_.checksum) {
        adler = static_cast<std::uint32_t>(
            adler32(1, reinterpret_cast<const Bytef*>(chunk->bytes()), static_cast<uInt>(len)));
        PluginCounters::add(counters_.checksumBytes, len);
    }
    if (rc == 0) {
        PluginCounters::add(counters_.writtenBytes, len);
        PluginCounters::add(direct ? counters_.directChunks : counters_.bufferedChunks, 1);
    } else {
        PluginCounters::add(counters_.chunkErrors, 1);
    }
    dequeued(len);
    // Return memory before taking the file lock: a writer blocked on the
    // budget while holding that lock must be able to make progress.
    budget_.recycle(std::move(chunk->buffer));
    budget_.release(settings_.chunkSize);

    std::lock_guard<std::mutex> lock(mutex_);
    --running_;
    if (rc < 0) {
        setErrorLocked(rc);
    } else {
        ++stats_.chunks;
        if (direct) ++stats_.directChunks;
        if (settings_.checksum) adler_.add(offset, len, adler);
        pump();
    }
    changed_.notify_all();
}

void WriteBehindFile::setErrorLocked(int negErrno) {
    if (error_ != 0) return;
    error_ = negErrno;
    // Queued chunks of a failed file are worthless: free their memory now.
    for (auto& chunk : waiting_) {
        dequeued(chunk->length());
        chunk->buffer.reset();
        budget_.release(settings_.chunkSize);
    }
    waiting_.clear();
    if (assembler_.hasOpenChunk()) {
        assembler_.discard();
        budget_.release(settings_.chunkSize);
    }
    changed_.notify_all();
}

void WriteBehindFile::dequeued(std::size_t length) {
    PluginCounters::add(counters_.queuedChunks, -1);
    PluginCounters::add(counters_.queuedBytes, -static_cast<std::int64_t>(length));
}

int WriteBehindFile::preallocate(off_t size) {
    if (size <= 0) return 0;
    if (::fallocate(fd_, FALLOC_FL_KEEP_SIZE, 0, size) == 0) return 0;
    const int err = errno;
    if (err == EOPNOTSUPP || err == ENOSYS) return 0;  // optional optimisation only
    fail(-err);
    return -err;
}

int WriteBehindFile::drain() {
    std::lock_guard<std::mutex> gate(callerGate_);
    std::unique_lock<std::mutex> lock(mutex_);
    if (error_ == 0) {
        int rc = assembler_.flush();
        if (rc < 0) setErrorLocked(rc);
    }
    changed_.wait(lock, [this] { return waiting_.empty() && running_ == 0; });
    return error_;
}

void WriteBehindFile::fail(int negErrno) {
    std::lock_guard<std::mutex> lock(mutex_);
    setErrorLocked(negErrno);
}

int WriteBehindFile::error() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
}

off_t WriteBehindFile::logicalSize() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return logicalSize_;
}

bool WriteBehindFile::hasBufferedData() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return assembler_.hasOpenChunk() || !waiting_.empty() || running_ > 0;
}

bool WriteBehindFile::wholeFileAdler(off_t fileSize, std::uint32_t& adler) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!settings_.checksum || error_ != 0) return false;
    return adler_.wholeFile(fileSize, adler);
}

void WriteBehindFile::invalidateChecksum() {
    std::lock_guard<std::mutex> lock(mutex_);
    adler_.invalidate();
}

WriteBehindStats WriteBehindFile::stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
}

}  // namespace wanio
