#include "TpcPull.hh"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "PathRtt.hh"
#include "ReadsInFlight.hh"
#include "SourceChecksum.hh"
#include "XrdCl/XrdClDefaultEnv.hh"
#include "XrdCl/XrdClFile.hh"
#include "XrdCl/XrdClXRootDResponses.hh"
#include "core/AlignedBuffer.hh"
#include "core/CksXattr.hh"
#include "core/MemoryBudget.hh"
#include "core/UniqueFd.hh"
#include "core/WriteBehindFile.hh"
#include "core/WriterPool.hh"

namespace wanio {

namespace {

// Records the first failure of any reader thread.
class FirstError {
  public:
    void set(const std::string& message) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (message_.empty()) message_ = message;
        failed_ = true;
    }
    bool failed() const { return failed_.load(); }
    std::string message() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return message_;
    }

  private:
    mutable std::mutex mutex_;
    std::string message_;
    std::atomic<bool> failed_{false};
};

// When each chunk read was issued, received and handed to the writer, and when each
// phase of the pull ended, in seconds since the pull started: shows whether the reads
// in flight ever run dry and where the time outside the data transfer goes.
// Written (if a path was given) when the pull returns, whatever the outcome.
class PullTrace {
  public:
    using Clock = std::chrono::steady_clock;
    PullTrace(const std::string& path, Clock::time_point start)
        : path_(path), start_(start), startEpoch_(std::chrono::system_clock::now()) {}
    ~PullTrace() {
        if (!path_.empty() && !save())
            fprintf(stderr, "xrdcp-wan: cannot write trace %s\n", path_.c_str());
    }
    bool enabled() const { return !path_.empty(); }
    void read(std::uint64_t offset, std::uint32_t length, Clock::time_point issued,
              Clock::time_point received, Clock::time_point handed) {
        std::lock_guard<std::mutex> lock(mutex_);
        rows_.push_back({offset, length, since(issued), since(received), since(handed)});
    }
    void phase(const char* name) {
        if (!enabled()) return;
        std::lock_guard<std::mutex> lock(mutex_);
        phases_.emplace_back(name, since(Clock::now()));
    }
    // A duration rather than a moment (written as `<name>_total`).
    void total(const char* name, double seconds) {
        if (!enabled()) return;
        std::lock_guard<std::mutex> lock(mutex_);
        phases_.emplace_back(std::string(name) + "_total", seconds);
    }

  private:
    struct Row {
        std::uint64_t offset;
        std::uint32_t length;
        double issued, received, handed;
    };
    double since(Clock::time_point t) const {
        return std::chrono::duration<double>(t - start_).count();
    }
    bool save() const {
        std::lock_guard<std::mutex> lock(mutex_);
        FILE* out = fopen(path_.c_str(), "w");
        if (!out) return false;
        fprintf(out, "offset,length,issued_s,received_s,handed_s\n");
        for (const Row& r : rows_)
            fprintf(out, "%llu,%u,%.6f,%.6f,%.6f\n", static_cast<unsigned long long>(r.offset),
                    r.length, r.issued, r.received, r.handed);
        bool ok = fclose(out) == 0;
        FILE* ph = fopen((path_ + ".phases").c_str(), "w");
        if (!ph) return false;
        fprintf(ph, "phase,seconds\nstart_unix_time,%.6f\n",
                std::chrono::duration<double>(startEpoch_.time_since_epoch()).count());
        for (const auto& [name, seconds] : phases_) fprintf(ph, "%s,%.6f\n", name.c_str(), seconds);
        return fclose(ph) == 0 && ok;
    }

    std::string path_;
    Clock::time_point start_;
    std::chrono::system_clock::time_point startEpoch_;
    mutable std::mutex mutex_;
    std::vector<Row> rows_;
    std::vector<std::pair<std::string, double>> phases_;
};

// Takes the answer to a close nobody waits for: once every byte has arrived the pull's
// outcome no longer depends on the source, and waiting for the close would add one
// round trip (0.3 s at 300 ms) to every pull.
class UnawaitedClose : public XrdCl::ResponseHandler {
  public:
    void HandleResponse(XrdCl::XRootDStatus* status, XrdCl::AnyObject* response) override {
        delete status;
        delete response;
        delete this;
    }
};

}  // namespace

TpcResult TpcPull::run() {
    TpcResult result;
    const auto start = std::chrono::steady_clock::now();
    PullTrace trace(options_.tracePath, start);
    auto fail = [&](const std::string& message) {
        result.exitCode = 1;
        result.message = message;
        return result;
    };

    // Which checksum, if any, the copy must match.
    std::string cksType = options_.checksum;
    std::string cksValue;
    if (std::size_t colon = cksType.find(':'); colon != std::string::npos) {
        cksValue = cksType.substr(colon + 1);
        cksType = cksType.substr(0, colon);
    }
    if (!cksType.empty() && cksType != "adler32")
        return fail("unsupported checksum type " + cksType + " (only adler32)");
    std::uint32_t expected = 0;
    bool haveExpected = false;
    if (!cksValue.empty() && cksValue != "source" && cksValue != "print") {
        if (!parseAdlerHex(cksValue, expected)) return fail("bad checksum value " + cksValue);
        haveExpected = true;
    }

    // XrdCl reads the stream count when it makes a channel: the source's channel gets
    // the sub-streams, and the setting goes back to one stream once it exists, so the
    // checksum query's channel below is one connection.
    XrdCl::Env* env = XrdCl::DefaultEnv::GetEnv();
    if (options_.streams > 0) env->PutInt("SubStreamsPerChannel", options_.streams + 1);

    // On the heap: a File must outlive its pending asynchronous close (released below).
    auto sourceFile = std::make_unique<XrdCl::File>();
    XrdCl::File& source = *sourceFile;
    XrdCl::XRootDStatus st = source.Open(options_.source, XrdCl::OpenFlags::Read);
    if (options_.streams > 0) env->PutInt("SubStreamsPerChannel", 1);
    if (!st.IsOK()) return fail("cannot open source: " + st.ToString());
    trace.phase("source_open");
    XrdCl::StatInfo* rawInfo = nullptr;
    st = source.Stat(false, rawInfo);
    // The path's round trip as the kernel measured it on the connection just opened (its
    // handshake, login and open): what the reads in flight are sized from.
    const double rttSeconds = measuredRttSeconds();
    std::unique_ptr<XrdCl::StatInfo> info(rawInfo);
    if (!st.IsOK() || !info) return fail("cannot stat source: " + st.ToString());
    const std::uint64_t size = info->GetSize();

    std::string dest = options_.destination;
    if (dest.compare(0, 7, "file://") == 0) dest = dest.substr(7);
    UniqueFd fd(::open(dest.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) return fail("cannot open destination " + dest + ": " + strerror(errno));
    // The same file for whole chunks, past the page cache (-1 where refused: buffered).
    UniqueFd directFd(options_.directIo ? ::open(dest.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC)
                                        : -1);

    auto cleanup = [&](const std::string& message) {
        // A failed pull must not leave a file that looks like a finished copy.
        ::unlink(dest.c_str());
        return fail(message);
    };
    if (int rc = CksXattr::remove(fd.get()); rc != 0)
        return cleanup(std::string("cannot clear stale checksum: ") + strerror(-rc));

    // Asked now, so the source computes it while the data moves (see SourceChecksum.hh).
    std::unique_ptr<SourceChecksum> sourceChecksum;
    if (!haveExpected) sourceChecksum = std::make_unique<SourceChecksum>(options_.source);

    int inflight = std::max(1, options_.inflight);
    if (options_.pathRate > 0) {
        const ReadsInFlight plan = readsInFlightForPath(
            options_.pathRate, rttSeconds, options_.chunkSize, inflight, options_.maxMemory);
        inflight = plan.reads;
        result.inflightNote =
            describeReadsInFlight(plan, options_.pathRate, rttSeconds, options_.chunkSize);
        if (plan.memoryBound) fprintf(stderr, "xrdcp-wan: %s\n", result.inflightNote.c_str());
    }
    result.readsInFlight = inflight;
    WriteBehindSettings settings;
    settings.chunkSize = options_.chunkSize;
    settings.perFileWriters = options_.writerThreads;
    settings.perFileQueue = 2 * options_.writerThreads;
    WriterPool pool(options_.writerThreads);
    MemoryBudget budget(static_cast<std::uint64_t>(settings.perFileQueue + 1) * options_.chunkSize);
    FirstError firstError;
    {
        WriteBehindFile writer(fd.get(), directFd.get(), settings, pool, budget);
        if (int rc = writer.preallocate(static_cast<off_t>(size)); rc != 0)
            return cleanup(std::string("cannot preallocate destination: ") + strerror(-rc));

        const std::uint64_t chunks = (size + options_.chunkSize - 1) / options_.chunkSize;
        std::atomic<std::uint64_t> nextChunk{0};
        std::vector<std::thread> readers;
        const int readerCount = static_cast<int>(std::min<std::uint64_t>(
            static_cast<std::uint64_t>(inflight), std::max<std::uint64_t>(chunks, 1)));
        for (int r = 0; r < readerCount; ++r) {
            readers.emplace_back([&] {
                AlignedBuffer buffer(options_.chunkSize);
                if (!buffer.valid()) {
                    firstError.set("out of memory for read buffer");
                    return;
                }
                for (;;) {
                    if (firstError.failed()) return;
                    const std::uint64_t index = nextChunk.fetch_add(1);
                    if (index >= chunks) return;
                    const std::uint64_t offset = index * options_.chunkSize;
                    const std::uint32_t want = static_cast<std::uint32_t>(
                        std::min<std::uint64_t>(options_.chunkSize, size - offset));
                    std::uint32_t got = 0;
                    const auto issued = PullTrace::Clock::now();
                    XrdCl::XRootDStatus rs = source.Read(offset, want, buffer.data(), got);
                    if (!rs.IsOK()) {
                        firstError.set("read at offset " + std::to_string(offset) +
                                       " failed: " + rs.ToString());
                        return;
                    }
                    if (got != want) {
                        firstError.set("short read at offset " + std::to_string(offset) + ": " +
                                       std::to_string(got) + " of " + std::to_string(want));
                        return;
                    }
                    const auto received = PullTrace::Clock::now();
                    ssize_t wr = writer.write(buffer.data(), static_cast<off_t>(offset), got);
                    if (trace.enabled())
                        trace.read(offset, got, issued, received, PullTrace::Clock::now());
                    if (wr < 0) {
                        firstError.set(std::string("write to destination failed: ") +
                                       strerror(static_cast<int>(-wr)));
                        return;
                    }
                }
            });
        }
        for (std::thread& t : readers) t.join();
        trace.phase("reads_done");
        // Closed without waiting for the answer, while the writers drain; if the close cannot
        // even be sent, the File closes (synchronously) when it is destroyed.
        auto closeHandler = std::make_unique<UnawaitedClose>();
        if (source.Close(closeHandler.get()).IsOK()) {
            (void)closeHandler.release();  // deletes itself when the answer comes
            (void)sourceFile.release();    // lives until the process ends
        }
        trace.phase("source_close_sent");
        const int drainRc = writer.drain();
        trace.phase("drained");
        // Time the readers waited for the disk writers (backpressure), summed over readers.
        trace.total("writer_blocked", static_cast<double>(writer.stats().blockedNanos) / 1e9);
        result.directChunks = writer.stats().directChunks;
        if (firstError.failed()) return cleanup(firstError.message());
        if (drainRc != 0)
            return cleanup(std::string("write to destination failed: ") + strerror(-drainRc));
        if (!writer.wholeFileAdler(static_cast<off_t>(size), result.adler))
            return cleanup("internal error: streamed checksum does not cover the file");
    }

    // Verify against the source (or the value the caller gave us).
    if (sourceChecksum) {
        ChecksumAnswer answer = sourceChecksum->wait();
        if (answer.ok) {
            expected = answer.adler;
            haveExpected = true;
        } else if (!cksType.empty()) {
            return cleanup(answer.error);  // verification was requested but is impossible
        }
    }
    trace.phase("source_checksum");
    if (haveExpected && expected != result.adler)
        return cleanup("checksum mismatch: source adler32 " + adlerHex(expected) + ", copy " +
                       adlerHex(result.adler));
    if (int rc = CksXattr::store(fd.get(), result.adler); rc != 0 && rc != -ENOTSUP)
        return cleanup(std::string("cannot store checksum xattr: ") + strerror(-rc));
    if (::close(fd.release()) != 0) return cleanup(std::string("close failed: ") + strerror(errno));

    trace.phase("end");
    result.bytes = size;
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (cksValue == "print") printf("adler32: %s\n", adlerHex(result.adler).c_str());
    return result;
}

}  // namespace wanio
