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

#include "XrdCl/XrdClBuffer.hh"
#include "XrdCl/XrdClDefaultEnv.hh"
#include "XrdCl/XrdClFile.hh"
#include "XrdCl/XrdClFileSystem.hh"
#include "XrdCl/XrdClURL.hh"
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

bool parseHex32(const std::string& text, std::uint32_t& out) {
    if (text.empty() || text.size() > 8) return false;
    char* end = nullptr;
    unsigned long v = std::strtoul(text.c_str(), &end, 16);
    if (*end != '\0') return false;
    out = static_cast<std::uint32_t>(v);
    return true;
}

std::string hex32(std::uint32_t v) {
    char buf[9];
    snprintf(buf, sizeof(buf), "%08x", v);
    return buf;
}

}  // namespace

bool TpcPull::sourceAdler(std::uint32_t& adler, std::string& error) const {
    XrdCl::URL url(options_.source);
    XrdCl::FileSystem fs(url);
    XrdCl::Buffer arg;
    arg.FromString(url.GetPath());
    XrdCl::Buffer* response = nullptr;
    XrdCl::XRootDStatus st = fs.Query(XrdCl::QueryCode::Checksum, arg, response);
    std::unique_ptr<XrdCl::Buffer> owned(response);
    if (!st.IsOK() || !owned) {
        error = "source checksum query failed: " + st.ToString();
        return false;
    }
    // Reply: "adler32 0a1b2c3d"
    std::string text = owned->ToString();
    std::size_t space = text.find(' ');
    if (space == std::string::npos || text.compare(0, space, "adler32") != 0) {
        error = "source did not return an adler32 checksum: " + text;
        return false;
    }
    std::string value = text.substr(space + 1);
    while (!value.empty() && (value.back() == '\0' || value.back() == '\n')) value.pop_back();
    if (!parseHex32(value, adler)) {
        error = "unparsable source checksum: " + text;
        return false;
    }
    return true;
}

TpcResult TpcPull::run() {
    TpcResult result;
    const auto start = std::chrono::steady_clock::now();
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
        if (!parseHex32(cksValue, expected)) return fail("bad checksum value " + cksValue);
        haveExpected = true;
    }

    if (options_.streams > 0)
        XrdCl::DefaultEnv::GetEnv()->PutInt("SubStreamsPerChannel", options_.streams + 1);

    XrdCl::File source;
    XrdCl::XRootDStatus st = source.Open(options_.source, XrdCl::OpenFlags::Read);
    if (!st.IsOK()) return fail("cannot open source: " + st.ToString());
    XrdCl::StatInfo* rawInfo = nullptr;
    st = source.Stat(false, rawInfo);
    std::unique_ptr<XrdCl::StatInfo> info(rawInfo);
    if (!st.IsOK() || !info) return fail("cannot stat source: " + st.ToString());
    const std::uint64_t size = info->GetSize();

    std::string dest = options_.destination;
    if (dest.compare(0, 7, "file://") == 0) dest = dest.substr(7);
    UniqueFd fd(::open(dest.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) return fail("cannot open destination " + dest + ": " + strerror(errno));

    auto cleanup = [&](const std::string& message) {
        // A failed pull must not leave a file that looks like a finished copy.
        ::unlink(dest.c_str());
        return fail(message);
    };
    if (int rc = CksXattr::remove(fd.get()); rc != 0)
        return cleanup(std::string("cannot clear stale checksum: ") + strerror(-rc));

    const int inflight = std::max(1, options_.inflight);
    WriteBehindSettings settings;
    settings.chunkSize = options_.chunkSize;
    settings.perFileWriters = options_.writerThreads;
    settings.perFileQueue = 2 * options_.writerThreads;
    WriterPool pool(options_.writerThreads);
    MemoryBudget budget(static_cast<std::uint64_t>(settings.perFileQueue + 1) * options_.chunkSize);
    FirstError firstError;
    {
        WriteBehindFile writer(fd.get(), -1, settings, pool, budget);
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
                    ssize_t wr = writer.write(buffer.data(), static_cast<off_t>(offset), got);
                    if (wr < 0) {
                        firstError.set(std::string("write to destination failed: ") +
                                       strerror(static_cast<int>(-wr)));
                        return;
                    }
                }
            });
        }
        for (std::thread& t : readers) t.join();
        const int drainRc = writer.drain();
        XrdCl::XRootDStatus closeSt = source.Close();
        (void)closeSt;
        if (firstError.failed()) return cleanup(firstError.message());
        if (drainRc != 0)
            return cleanup(std::string("write to destination failed: ") + strerror(-drainRc));
        if (!writer.wholeFileAdler(static_cast<off_t>(size), result.adler))
            return cleanup("internal error: streamed checksum does not cover the file");
    }

    // Verify against the source (or the value the caller gave us).
    std::string cksError;
    if (!haveExpected) {
        if (sourceAdler(expected, cksError)) {
            haveExpected = true;
        } else if (!cksType.empty()) {
            return cleanup(cksError);  // verification was requested but is impossible
        }
    }
    if (haveExpected && expected != result.adler)
        return cleanup("checksum mismatch: source adler32 " + hex32(expected) + ", copy " +
                       hex32(result.adler));
    if (int rc = CksXattr::store(fd.get(), result.adler); rc != 0 && rc != -ENOTSUP)
        return cleanup(std::string("cannot store checksum xattr: ") + strerror(-rc));
    if (::close(fd.release()) != 0) return cleanup(std::string("close failed: ") + strerror(errno));

    result.bytes = size;
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (cksValue == "print") printf("adler32: %s\n", hex32(result.adler).c_str());
    return result;
}

}  // namespace wanio
