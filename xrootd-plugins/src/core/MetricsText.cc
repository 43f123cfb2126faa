#include "MetricsText.hh"

#include <cstdio>
#include <initializer_list>
#include <utility>

namespace wanio {

namespace {

std::string number(std::uint64_t v) {
    return std::to_string(v);
}
std::string number(std::int64_t v) {
    // A gauge kept by paired adds can read a transient negative between two adds.
    return std::to_string(v < 0 ? 0 : v);
}
std::string number(double v) {
    char text[64];
    snprintf(text, sizeof(text), "%.17g", v);
    return text;
}

class Writer {
  public:
    explicit Writer(const std::string& site) : site_("site=\"" + escapeLabelValue(site) + "\"") {}

    // One family with one series per (extra label, value) pair; "" for no extra label.
    void family(const char* name, const char* type, const char* help,
                std::initializer_list<std::pair<std::string, std::string>> series) {
        out_ += std::string("# HELP ") + name + " " + help + "\n";
        out_ += std::string("# TYPE ") + name + " " + type + "\n";
        for (const auto& [label, value] : series) {
            out_ += name;
            out_ += "{" + site_ + (label.empty() ? "" : "," + label) + "} " + value + "\n";
        }
    }
    template <typename T>
    void one(const char* name, const char* type, const char* help, T value) {
        family(name, type, help, {{"", number(value)}});
    }
    std::string text() const { return out_; }

  private:
    std::string site_;
    std::string out_;
};

}  // namespace

std::string escapeLabelValue(const std::string& value) {
    std::string out;
    out.reserve(value.size());
    for (char ch : value) {
        if (ch == '\\')
            out += "\\\\";
        else if (ch == '"')
            out += "\\\"";
        else if (ch == '\n')
            out += "\\n";
        else
            out += ch;
    }
    return out;
}

void copyCounters(const PluginCounters& c, MetricsSnapshot& out) {
    constexpr auto relaxed = std::memory_order_relaxed;
    out.receivedBytes = c.receivedBytes.load(relaxed);
    out.writtenBytes = c.writtenBytes.load(relaxed);
    out.bufferedChunks = c.bufferedChunks.load(relaxed);
    out.directChunks = c.directChunks.load(relaxed);
    out.chunkErrors = c.chunkErrors.load(relaxed);
    out.blockedNanos = c.blockedNanos.load(relaxed);
    out.queuedChunks = c.queuedChunks.load(relaxed);
    out.queuedBytes = c.queuedBytes.load(relaxed);
    out.openUploads = c.openUploads.load(relaxed);
    out.uploadsComplete = c.uploadsComplete.load(relaxed);
    out.uploadsFailed = c.uploadsFailed.load(relaxed);
    out.uploadsIncomplete = c.uploadsIncomplete.load(relaxed);
    out.checksumBytes = c.checksumBytes.load(relaxed);
    out.checksumsStored = c.checksumsStored.load(relaxed);
    out.readaheadHints = c.readaheadHints.load(relaxed);
    out.sendfileRequests = c.sendfileRequests.load(relaxed);
    out.sendfileBytes = c.sendfileBytes.load(relaxed);
}

std::string renderMetrics(const MetricsSnapshot& s) {
    Writer w(s.site);
    w.one("srcnet_plugin_start_time_seconds", "gauge",
          "Unix time the XRootD server loaded the plugin (counters restart from 0 then)",
          s.startTimeSeconds);
    w.one("srcnet_plugin_metrics_written_timestamp_seconds", "gauge",
          "Unix time the plugin wrote these values", s.writtenAtSeconds);
    w.one("srcnet_plugin_writebehind_received_bytes_total", "counter",
          "Bytes clients wrote into the write-behind buffers", s.receivedBytes);
    w.one("srcnet_plugin_writebehind_written_bytes_total", "counter",
          "Bytes the writer threads wrote to disk", s.writtenBytes);
    w.family(
        "srcnet_plugin_writebehind_chunks_total", "counter", "Chunks written to disk, by I/O mode",
        {{"io=\"buffered\"", number(s.bufferedChunks)}, {"io=\"direct\"", number(s.directChunks)}});
    w.one("srcnet_plugin_writebehind_chunk_errors_total", "counter",
          "Chunks whose disk write failed (the upload fails)", s.chunkErrors);
    w.one("srcnet_plugin_writebehind_blocked_seconds_total", "counter",
          "Time client writes waited for queue room or buffer memory (backpressure)",
          static_cast<double>(s.blockedNanos) / 1e9);
    w.one("srcnet_plugin_writebehind_queue_chunks", "gauge",
          "Chunks waiting for or being written by a writer thread", s.queuedChunks);
    w.one("srcnet_plugin_writebehind_queue_bytes", "gauge", "Bytes of those chunks", s.queuedBytes);
    w.one("srcnet_plugin_writebehind_memory_bytes", "gauge",
          "Write-behind buffer memory reserved now", s.memoryBytes);
    w.one("srcnet_plugin_writebehind_memory_peak_bytes", "gauge",
          "Most write-behind buffer memory reserved at once since the start", s.memoryPeakBytes);
    w.one("srcnet_plugin_writebehind_memory_limit_bytes", "gauge",
          "The write-behind memory cap (wanio.wb.maxmem)", s.memoryLimitBytes);
    w.one("srcnet_plugin_uploads_open", "gauge", "Files open for writing through the plugin",
          s.openUploads);
    w.family("srcnet_plugin_uploads_total", "counter", "Uploads closed, by outcome",
             {{"outcome=\"complete\"", number(s.uploadsComplete)},
              {"outcome=\"failed\"", number(s.uploadsFailed)},
              {"outcome=\"incomplete\"", number(s.uploadsIncomplete)}});
    w.one("srcnet_plugin_checksum_bytes_total", "counter",
          "Bytes the streaming adler32 was computed over", s.checksumBytes);
    w.one("srcnet_plugin_checksums_stored_total", "counter",
          "Whole-file adler32 values stored at close (no re-read of the file needed)",
          s.checksumsStored);
    w.one("srcnet_plugin_readahead_requests_total", "counter",
          "Readahead requests taken by the readahead threads", s.readaheadRequests);
    w.one("srcnet_plugin_readahead_dropped_total", "counter",
          "Readahead requests refused because the threads' queue was full", s.readaheadDropped);
    w.one("srcnet_plugin_readahead_hints_total", "counter",
          "Readahead left to the kernel (POSIX_FADV_WILLNEED) by the serving thread",
          s.readaheadHints);
    w.one("srcnet_plugin_readahead_bytes_total", "counter",
          "Bytes the readahead threads brought into the page cache", s.readaheadBytes);
    w.one("srcnet_plugin_readahead_errors_total", "counter",
          "Readahead segments that failed (ignored: a hint only)", s.readaheadErrors);
    w.one("srcnet_plugin_readahead_queue_segments", "gauge",
          "Readahead segments waiting for a thread", s.readaheadQueuedSegments);
    w.one("srcnet_plugin_sendfile_requests_total", "counter",
          "sendfile() reads routed through the file-system layer", s.sendfileRequests);
    w.one("srcnet_plugin_sendfile_bytes_total", "counter", "Bytes those reads asked for",
          s.sendfileBytes);
    return w.text();
}

}  // namespace wanio
