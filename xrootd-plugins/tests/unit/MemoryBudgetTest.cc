#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "core/MemoryBudget.hh"

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

TEST(MemoryBudget, TimesOutWhenFull) {
    wanio::MemoryBudget budget(100);
    ASSERT_TRUE(budget.acquire(100, Clock::now() + 1s));
    const auto start = Clock::now();
    EXPECT_FALSE(budget.acquire(1, Clock::now() + 200ms));
    EXPECT_GE(Clock::now() - start, 200ms);  // it did wait, it did not fail fast
    EXPECT_EQ(budget.inUse(), 100u);
}

TEST(MemoryBudget, ReleaseWakesABlockedAcquire) {
    wanio::MemoryBudget budget(100);
    ASSERT_TRUE(budget.acquire(80, Clock::now() + 1s));
    std::atomic<bool> done{false};
    std::thread waiter([&] {
        EXPECT_TRUE(budget.acquire(50, Clock::now() + 30s));
        done = true;
    });
    std::this_thread::sleep_for(100ms);
    EXPECT_FALSE(done.load());
    budget.release(80);
    waiter.join();
    EXPECT_TRUE(done.load());
    EXPECT_EQ(budget.inUse(), 50u);
    EXPECT_EQ(budget.peak(), 80u);
}

TEST(MemoryBudget, ABufferGivenBackIsLentAgainInsteadOfANewOne) {
    wanio::MemoryBudget budget(3 * 8192);
    auto first = budget.buffer(8192);
    ASSERT_TRUE(first->valid());
    char* const memory = first->data();
    budget.recycle(std::move(first));
    EXPECT_EQ(budget.keptBytes(), 8192u);
    // The same memory comes back (its pages already faulted in), and is no longer kept.
    auto again = budget.buffer(8192);
    EXPECT_EQ(again->data(), memory);
    EXPECT_EQ(budget.keptBytes(), 0u);
    // A size nothing was kept for is new.
    auto other = budget.buffer(4096);
    EXPECT_NE(other->data(), memory);
    EXPECT_EQ(other->size(), 4096u);
}

TEST(MemoryBudget, KeepsNoMoreThanItsCapacity) {
    wanio::MemoryBudget budget(2 * 8192);
    std::vector<std::unique_ptr<wanio::AlignedBuffer>> lent;
    for (int i = 0; i < 4; ++i) lent.push_back(budget.buffer(8192));
    for (auto& buffer : lent) budget.recycle(std::move(buffer));
    EXPECT_EQ(budget.keptBytes(), 2u * 8192u);
    budget.recycle(nullptr);  // nothing to keep
    EXPECT_EQ(budget.keptBytes(), 2u * 8192u);
}
