#include "WanOssFile.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <string>

#include "WanOss.hh"
#include "XrdOuc/XrdOucEnv.hh"
#include "XrdOuc/XrdOucIOVec.hh"
#include "XrdSfs/XrdSfsAio.hh"
#include "core/CksXattr.hh"
#include "core/PluginCounters.hh"
#include "core/ReadaheadPool.hh"

namespace wanio {

WanOssFile::WanOssFile(std::unique_ptr<XrdOssDF> inner, WanOss& oss)
    : XrdOssWrapDF(*inner),
      inner_(std::move(inner)),
      oss_(oss),
      readahead_(static_cast<off_t>(oss.config().readahead)) {}

WanOssFile::~WanOssFile() {
    // OFS (and the checksum manager) may delete a file without closing it,
    // e.g. after a client disconnect: apply the same policy as Close().
    if (writer_) finishWrite(nullptr);
}

int WanOssFile::Open(const char* path, int Oflag, mode_t Mode, XrdOucEnv& env) {
    int rc = wrapDF.Open(path, Oflag, Mode, env);
    if (rc != 0) return rc;
    path_ = path;
    const WanConfig& cfg = oss_.config();
    const int fd = wrapDF.getFD();
    if (fd < 0) return 0;  // not a POSIX-backed file: pure passthrough
    if ((Oflag & O_ACCMODE) == O_RDONLY) {
        if (cfg.readahead > 0) ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        return 0;
    }
    if (!cfg.writeBehind) return 0;
    if (const char* asize = env.Get("oss.asize")) {
        char* end = nullptr;
        long long v = std::strtoll(asize, &end, 10);
        if (end != asize && *end == '\0' && v >= 0) expectedSize_ = v;
    }
    if (cfg.directIo) {
        const std::string self = "/proc/self/fd/" + std::to_string(fd);
        directFd_.reset(::open(self.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC));
    }
    writer_ = std::make_unique<WriteBehindFile>(fd, directFd_.get(), oss_.writeBehindSettings(),
                                                oss_.pool(), oss_.budget());
    PluginCounters::add(PluginCounters::process().openUploads, 1);
    return 0;
}

int WanOssFile::beginWriting() {
    std::lock_guard<std::mutex> lock(stateMutex_);
    if (started_) return startError_;
    started_ = true;
    const int fd = wrapDF.getFD();
    // A stored checksum describes the old content: it must not survive the
    // first byte of new data, even if this upload later fails.
    startError_ = CksXattr::remove(fd);
    if (startError_ == 0 && oss_.config().preallocate && expectedSize_ > 0)
        startError_ = writer_->preallocate(expectedSize_);
    if (startError_ != 0) writer_->fail(startError_);
    return startError_;
}

ssize_t WanOssFile::Write(const void* buffer, off_t offset, size_t size) {
    if (!writer_) return wrapDF.Write(buffer, offset, size);
    int rc = beginWriting();
    if (rc != 0) return rc;
    return writer_->write(buffer, offset, size);
}

int WanOssFile::Write(XrdSfsAio* aiop) {
    // Write-behind already decouples the link from the disk; complete inline.
    aiop->Result =
        Write(const_cast<void*>(aiop->sfsAio.aio_buf), static_cast<off_t>(aiop->sfsAio.aio_offset),
              static_cast<size_t>(aiop->sfsAio.aio_nbytes));
    aiop->doneWrite();
    return 0;
}

ssize_t WanOssFile::WriteV(XrdOucIOVec* writeV, int wrvcnt) {
    if (!writer_) return wrapDF.WriteV(writeV, wrvcnt);
    ssize_t total = 0;
    for (int i = 0; i < wrvcnt; ++i) {
        ssize_t rc = Write(writeV[i].data, writeV[i].offset, writeV[i].size);
        if (rc < 0) return rc;
        total += rc;
    }
    return total;
}

ssize_t WanOssFile::pgWrite(void* buffer, off_t offset, size_t wrlen, uint32_t* csvec,
                            uint64_t opts) {
    if (!writer_) return wrapDF.pgWrite(buffer, offset, wrlen, csvec, opts);
    // The base class verifies page checksums if asked, then calls our Write().
    return XrdOssDF::pgWrite(buffer, offset, wrlen, csvec, opts);
}

int WanOssFile::pgWrite(XrdSfsAio* aioparm, uint64_t opts) {
    if (!writer_) return wrapDF.pgWrite(aioparm, opts);
    return XrdOssDF::pgWrite(aioparm, opts);
}

int WanOssFile::settle() {
    if (!writer_ || !writer_->hasBufferedData()) return writer_ ? writer_->error() : 0;
    return writer_->drain();
}

void WanOssFile::hintReadahead(off_t offset, size_t size) {
    const int fd = wrapDF.getFD();
    off_t from = 0, len = 0;
    if (fd >= 0 && readahead_.onRead(offset, static_cast<off_t>(size), from, len))
        prefetch(oss_.config(), fd, from, len);
}

ssize_t WanOssFile::Read(off_t offset, size_t size) {
    int rc = settle();
    if (rc != 0) return rc;
    return wrapDF.Read(offset, size);
}

ssize_t WanOssFile::Read(void* buffer, off_t offset, size_t size) {
    int rc = settle();
    if (rc != 0) return rc;
    hintReadahead(offset, size);
    return wrapDF.Read(buffer, offset, size);
}

int WanOssFile::Read(XrdSfsAio* aiop) {
    aiop->Result =
        Read(const_cast<void*>(aiop->sfsAio.aio_buf), static_cast<off_t>(aiop->sfsAio.aio_offset),
             static_cast<size_t>(aiop->sfsAio.aio_nbytes));
    aiop->doneRead();
    return 0;
}

ssize_t WanOssFile::ReadRaw(void* buffer, off_t offset, size_t size) {
    int rc = settle();
    if (rc != 0) return rc;
    return wrapDF.ReadRaw(buffer, offset, size);
}

ssize_t WanOssFile::ReadV(XrdOucIOVec* readV, int rdvcnt) {
    int rc = settle();
    if (rc != 0) return rc;
    return wrapDF.ReadV(readV, rdvcnt);
}

ssize_t WanOssFile::pgRead(void* buffer, off_t offset, size_t rdlen, uint32_t* csvec,
                           uint64_t opts) {
    // The base class reads through our Read() (settle + readahead) and
    // computes the page checksums.
    return XrdOssDF::pgRead(buffer, offset, rdlen, csvec, opts);
}

int WanOssFile::pgRead(XrdSfsAio* aioparm, uint64_t opts) {
    return XrdOssDF::pgRead(aioparm, opts);
}

int WanOssFile::Fchmod(mode_t mode) {
    // OFS calls Fchmod to commit a persist-on-successful-close file before
    // Close: an I/O error must surface here or a broken file would persist.
    if (writer_) {
        int rc = writer_->drain();
        if (rc != 0) return rc;
    }
    return wrapDF.Fchmod(mode);
}

int WanOssFile::Fstat(struct stat* buf) {
    int rc = settle();
    if (rc != 0) return rc;
    return wrapDF.Fstat(buf);
}

int WanOssFile::Fsync() {
    int rc = settle();
    if (rc != 0) return rc;
    return wrapDF.Fsync();
}

int WanOssFile::Fsync(XrdSfsAio* aiop) {
    aiop->Result = Fsync();
    aiop->doneWrite();
    return 0;
}

int WanOssFile::Ftruncate(unsigned long long flen) {
    int rc = settle();
    if (rc != 0) return rc;
    rc = wrapDF.Ftruncate(flen);
    if (writer_ && static_cast<off_t>(flen) != writer_->logicalSize())
        writer_->invalidateChecksum();
    return rc;
}

int WanOssFile::Close(long long* retsz) {
    if (!writer_) return wrapDF.Close(retsz);
    return finishWrite(retsz);
}

int WanOssFile::finishWrite(long long* retsz) {
    const WanConfig& cfg = oss_.config();
    const int fd = wrapDF.getFD();
    int err = writer_->drain();
    const WriteBehindStats stats = writer_->stats();
    struct stat st;
    st.st_size = 0;
    if (err == 0 && ::fstat(fd, &st) != 0) err = -errno;
    if (err == 0 && cfg.fsyncOnClose && started_ && ::fdatasync(fd) != 0) err = -errno;
    const bool incomplete = err == 0 && expectedSize_ >= 0 && st.st_size != expectedSize_;

    std::uint32_t adler = 0;
    bool stored = false;
    if (err == 0 && !incomplete && writer_->wholeFileAdler(st.st_size, adler)) {
        int rc = CksXattr::store(fd, adler);
        stored = rc == 0;
        if (rc != 0 && rc != -ENOTSUP)
            oss_.log().Emsg("Close", -rc, "store checksum xattr for", path_.c_str());
    }
    writer_.reset();
    directFd_.reset();
    int closeRc = wrapDF.Close(retsz);

    const bool failed = err != 0 || incomplete;
    PluginCounters& counters = PluginCounters::process();
    PluginCounters::add(counters.openUploads, -1);
    PluginCounters::add(err != 0     ? counters.uploadsFailed
                        : incomplete ? counters.uploadsIncomplete
                                     : counters.uploadsComplete,
                        1);
    if (stored) PluginCounters::add(counters.checksumsStored, 1);
    bool removed = false;
    if (failed) {
        const ErrorPolicy policy = err != 0 ? cfg.onError : cfg.incomplete;
        // Never leave a partial file that looks like a finished upload.
        if (policy == ErrorPolicy::Unlink) removed = oss_.removeFile(path_.c_str()) == 0;
    }
    if (cfg.trace != TraceLevel::None) {
        char line[512];
        snprintf(line, sizeof(line),
                 "close %s bytes=%llu chunks=%llu direct=%llu maxpar=%d blocked_ms=%llu "
                 "size=%lld expected=%lld cks=%s%08x rc=%d%s",
                 path_.c_str(), static_cast<unsigned long long>(stats.bytes),
                 static_cast<unsigned long long>(stats.chunks),
                 static_cast<unsigned long long>(stats.directChunks), stats.maxConcurrent,
                 static_cast<unsigned long long>(stats.blockedNanos / 1000000),
                 static_cast<long long>(st.st_size), expectedSize_, stored ? "" : "none:", adler,
                 err != 0 ? err : (incomplete ? -EIO : closeRc),
                 failed ? (removed ? " removed" : " kept") : "");
        oss_.log().Say("wanio: ", line);
    }
    if (err != 0) return err;
    if (incomplete) return -EIO;
    return closeRc;
}

}  // namespace wanio
