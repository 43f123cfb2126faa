// The plugin's running totals, kept for monitoring (docs/monitoring.md, "XRootD plugin").
// Updated on the data path, so each is a relaxed atomic: one uncontended add per chunk or
// per request, no lock. The values are read together only by the metrics file writer,
// which does not need them to be consistent with each other to the byte.
#pragma once

#include <atomic>
#include <cstdint>

namespace wanio {

struct PluginCounters {
    // Write-behind.
    std::atomic<std::uint64_t> receivedBytes{0};      // accepted from clients by write()
    std::atomic<std::uint64_t> writtenBytes{0};       // written to disk by the writer threads
    std::atomic<std::uint64_t> bufferedChunks{0};     // chunks written through the page cache
    std::atomic<std::uint64_t> directChunks{0};       // chunks written with O_DIRECT
    std::atomic<std::uint64_t> chunkErrors{0};        // chunks whose pwrite() failed
    std::atomic<std::uint64_t> blockedNanos{0};       // time write() waited for queue or memory
    std::atomic<std::int64_t> queuedChunks{0};        // chunks handed to the writers, not yet done
    std::atomic<std::int64_t> queuedBytes{0};         // their bytes
    std::atomic<std::int64_t> openUploads{0};         // files open for writing through the plugin
    std::atomic<std::uint64_t> uploadsComplete{0};    // closed with every byte on disk
    std::atomic<std::uint64_t> uploadsFailed{0};      // closed after an I/O error or timeout
    std::atomic<std::uint64_t> uploadsIncomplete{0};  // closed short of the client's oss.asize
    // Streaming checksum.
    std::atomic<std::uint64_t> checksumBytes{0};    // bytes the writer threads ran adler32 over
    std::atomic<std::uint64_t> checksumsStored{0};  // whole-file values stored at close
    // Reads.
    std::atomic<std::uint64_t> readaheadHints{0};    // prefetches left to the kernel (WILLNEED)
    std::atomic<std::uint64_t> sendfileRequests{0};  // sendfile() reads routed through the fslib
    std::atomic<std::uint64_t> sendfileBytes{0};     // bytes those requests asked for

    // The server process's one set (both layers of the plugin add to it).
    static PluginCounters& process();

    static void add(std::atomic<std::uint64_t>& counter, std::uint64_t n) {
        counter.fetch_add(n, std::memory_order_relaxed);
    }
    static void add(std::atomic<std::int64_t>& gauge, std::int64_t n) {
        gauge.fetch_add(n, std::memory_order_relaxed);
    }
};

}  // namespace wanio
