// A file of the WanSfs wrapper: forwards every call to the wrapped file and
// routes sendfile() reads through SendData() to prefetch ahead of them.
#pragma once

#include <atomic>
#include <memory>

#include "XrdSfs/XrdSfsInterface.hh"
#include "core/ReadaheadWindow.hh"

namespace wanio {

class WanSfs;

class WanSfsFile : public XrdSfsFile {
  public:
    WanSfsFile(std::unique_ptr<XrdSfsFile> inner, WanSfs& fs);
    ~WanSfsFile() override;

    int open(const char* fileName, XrdSfsFileOpenMode openMode, mode_t createMode,
             const XrdSecEntity* client = 0, const char* opaque = 0) override;
    int checkpoint(cpAct act, struct iov* range = 0, int n = 0) override;
    int close() override;
    int fctl(const int cmd, const char* args, XrdOucErrInfo& eInfo) override;
    int fctl(const int cmd, int alen, const char* args, const XrdSecEntity* client = 0) override;
    const char* FName() override;
    int getMmap(void** Addr, off_t& Size) override;
    XrdSfsXferSize pgRead(XrdSfsFileOffset offset, char* buffer, XrdSfsXferSize rdlen,
                          uint32_t* csvec, uint64_t opts = 0) override;
    int pgRead(XrdSfsAio* aioparm, uint64_t opts = 0) override;
    XrdSfsXferSize pgWrite(XrdSfsFileOffset offset, char* buffer, XrdSfsXferSize wrlen,
                           uint32_t* csvec, uint64_t opts = 0) override;
    int pgWrite(XrdSfsAio* aioparm, uint64_t opts = 0) override;
    XrdSfsXferSize read(XrdSfsFileOffset offset, XrdSfsXferSize size) override;
    XrdSfsXferSize read(XrdSfsFileOffset offset, char* buffer, XrdSfsXferSize size) override;
    int read(XrdSfsAio* aioparm) override;
    XrdSfsXferSize readv(XrdOucIOVec* readV, int rdvCnt) override;
    int SendData(XrdSfsDio* sfDio, XrdSfsFileOffset offset, XrdSfsXferSize size) override;
    XrdSfsXferSize write(XrdSfsFileOffset offset, const char* buffer, XrdSfsXferSize size) override;
    int write(XrdSfsAio* aioparm) override;
    XrdSfsXferSize writev(XrdOucIOVec* writeV, int wdvCnt) override;
    int stat(struct stat* buf) override;
    int sync() override;
    int sync(XrdSfsAio* aiop) override;
    int truncate(XrdSfsFileOffset fsize) override;
    int getCXinfo(char cxtype[4], int& cxrsz) override;
    void setXio(XrdSfsXio* xioP) override;

    // SendData() calls served through this wrapper (for the close trace line).
    long long sendDataCalls() const { return sendDataCalls_.load(); }

  private:
    std::unique_ptr<XrdSfsFile> inner_;
    WanSfs& fs_;
    int fd_ = -1;  // real descriptor behind SFS_SFIO_FDVAL
    ReadaheadWindow readahead_;
    std::atomic<long long> sendDataCalls_{0};
    std::atomic<long long> prefetches_{0};
    std::atomic<long long> pooled_{0};  // of which went to the readahead threads
    bool traced_ = false;
};

}  // namespace wanio
