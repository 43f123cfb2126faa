#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

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
