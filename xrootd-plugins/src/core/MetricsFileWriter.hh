// Writes the plugin's metrics to a file on a timer, for node exporter's textfile collector
// (docs/adr/0004-plugin-metrics-in-a-textfile.md): no socket is opened inside xrootd. Each
// write goes to a hidden temporary file in the same directory, then rename()s over the
// target, so a scrape never reads a half-written file. Its own thread: the render and the
// small write never wait on, or delay, a client's request.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace wanio {

class MetricsFileWriter {
  public:
    using Render = std::function<std::string()>;
    // Told of a failed write (-errno) when the error changes, and of the first success
    // after one (0), so the log says when the file went stale and when it recovered.
    using Report = std::function<void(int error)>;

    // Writes once at once (so the series exist from the start), then every `every`.
    MetricsFileWriter(std::string path, std::chrono::milliseconds every, Render render,
                      Report report);
    ~MetricsFileWriter();
    MetricsFileWriter(const MetricsFileWriter&) = delete;
    MetricsFileWriter& operator=(const MetricsFileWriter&) = delete;

    // One write now (also used by the timer). 0 or -errno.
    int writeNow();
    const std::string& path() const { return path_; }

  private:
    void run();

    const std::string path_;
    const std::string temporary_;
    const std::chrono::milliseconds every_;
    const Render render_;
    const Report report_;
    std::mutex mutex_;  // one write at a time; guards lastError_ and stopping_
    std::condition_variable wake_;
    bool stopping_ = false;
    int lastError_ = 0;
    std::thread thread_;
};

}  // namespace wanio
