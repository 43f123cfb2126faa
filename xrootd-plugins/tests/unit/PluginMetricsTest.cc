// The plugin's monitoring: counters moved by real write-behind work, their text rendering,
// and the file writer that node exporter's textfile collector reads.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "TempFile.hh"
#include "core/MemoryBudget.hh"
#include "core/MetricsFileWriter.hh"
#include "core/MetricsText.hh"
#include "core/PluginCounters.hh"
#include "core/WriteBehindFile.hh"
#include "core/WriterPool.hh"

using namespace std::chrono_literals;

namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

}  // namespace

TEST(PluginMetrics, WriteBehindCountsWhatReachedTheDisk) {
    wanio::WriterPool pool(2);
    wanio::MemoryBudget budget(1 << 20);
    wanio::PluginCounters counters;
    wanio::WriteBehindSettings settings;
    settings.chunkSize = 64 << 10;
    TempFile file;
    // Three whole chunks and a tail, so the last chunk is short.
    const std::size_t size = 3 * (64 << 10) + 1234;
    std::vector<char> data(size, 'x');
    {
        wanio::WriteBehindFile wb(file.fd(), -1, settings, pool, budget, &counters);
        ASSERT_EQ(wb.write(data.data(), 0, size), static_cast<ssize_t>(size));
        EXPECT_EQ(counters.receivedBytes.load(), size);
        ASSERT_EQ(wb.drain(), 0);
    }
    EXPECT_EQ(counters.writtenBytes.load(), size);
    EXPECT_EQ(counters.checksumBytes.load(), size);
    EXPECT_EQ(counters.bufferedChunks.load(), 4u);
    EXPECT_EQ(counters.directChunks.load(), 0u);
    EXPECT_EQ(counters.chunkErrors.load(), 0u);
    // Everything handed to the writers came back.
    EXPECT_EQ(counters.queuedChunks.load(), 0);
    EXPECT_EQ(counters.queuedBytes.load(), 0);
}

TEST(PluginMetrics, AFailedChunkIsCountedAndLeavesTheQueue) {
    wanio::WriterPool pool(1);
    wanio::MemoryBudget budget(1 << 20);
    wanio::PluginCounters counters;
    wanio::WriteBehindSettings settings;
    settings.chunkSize = 64 << 10;
    std::vector<char> data(2 * (64 << 10), 'y');
    TempFile file;
    // A read-only descriptor of the file: every pwrite() fails with EBADF.
    const int readOnly = ::open(file.path().c_str(), O_RDONLY);
    ASSERT_GE(readOnly, 0);
    {
        wanio::WriteBehindFile wb(readOnly, -1, settings, pool, budget, &counters);
        wb.write(data.data(), 0, data.size());
        EXPECT_EQ(wb.drain(), -EBADF);
    }
    ::close(readOnly);
    EXPECT_GE(counters.chunkErrors.load(), 1u);
    EXPECT_EQ(counters.writtenBytes.load(), 0u);
    EXPECT_EQ(counters.queuedChunks.load(), 0);
    EXPECT_EQ(counters.queuedBytes.load(), 0);
}

TEST(PluginMetrics, RendersPrometheusTextWithTheSiteOnEverySeries) {
    wanio::MetricsSnapshot s;
    s.site = "UK\"SRC\\1";
    s.receivedBytes = 5;
    s.directChunks = 2;
    s.blockedNanos = 1500000000;
    s.queuedBytes = -3;  // a transient negative between two adds reads as 0
    s.uploadsIncomplete = 7;
    s.memoryLimitBytes = 2147483648ull;
    const std::string text = wanio::renderMetrics(s);
    const std::string site = "site=\"UK\\\"SRC\\\\1\"";
    for (const std::string& line : std::vector<std::string>{
             "# TYPE srcnet_plugin_writebehind_received_bytes_total counter",
             "srcnet_plugin_writebehind_received_bytes_total{" + site + "} 5",
             "srcnet_plugin_writebehind_chunks_total{" + site + ",io=\"direct\"} 2",
             "srcnet_plugin_writebehind_blocked_seconds_total{" + site + "} 1.5",
             "srcnet_plugin_writebehind_queue_bytes{" + site + "} 0",
             "# TYPE srcnet_plugin_writebehind_memory_limit_bytes gauge",
             "srcnet_plugin_writebehind_memory_limit_bytes{" + site + "} 2147483648",
             "srcnet_plugin_uploads_total{" + site + ",outcome=\"incomplete\"} 7",
         })
        EXPECT_NE(text.find(line + "\n"), std::string::npos) << line << "\n" << text;
    std::istringstream lines(text);
    int series = 0;
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("# ", 0) == 0) continue;
        ++series;
        EXPECT_EQ(line.rfind("srcnet_plugin_", 0), 0u) << line;
        EXPECT_NE(line.find("{" + site), std::string::npos) << line;
    }
    EXPECT_EQ(series, 27);  // 24 families; chunks by 2 modes, uploads by 3 outcomes
}

TEST(PluginMetrics, TheFileIsReplacedWholeOnEveryTick) {
    TempDir dir;
    const std::string path = dir.path() + "/wanio.prom";
    std::atomic<int> renders{0};
    std::vector<int> reports;
    {
        wanio::MetricsFileWriter writer(
            path, 20ms, [&] { return "tick " + std::to_string(++renders) + "\n"; },
            [&](int error) { reports.push_back(error); });
        // Written once at construction, before the first tick.
        EXPECT_EQ(slurp(path), "tick 1\n");
        struct stat st;
        ASSERT_EQ(::stat(path.c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 0777, 0644u);
        for (int i = 0; i < 200 && renders.load() < 4; ++i) std::this_thread::sleep_for(10ms);
    }
    EXPECT_GE(renders.load(), 4);
    EXPECT_EQ(slurp(path), "tick " + std::to_string(renders.load()) + "\n");
    EXPECT_TRUE(reports.empty());
    // Only the target is left: the temporary files were renamed over it.
    EXPECT_EQ(std::system(("test $(ls -A " + dir.path() + " | wc -l) -eq 1").c_str()), 0);
}

TEST(PluginMetrics, AFailedWriteIsReportedOnceAndItsRecoveryToo) {
    TempDir dir;
    const std::string missing = dir.path() + "/later";
    std::vector<int> reports;
    wanio::MetricsFileWriter writer(
        missing + "/wanio.prom", 1h, [] { return std::string("x 1\n"); },
        [&](int error) { reports.push_back(error); });
    EXPECT_EQ(writer.writeNow(), -ENOENT);
    ASSERT_EQ(::mkdir(missing.c_str(), 0755), 0);
    EXPECT_EQ(writer.writeNow(), 0);
    EXPECT_EQ(writer.writeNow(), 0);
    EXPECT_EQ(reports, (std::vector<int>{-ENOENT, 0}));
    EXPECT_EQ(slurp(missing + "/wanio.prom"), "x 1\n");
}
