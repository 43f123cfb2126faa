#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "TempFile.hh"
#include "core/ReadaheadPool.hh"
#include "core/WanConfig.hh"

namespace {

constexpr off_t MiB = 1 << 20;

void fill(const TempFile& file, off_t size) {
    std::vector<char> block(MiB, 'r');
    for (off_t at = 0; at < size; at += MiB)
        ASSERT_EQ(pwrite(file.fd(), block.data(), block.size(), at), MiB);
    ASSERT_EQ(fsync(file.fd()), 0);
}

// Pages of [from, from+len) in the page cache, by mincore(2).
off_t residentBytes(int fd, off_t from, off_t len) {
    const long page = sysconf(_SC_PAGESIZE);
    void* addr = mmap(nullptr, static_cast<size_t>(len), PROT_READ, MAP_SHARED, fd, from);
    if (addr == MAP_FAILED) return -1;
    std::vector<unsigned char> vec(static_cast<size_t>((len + page - 1) / page));
    off_t resident = -1;
    if (mincore(addr, static_cast<size_t>(len), vec.data()) == 0) {
        resident = 0;
        for (unsigned char v : vec) resident += (v & 1) ? page : 0;
    }
    munmap(addr, static_cast<size_t>(len));
    return resident;
}

}  // namespace

TEST(ReadaheadPool, ThreadsBringTheRangeIntoThePageCache) {
    TempFile file;
    fill(file, 32 * MiB);
    ASSERT_EQ(posix_fadvise(file.fd(), 0, 0, POSIX_FADV_DONTNEED), 0);
    ASSERT_LT(residentBytes(file.fd(), 8 * MiB, 16 * MiB), 16 * MiB);  // evicted first
    wanio::ReadaheadPool pool(4, 2 * MiB, 64);
    ASSERT_TRUE(pool.prefetch(file.fd(), 8 * MiB, 16 * MiB));
    pool.waitIdle();
    const wanio::ReadaheadPool::Stats stats = pool.stats();
    EXPECT_EQ(stats.requests, 1u);
    EXPECT_EQ(stats.segments, 8u);  // 16 MiB in 2 MiB segments, spread over the threads
    EXPECT_EQ(stats.bytes, static_cast<std::uint64_t>(16 * MiB));
    EXPECT_EQ(stats.errors, 0u);
    EXPECT_EQ(residentBytes(file.fd(), 8 * MiB, 16 * MiB), 16 * MiB);
}

TEST(ReadaheadPool, TheCallerMayCloseItsDescriptorAtOnce) {
    TempFile file;
    fill(file, 8 * MiB);
    const int fd = open(file.path().c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    wanio::ReadaheadPool pool(2, MiB, 64);
    ASSERT_TRUE(pool.prefetch(fd, 0, 8 * MiB));
    ASSERT_EQ(close(fd), 0);  // the pool works on its own duplicate
    pool.waitIdle();
    EXPECT_EQ(pool.stats().bytes, static_cast<std::uint64_t>(8 * MiB));
    EXPECT_EQ(pool.stats().errors, 0u);
}

TEST(ReadaheadPool, RangesAreClampedToTheEndOfTheFile) {
    TempFile file;
    fill(file, 3 * MiB);
    wanio::ReadaheadPool pool(2, MiB, 64);
    EXPECT_FALSE(pool.prefetch(file.fd(), 3 * MiB, MiB));  // wholly past the end
    ASSERT_TRUE(pool.prefetch(file.fd(), 2 * MiB, 10 * MiB));
    pool.waitIdle();
    EXPECT_EQ(pool.stats().bytes, static_cast<std::uint64_t>(MiB));
    EXPECT_EQ(pool.stats().segments, 1u);
    EXPECT_EQ(pool.stats().errors, 0u);
}

TEST(ReadaheadPool, AFullQueueDropsTheRequestWhole) {
    TempFile file;
    fill(file, 8 * MiB);
    wanio::ReadaheadPool pool(1, MiB, 4);
    EXPECT_FALSE(pool.prefetch(file.fd(), 0, 8 * MiB));  // 8 segments > 4 queued at most
    pool.waitIdle();
    EXPECT_EQ(pool.stats().dropped, 1u);
    EXPECT_EQ(pool.stats().requests, 0u);
    EXPECT_EQ(pool.stats().bytes, 0u);
}

TEST(ReadaheadPool, NoThreadsMeansInlineHints) {
    TempFile file;
    fill(file, 2 * MiB);
    wanio::WanConfig config;
    config.readaheadThreads = 0;
    EXPECT_EQ(wanio::ReadaheadPool::shared(config), nullptr);
    // Hinted from the calling thread instead: not taken by a pool.
    EXPECT_FALSE(wanio::prefetch(config, file.fd(), 0, 2 * MiB));
}
