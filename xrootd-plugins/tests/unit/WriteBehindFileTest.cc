#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <future>
#include <random>
#include <thread>
#include <vector>

#include "TempFile.hh"
#include "core/MemoryBudget.hh"
#include "core/UniqueFd.hh"
#include "core/WriteBehindFile.hh"
#include "core/WriterPool.hh"

using namespace std::chrono_literals;

namespace {

wanio::WriteBehindSettings smallChunks(int queue = 8) {
    wanio::WriteBehindSettings s;
    s.chunkSize = 64 << 10;
    s.perFileWriters = 3;
    s.perFileQueue = queue;
    s.waitSeconds = 30;
    return s;
}

std::vector<char> randomBytes(size_t n, unsigned seed) {
    std::vector<char> v(n);
    std::mt19937 rng(seed);
    for (char& c : v) c = static_cast<char>(rng());
    return v;
}

// Occupies every thread of a pool until released, so queued writes cannot run.
class PoolBlocker {
  public:
    PoolBlocker(wanio::WriterPool& pool) : gate_(release_.get_future().share()) {
        for (int i = 0; i < pool.size(); ++i) pool.post([g = gate_] { g.wait(); });
    }
    void release() { release_.set_value(); }

  private:
    std::promise<void> release_;
    std::shared_future<void> gate_;
};

}  // namespace

TEST(WriteBehindFile, RandomWritesLandOnDiskWithMatchingAdler) {
    wanio::WriterPool pool(4);
    wanio::MemoryBudget budget(1 << 20);
    for (unsigned seed = 1; seed <= 20; ++seed) {
        TempFile file;
        std::vector<char> expected = randomBytes(1 + seed * 37000, seed);
        // Deliver the file in random-sized pieces, in order (as a client does).
        std::mt19937 rng(seed);
        {
            wanio::WriteBehindFile wb(file.fd(), -1, smallChunks(), pool, budget);
            for (size_t off = 0; off < expected.size();) {
                size_t len =
                    std::min(expected.size() - off, static_cast<size_t>(1 + rng() % 200000));
                ASSERT_EQ(wb.write(expected.data() + off, off, len), static_cast<ssize_t>(len));
                off += len;
            }
            ASSERT_EQ(wb.drain(), 0);
            std::uint32_t adler = 0;
            ASSERT_TRUE(wb.wholeFileAdler(expected.size(), adler));
            EXPECT_EQ(adler,
                      adler32(1, reinterpret_cast<const Bytef*>(expected.data()), expected.size()));
            EXPECT_EQ(wb.logicalSize(), static_cast<off_t>(expected.size()));
        }
        EXPECT_EQ(file.contents(), expected) << "seed " << seed;
    }
    EXPECT_EQ(budget.inUse(), 0u);
}

TEST(WriteBehindFile, ConcurrentWritersToDisjointRanges) {
    wanio::WriterPool pool(4);
    wanio::MemoryBudget budget(4 << 20);
    TempFile file;
    const size_t chunk = 64 << 10;
    std::vector<char> expected = randomBytes(64 * chunk, 11);
    {
        wanio::WriteBehindFile wb(file.fd(), -1, smallChunks(), pool, budget);
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&, t] {
                for (size_t i = t; i < 64; i += 4)
                    EXPECT_EQ(wb.write(expected.data() + i * chunk, i * chunk, chunk),
                              static_cast<ssize_t>(chunk));
            });
        for (auto& th : threads) th.join();
        ASSERT_EQ(wb.drain(), 0);
        std::uint32_t adler = 0;
        ASSERT_TRUE(wb.wholeFileAdler(expected.size(), adler));
        EXPECT_EQ(adler,
                  adler32(1, reinterpret_cast<const Bytef*>(expected.data()), expected.size()));
        EXPECT_GT(wb.stats().maxConcurrent, 1);
    }
    EXPECT_EQ(file.contents(), expected);
}

TEST(WriteBehindFile, ConcurrentWritersUnderBackpressureLoseNothing) {
    // Regression: a writer waiting for queue space must not let another
    // caller's partial chunk be overwritten. One pool thread, queue of one.
    wanio::WriterPool pool(1);
    wanio::MemoryBudget budget(2 << 20);
    const size_t chunk = 64 << 10;
    for (unsigned seed = 1; seed <= 30; ++seed) {
        TempFile file;
        const size_t size = 24 * chunk + 777;  // a partial tail chunk
        std::vector<char> expected = randomBytes(size, seed);
        wanio::WriteBehindSettings s = smallChunks(/*queue=*/1);
        s.perFileWriters = 1;
        {
            wanio::WriteBehindFile wb(file.fd(), -1, s, pool, budget);
            std::atomic<size_t> next{0};
            std::vector<std::thread> threads;
            for (int t = 0; t < 4; ++t)
                threads.emplace_back([&] {
                    for (size_t i; (i = next.fetch_add(1)) * chunk < size;) {
                        size_t len = std::min(chunk, size - i * chunk);
                        EXPECT_EQ(wb.write(expected.data() + i * chunk, i * chunk, len),
                                  static_cast<ssize_t>(len));
                    }
                });
            for (auto& th : threads) th.join();
            ASSERT_EQ(wb.drain(), 0);
            std::uint32_t adler = 0;
            ASSERT_TRUE(wb.wholeFileAdler(size, adler)) << "seed " << seed;
            EXPECT_EQ(adler, adler32(1, reinterpret_cast<const Bytef*>(expected.data()), size));
        }
        ASSERT_EQ(file.contents(), expected) << "seed " << seed;
        EXPECT_EQ(budget.inUse(), 0u);
    }
}

TEST(WriteBehindFile, DiskErrorIsStickyAndReachesEveryLaterCall) {
    wanio::WriterPool pool(2);
    wanio::MemoryBudget budget(1 << 20);
    wanio::UniqueFd full(open("/dev/full", O_WRONLY));
    ASSERT_GE(full.get(), 0);
    wanio::WriteBehindFile wb(full.get(), -1, smallChunks(), pool, budget);
    std::vector<char> data(64 << 10, 'x');
    // The first write only fills a buffer: it succeeds, the disk error comes later.
    ASSERT_EQ(wb.write(data.data(), 0, data.size()), static_cast<ssize_t>(data.size()));
    for (int i = 0; i < 2000 && wb.error() == 0; ++i) std::this_thread::sleep_for(1ms);
    EXPECT_EQ(wb.error(), -ENOSPC);
    EXPECT_EQ(wb.write(data.data(), data.size(), data.size()), -ENOSPC);
    EXPECT_EQ(wb.drain(), -ENOSPC);
    EXPECT_EQ(wb.write(data.data(), 2 * data.size(), 10), -ENOSPC);
    EXPECT_EQ(wb.drain(), -ENOSPC);
    std::uint32_t adler = 0;
    EXPECT_FALSE(wb.wholeFileAdler(data.size(), adler));
    EXPECT_EQ(budget.inUse(), 0u);  // buffers of the failed file were freed
}

TEST(WriteBehindFile, AnyErrnoIsStickyNotOnlyNoSpace) {
    // pwrite() on a pipe fails with ESPIPE: a real error other than ENOSPC.
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    wanio::UniqueFd readEnd(fds[0]), writeEnd(fds[1]);
    wanio::WriterPool pool(1);
    wanio::MemoryBudget budget(1 << 20);
    wanio::WriteBehindFile wb(writeEnd.get(), -1, smallChunks(), pool, budget);
    ASSERT_EQ(wb.write("abc", 0, 3), 3);
    EXPECT_EQ(wb.drain(), -ESPIPE);
    EXPECT_EQ(wb.write("d", 3, 1), -ESPIPE);
}

TEST(WriteBehindFile, ShortWriteIsContinuedThenItsErrorIsSticky) {
    // RLIMIT_FSIZE makes the kernel accept only the bytes below the limit (a
    // real short write), then fail the rest with EFBIG.
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old;
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
    struct rlimit limited = old;
    limited.rlim_cur = 100000;
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);
    TempFile file;
    std::vector<char> data = randomBytes(3 * (64 << 10), 12);
    int rc = 0;
    {
        wanio::WriterPool pool(1);
        wanio::MemoryBudget budget(1 << 20);
        wanio::WriteBehindFile wb(file.fd(), -1, smallChunks(), pool, budget);
        ASSERT_EQ(wb.write(data.data(), 0, data.size()), static_cast<ssize_t>(data.size()));
        rc = wb.drain();
        EXPECT_EQ(wb.write("x", data.size(), 1), -EFBIG);
    }
    setrlimit(RLIMIT_FSIZE, &old);
    EXPECT_EQ(rc, -EFBIG);
    std::vector<char> onDisk = file.contents();
    ASSERT_EQ(onDisk.size(), 100000u);  // everything up to the limit was written
    EXPECT_TRUE(std::equal(onDisk.begin(), onDisk.end(), data.begin()));
}

TEST(WriteBehindFile, ErrorDuringDrainIsReturned) {
    wanio::WriterPool pool(2);
    wanio::MemoryBudget budget(1 << 20);
    wanio::UniqueFd full(open("/dev/full", O_WRONLY));
    ASSERT_GE(full.get(), 0);
    wanio::WriteBehindFile wb(full.get(), -1, smallChunks(), pool, budget);
    ASSERT_EQ(wb.write("abc", 0, 3), 3);  // stays in the open chunk until drain
    EXPECT_EQ(wb.drain(), -ENOSPC);
    EXPECT_EQ(wb.write("d", 3, 1), -ENOSPC);
}

TEST(WriteBehindFile, PreallocationBeyondFreeSpaceFailsStickily) {
    wanio::WriterPool pool(1);
    wanio::MemoryBudget budget(1 << 20);
    TempFile file;
    wanio::WriteBehindFile wb(file.fd(), -1, smallChunks(), pool, budget);
    // Far more than any test disk holds.
    int rc = wb.preallocate(1ll << 60);
    ASSERT_TRUE(rc == -ENOSPC || rc == -EFBIG) << rc;
    EXPECT_EQ(wb.write("x", 0, 1), rc);
}

TEST(WriteBehindFile, FullQueueBlocksTheWriterUntilDiskCatchesUp) {
    wanio::WriterPool pool(1);
    wanio::MemoryBudget budget(16 << 20);
    TempFile file;
    const size_t chunk = 64 << 10;
    std::vector<char> data = randomBytes(3 * chunk, 5);
    wanio::WriteBehindFile wb(file.fd(), -1, smallChunks(/*queue=*/2), pool, budget);
    PoolBlocker blocker(pool);
    ASSERT_EQ(wb.write(data.data(), 0, chunk), static_cast<ssize_t>(chunk));
    ASSERT_EQ(wb.write(data.data() + chunk, chunk, chunk), static_cast<ssize_t>(chunk));
    // Two chunks are queued (the limit); the third must wait for the disk.
    auto third = std::async(std::launch::async,
                            [&] { return wb.write(data.data() + 2 * chunk, 2 * chunk, chunk); });
    EXPECT_EQ(third.wait_for(300ms), std::future_status::timeout);
    blocker.release();
    ASSERT_EQ(third.get(), static_cast<ssize_t>(chunk));
    ASSERT_EQ(wb.drain(), 0);
    EXPECT_EQ(file.contents(), data);
    EXPECT_GE(wb.stats().blockedNanos, 250000000u);
}

TEST(WriteBehindFile, MemoryBudgetBlocksAcrossFiles) {
    wanio::WriterPool pool(1);
    const size_t chunk = 64 << 10;
    wanio::MemoryBudget budget(2 * chunk);  // two chunks for everyone
    TempFile a, b;
    std::vector<char> data = randomBytes(chunk, 6);
    wanio::WriteBehindFile wa(a.fd(), -1, smallChunks(), pool, budget);
    wanio::WriteBehindFile wbf(b.fd(), -1, smallChunks(), pool, budget);
    PoolBlocker blocker(pool);
    ASSERT_EQ(wa.write(data.data(), 0, chunk), static_cast<ssize_t>(chunk));
    ASSERT_EQ(wa.write(data.data(), chunk, chunk), static_cast<ssize_t>(chunk));
    auto other = std::async(std::launch::async, [&] { return wbf.write(data.data(), 0, chunk); });
    EXPECT_EQ(other.wait_for(300ms), std::future_status::timeout);
    blocker.release();
    EXPECT_EQ(other.get(), static_cast<ssize_t>(chunk));
    EXPECT_EQ(wa.drain(), 0);
    EXPECT_EQ(wbf.drain(), 0);
    EXPECT_LE(budget.peak(), 2 * chunk);
    EXPECT_EQ(budget.inUse(), 0u);
}

TEST(WriteBehindFile, BackpressureTimesOutWithAClearError) {
    wanio::WriterPool pool(1);
    wanio::MemoryBudget budget(16 << 20);
    TempFile file;
    const size_t chunk = 64 << 10;
    std::vector<char> data = randomBytes(chunk, 8);
    wanio::WriteBehindSettings s = smallChunks(/*queue=*/1);
    s.waitSeconds = 1;
    wanio::WriteBehindFile wb(file.fd(), -1, s, pool, budget);
    PoolBlocker blocker(pool);
    ASSERT_EQ(wb.write(data.data(), 0, chunk), static_cast<ssize_t>(chunk));
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(wb.write(data.data(), chunk, chunk), -ETIMEDOUT);
    EXPECT_GE(std::chrono::steady_clock::now() - start, 900ms);
    EXPECT_EQ(wb.write(data.data(), 2 * chunk, 1), -ETIMEDOUT);  // sticky
    blocker.release();
    EXPECT_EQ(wb.drain(), -ETIMEDOUT);
    EXPECT_EQ(budget.inUse(), 0u);
}

TEST(WriteBehindFile, DirectIoWritesWholeChunksThroughTheDirectDescriptor) {
    wanio::WriterPool pool(2);
    wanio::MemoryBudget budget(1 << 20);
    TempFile file;
    const std::string self = "/proc/self/fd/" + std::to_string(file.fd());
    wanio::UniqueFd direct(open(self.c_str(), O_WRONLY | O_DIRECT));
    ASSERT_GE(direct.get(), 0);
    std::vector<char> data = randomBytes(3 * (64 << 10) + 123, 9);
    {
        wanio::WriteBehindFile wb(file.fd(), direct.get(), smallChunks(), pool, budget);
        ASSERT_EQ(wb.write(data.data(), 0, data.size()), static_cast<ssize_t>(data.size()));
        ASSERT_EQ(wb.drain(), 0);
        EXPECT_EQ(wb.stats().directChunks, 3u);  // the 123-byte tail used the page cache
        EXPECT_EQ(wb.stats().chunks, 4u);
    }
    EXPECT_EQ(file.contents(), data);
}

TEST(WriteBehindFile, RewriteInvalidatesTheStreamedChecksum) {
    wanio::WriterPool pool(1);
    wanio::MemoryBudget budget(1 << 20);
    TempFile file;
    wanio::WriteBehindFile wb(file.fd(), -1, smallChunks(), pool, budget);
    ASSERT_EQ(wb.write("abcd", 0, 4), 4);
    ASSERT_EQ(wb.drain(), 0);
    ASSERT_EQ(wb.write("xy", 1, 2), 2);
    ASSERT_EQ(wb.drain(), 0);
    std::uint32_t adler = 0;
    EXPECT_FALSE(wb.wholeFileAdler(4, adler));
    EXPECT_EQ(file.contents(), std::vector<char>({'a', 'x', 'y', 'd'}));
}
