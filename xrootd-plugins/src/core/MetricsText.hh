// The plugin's counters as Prometheus text exposition format (version 0.0.4), the format
// node exporter's textfile collector reads. Pure: a snapshot in, text out.
#pragma once

#include <cstdint>
#include <string>

#include "PluginCounters.hh"

namespace wanio {

struct MetricsSnapshot {
    std::string site;  // the label every series carries (XRootD's all.sitename)
    double startTimeSeconds = 0;
    double writtenAtSeconds = 0;
    // Copied from PluginCounters.
    std::uint64_t receivedBytes = 0, writtenBytes = 0, bufferedChunks = 0, directChunks = 0;
    std::uint64_t chunkErrors = 0, blockedNanos = 0;
    std::int64_t queuedChunks = 0, queuedBytes = 0, openUploads = 0;
    std::uint64_t uploadsComplete = 0, uploadsFailed = 0, uploadsIncomplete = 0;
    std::uint64_t checksumBytes = 0, checksumsStored = 0;
    std::uint64_t readaheadHints = 0, sendfileRequests = 0, sendfileBytes = 0;
    // From the memory budget and the readahead pool.
    std::uint64_t memoryBytes = 0, memoryPeakBytes = 0, memoryLimitBytes = 0;
    std::uint64_t readaheadRequests = 0, readaheadDropped = 0, readaheadBytes = 0;
    std::uint64_t readaheadErrors = 0, readaheadQueuedSegments = 0;
};

// The counters' current values (the other fields are left as they are).
void copyCounters(const PluginCounters& counters, MetricsSnapshot& out);

// Every srcnet_plugin_* series of `snapshot`, each family with its HELP and TYPE lines.
std::string renderMetrics(const MetricsSnapshot& snapshot);

// A label value with backslash, double quote and newline escaped, as the format wants.
std::string escapeLabelValue(const std::string& value);

}  // namespace wanio
