// A file opened through the wanio wrapper. Writes go to a WriteBehindFile;
// every point where the client or OFS can observe the file (read, stat,
// sync, truncate, chmod for POSC, close) first drains it. getFD() returns
// the real descriptor so the stock sendfile read path stays available.
#pragma once

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <string>

#include "XrdOss/XrdOss.hh"
#include "XrdOss/XrdOssWrapper.hh"
#include "core/ReadaheadWindow.hh"
#include "core/UniqueFd.hh"
#include "core/WriteBehindFile.hh"

namespace wanio {

class WanOss;

class WanOssFile : public XrdOssWrapDF {
  public:
    WanOssFile(std::unique_ptr<XrdOssDF> inner, WanOss& oss);
    ~WanOssFile() override;

    int Open(const char* path, int Oflag, mode_t Mode, XrdOucEnv& env) override;
    int Close(long long* retsz = 0) override;

    ssize_t Write(const void* buffer, off_t offset, size_t size) override;
    int Write(XrdSfsAio* aiop) override;
    ssize_t WriteV(XrdOucIOVec* writeV, int wrvcnt) override;
    ssize_t pgWrite(void* buffer, off_t offset, size_t wrlen, uint32_t* csvec,
                    uint64_t opts) override;
    int pgWrite(XrdSfsAio* aioparm, uint64_t opts) override;

    ssize_t Read(off_t offset, size_t size) override;
    ssize_t Read(void* buffer, off_t offset, size_t size) override;
    int Read(XrdSfsAio* aiop) override;
    ssize_t ReadRaw(void* buffer, off_t offset, size_t size) override;
    ssize_t ReadV(XrdOucIOVec* readV, int rdvcnt) override;
    ssize_t pgRead(void* buffer, off_t offset, size_t rdlen, uint32_t* csvec,
                   uint64_t opts) override;
    int pgRead(XrdSfsAio* aioparm, uint64_t opts) override;

    int Fchmod(mode_t mode) override;
    int Fstat(struct stat* buf) override;
    int Fsync() override;
    int Fsync(XrdSfsAio* aiop) override;
    int Ftruncate(unsigned long long flen) override;

  private:
    // Makes buffered writes visible before anything reads or stats the file.
    int settle();
    int beginWriting();
    void hintReadahead(off_t offset, size_t size);
    int finishWrite(long long* retsz);

    std::unique_ptr<XrdOssDF> inner_;
    WanOss& oss_;
    std::string path_;
    long long expectedSize_ = -1;  // oss.asize from the client, -1 if unknown
    UniqueFd directFd_;
    std::unique_ptr<WriteBehindFile> writer_;

    std::mutex stateMutex_;
    bool started_ = false;  // first write seen
    int startError_ = 0;    // error from the first-write setup (sticky)
    ReadaheadWindow readahead_;
};

}  // namespace wanio
