#include "WanSfsFile.hh"

#include <fcntl.h>

#include <cstdio>

#include "LinkPacing.hh"
#include "WanSfs.hh"
#include "XrdSec/XrdSecEntity.hh"
#include "XrdSfs/XrdSfsDio.hh"
#include "core/PluginCounters.hh"
#include "core/ReadaheadPool.hh"
#include "core/RequestedPacing.hh"

namespace wanio {

WanSfsFile::WanSfsFile(std::unique_ptr<XrdSfsFile> inner, WanSfs& fs)
    : XrdSfsFile(*inner),  // share the wrapped file's error object
      inner_(std::move(inner)),
      fs_(fs),
      readahead_(static_cast<off_t>(fs.config().readahead)) {}

WanSfsFile::~WanSfsFile() = default;

int WanSfsFile::open(const char* fileName, XrdSfsFileOpenMode openMode, mode_t createMode,
                     const XrdSecEntity* client, const char* opaque) {
    const int rc = inner_->open(fileName, openMode, createMode, client, opaque);
    const WanConfig& cfg = fs_.config();
    if (rc != SFS_OK || (openMode & (SFS_O_WRONLY | SFS_O_RDWR)) != 0) return rc;
    // The data of this read leaves on the client's link: pace it at the site's rate, or at the
    // lower one the read asks for (RequestedPacing.hh; LinkPacing.hh).
    const PacingChoice pacing = choosePacing(opaque, cfg.pacing);
    if (pacing.rate > 0) {
        std::string detail;
        if (!paceClientLink(client, pacing.rate, detail)) detail = "not applied: " + detail;
        if (cfg.trace != TraceLevel::None) {
            char line[512];
            snprintf(line, sizeof(line), "pacing %s %s max_pacing_rate=%llu %s (%s)", fileName,
                     client && client->tident ? client->tident : "?",
                     static_cast<unsigned long long>(pacing.rate), detail.c_str(),
                     pacing.why.c_str());
            fs_.log().Say("wanio: ", line);
        }
    }
    return rc;
}

int WanSfsFile::checkpoint(cpAct act, struct iov* range, int n) {
    return inner_->checkpoint(act, range, n);
}

int WanSfsFile::close() {
    if (fd_ >= 0 && !traced_ && fs_.config().trace != TraceLevel::None &&
        sendDataCalls_.load() > 0) {
        char line[512];
        const ReadaheadPool* pool = ReadaheadPool::shared(fs_.config());
        const ReadaheadPool::Stats ps = pool ? pool->stats() : ReadaheadPool::Stats();
        snprintf(line, sizeof(line),
                 "sendfile %s senddata=%lld prefetches=%lld pooled=%lld pool_bytes=%llu "
                 "pool_dropped=%llu",
                 FName(), sendDataCalls_.load(), prefetches_.load(), pooled_.load(),
                 static_cast<unsigned long long>(ps.bytes),
                 static_cast<unsigned long long>(ps.dropped));
        fs_.log().Say("wanio: ", line);
        traced_ = true;
    }
    return inner_->close();
}

int WanSfsFile::fctl(const int cmd, const char* args, XrdOucErrInfo& eInfo) {
    int rc = inner_->fctl(cmd, args, eInfo);
    if (cmd == SFS_FCTL_GETFD && rc == SFS_OK && fs_.config().readahead > 0) {
        const int fd = eInfo.getErrInfo();
        if (fd >= 0) {
            // Keep sendfile, but route each request through SendData().
            fd_ = fd;
            eInfo.setErrCode(static_cast<int>(SFS_SFIO_FDVAL));
        }
    }
    return rc;
}

int WanSfsFile::fctl(const int cmd, int alen, const char* args, const XrdSecEntity* client) {
    return inner_->fctl(cmd, alen, args, client);
}

int WanSfsFile::SendData(XrdSfsDio* sfDio, XrdSfsFileOffset offset, XrdSfsXferSize size) {
    if (fd_ < 0) return inner_->SendData(sfDio, offset, size);
    sendDataCalls_.fetch_add(1);
    PluginCounters& counters = PluginCounters::process();
    PluginCounters::add(counters.sendfileRequests, 1);
    PluginCounters::add(counters.sendfileBytes, static_cast<std::uint64_t>(size));
    off_t from = 0, len = 0;
    if (readahead_.onRead(offset, size, from, len)) {
        // Starts the disk reads for the next window while this request is sent.
        if (prefetch(fs_.config(), fd_, from, len)) pooled_.fetch_add(1);
        prefetches_.fetch_add(1);
    }
    return sfDio->SendFile(fd_) < 0 ? SFS_ERROR : SFS_OK;
}

const char* WanSfsFile::FName() {
    return inner_->FName();
}
int WanSfsFile::getMmap(void** Addr, off_t& Size) {
    return inner_->getMmap(Addr, Size);
}
XrdSfsXferSize WanSfsFile::pgRead(XrdSfsFileOffset offset, char* buffer, XrdSfsXferSize rdlen,
                                  uint32_t* csvec, uint64_t opts) {
    return inner_->pgRead(offset, buffer, rdlen, csvec, opts);
}
int WanSfsFile::pgRead(XrdSfsAio* aioparm, uint64_t opts) {
    return inner_->pgRead(aioparm, opts);
}
XrdSfsXferSize WanSfsFile::pgWrite(XrdSfsFileOffset offset, char* buffer, XrdSfsXferSize wrlen,
                                   uint32_t* csvec, uint64_t opts) {
    return inner_->pgWrite(offset, buffer, wrlen, csvec, opts);
}
int WanSfsFile::pgWrite(XrdSfsAio* aioparm, uint64_t opts) {
    return inner_->pgWrite(aioparm, opts);
}
XrdSfsXferSize WanSfsFile::read(XrdSfsFileOffset offset, XrdSfsXferSize size) {
    return inner_->read(offset, size);
}
XrdSfsXferSize WanSfsFile::read(XrdSfsFileOffset offset, char* buffer, XrdSfsXferSize size) {
    return inner_->read(offset, buffer, size);
}
int WanSfsFile::read(XrdSfsAio* aioparm) {
    return inner_->read(aioparm);
}
XrdSfsXferSize WanSfsFile::readv(XrdOucIOVec* readV, int rdvCnt) {
    return inner_->readv(readV, rdvCnt);
}
XrdSfsXferSize WanSfsFile::write(XrdSfsFileOffset offset, const char* buffer, XrdSfsXferSize size) {
    return inner_->write(offset, buffer, size);
}
int WanSfsFile::write(XrdSfsAio* aioparm) {
    return inner_->write(aioparm);
}
XrdSfsXferSize WanSfsFile::writev(XrdOucIOVec* writeV, int wdvCnt) {
    return inner_->writev(writeV, wdvCnt);
}
int WanSfsFile::stat(struct stat* buf) {
    return inner_->stat(buf);
}
int WanSfsFile::sync() {
    return inner_->sync();
}
int WanSfsFile::sync(XrdSfsAio* aiop) {
    return inner_->sync(aiop);
}
int WanSfsFile::truncate(XrdSfsFileOffset fsize) {
    return inner_->truncate(fsize);
}
int WanSfsFile::getCXinfo(char cxtype[4], int& cxrsz) {
    return inner_->getCXinfo(cxtype, cxrsz);
}
void WanSfsFile::setXio(XrdSfsXio* xioP) {
    inner_->setXio(xioP);
}

}  // namespace wanio
