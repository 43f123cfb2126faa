#include "ReadaheadPool.hh"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "PluginCounters.hh"
#include "WanConfig.hh"

namespace wanio {

ReadaheadPool::ReadaheadPool(int threads, off_t segment, std::size_t maxQueued)
    : segment_(std::max<off_t>(segment, 1)), maxQueued_(maxQueued) {
    threads_.reserve(static_cast<std::size_t>(std::max(threads, 0)));
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

ReadaheadPool::~ReadaheadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
        queue_.clear();  // hints only: nothing is lost by not doing them
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
}

ReadaheadPool* ReadaheadPool::shared(const WanConfig& config) {
    const int threads = config.readaheadThreads;
    const off_t window = static_cast<off_t>(config.readahead);
    if (threads <= 0 || window <= 0) return nullptr;
    // Segments small enough to spread one window over every thread, large enough to be
    // efficient disk reads; room for the windows of a few files at once.
    static ReadaheadPool pool(threads, std::clamp<off_t>(window / threads, 1 << 20, 8 << 20),
                              static_cast<std::size_t>(4 * threads + 4 * (window >> 20)));
    return &pool;
}

bool ReadaheadPool::prefetch(int fd, off_t from, off_t len) {
    struct stat st;
    if (threads_.empty() || len <= 0 || from < 0 || ::fstat(fd, &st) != 0) return false;
    // Mapped pages past the end of the file cannot be populated.
    len = std::min<off_t>(len, st.st_size - std::min<off_t>(from, st.st_size));
    if (len <= 0) return false;
    const std::size_t pieces = static_cast<std::size_t>((len + segment_ - 1) / segment_);
    // Our own descriptor: the caller may close its one before the workers get here.
    auto dup = std::make_shared<UniqueFd>(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (dup->get() < 0) return false;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_ || queue_.size() + pieces > maxQueued_) {
            stats_.dropped++;
            return false;
        }
        for (off_t at = from; at < from + len; at += segment_)
            queue_.push_back({dup, at, std::min<off_t>(segment_, from + len - at)});
        stats_.requests++;
    }
    wake_.notify_all();
    return true;
}

void ReadaheadPool::waitIdle() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [this] { return queue_.empty() && busy_ == 0; });
}

ReadaheadPool::Stats ReadaheadPool::stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    Stats out = stats_;
    out.queued = queue_.size();
    return out;
}

void ReadaheadPool::run() {
    for (;;) {
        Segment segment;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
            if (stopping_) return;
            segment = std::move(queue_.front());
            queue_.pop_front();
            busy_++;
        }
        const bool ok = populate(segment);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            busy_--;
            if (ok) {
                stats_.segments++;
                stats_.bytes += static_cast<std::uint64_t>(segment.length);
            } else {
                stats_.errors++;
            }
            if (queue_.empty() && busy_ == 0) idle_.notify_all();
        }
    }
}

bool ReadaheadPool::populate(const Segment& segment) {
    static const off_t page = ::sysconf(_SC_PAGESIZE);
    const off_t start = segment.offset - segment.offset % page;
    const std::size_t length = static_cast<std::size_t>(segment.offset + segment.length - start);
    void* addr = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, segment.fd->get(), start);
    if (addr == MAP_FAILED) {
        // Not mappable (e.g. opened write-only): leave it to the kernel's readahead.
        return ::posix_fadvise(segment.fd->get(), segment.offset, segment.length,
                               POSIX_FADV_WILLNEED) == 0;
    }
    // Waits for the disk reads, copies nothing; a range truncated meanwhile gives EFAULT
    // here rather than SIGBUS.
    int rc = ::madvise(addr, length, MADV_POPULATE_READ);
    if (rc != 0 && errno == EINVAL)  // kernels before 5.14
        rc =
            ::posix_fadvise(segment.fd->get(), segment.offset, segment.length, POSIX_FADV_WILLNEED);
    ::munmap(addr, length);
    return rc == 0;
}

bool prefetch(const WanConfig& config, int fd, off_t from, off_t len) {
    ReadaheadPool* pool = ReadaheadPool::shared(config);
    if (pool && pool->prefetch(fd, from, len)) return true;
    ::posix_fadvise(fd, from, len, POSIX_FADV_WILLNEED);
    PluginCounters::add(PluginCounters::process().readaheadHints, 1);
    return false;
}

}  // namespace wanio
