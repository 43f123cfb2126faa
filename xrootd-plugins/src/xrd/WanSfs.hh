// Optional file-system-layer wrapper (loaded with `xrootd.fslib ++`). It
// forwards everything to the wrapped file system; its files answer the
// sendfile fd query with SFS_SFIO_FDVAL so that every sendfile() read passes
// through SendData(), which prefetches ahead of a sequential reader and then
// lets the protocol sendfile() from the real descriptor.
#pragma once

#include "XrdSfs/XrdSfsInterface.hh"
#include "XrdSys/XrdSysError.hh"
#include "core/WanConfig.hh"

class XrdSysLogger;

namespace wanio {

class WanSfs : public XrdSfsFileSystem {
  public:
    WanSfs(XrdSfsFileSystem& wrapped, const WanConfig& config, XrdSysLogger* logger);

    XrdSfsDirectory* newDir(char* user = 0, int MonID = 0) override;
    XrdSfsDirectory* newDir(XrdOucErrInfo& eInfo) override;
    XrdSfsFile* newFile(char* user = 0, int MonID = 0) override;
    XrdSfsFile* newFile(XrdOucErrInfo& eInfo) override;

    int chksum(csFunc Func, const char* csName, const char* path, XrdOucErrInfo& eInfo,
               const XrdSecEntity* client = 0, const char* opaque = 0) override;
    int chmod(const char* path, XrdSfsMode mode, XrdOucErrInfo& eInfo,
              const XrdSecEntity* client = 0, const char* opaque = 0) override;
    void Connect(const XrdSecEntity* client = 0) override;
    void Disc(const XrdSecEntity* client = 0) override;
    void EnvInfo(XrdOucEnv* envP) override;
    int exists(const char* path, XrdSfsFileExistence& eFlag, XrdOucErrInfo& eInfo,
               const XrdSecEntity* client = 0, const char* opaque = 0) override;
    int FAttr(XrdSfsFACtl* faReq, XrdOucErrInfo& eInfo, const XrdSecEntity* client = 0) override;
    int FSctl(const int cmd, XrdSfsFSctl& args, XrdOucErrInfo& eInfo,
              const XrdSecEntity* client = 0) override;
    int fsctl(const int cmd, const char* args, XrdOucErrInfo& eInfo,
              const XrdSecEntity* client = 0) override;
    int getChkPSize() override;
    int getStats(char* buff, int blen) override;
    const char* getVersion() override;
    int gpFile(gpfFunc& gpAct, XrdSfsGPFile& gpReq, XrdOucErrInfo& eInfo,
               const XrdSecEntity* client = 0) override;
    int mkdir(const char* path, XrdSfsMode mode, XrdOucErrInfo& eInfo,
              const XrdSecEntity* client = 0, const char* opaque = 0) override;
    int prepare(XrdSfsPrep& pargs, XrdOucErrInfo& eInfo, const XrdSecEntity* client = 0) override;
    int rem(const char* path, XrdOucErrInfo& eInfo, const XrdSecEntity* client = 0,
            const char* opaque = 0) override;
    int remdir(const char* path, XrdOucErrInfo& eInfo, const XrdSecEntity* client = 0,
               const char* opaque = 0) override;
    int rename(const char* oPath, const char* nPath, XrdOucErrInfo& eInfo,
               const XrdSecEntity* client = 0, const char* opaqueO = 0,
               const char* opaqueN = 0) override;
    int stat(const char* Name, struct stat* buf, XrdOucErrInfo& eInfo,
             const XrdSecEntity* client = 0, const char* opaque = 0) override;
    int stat(const char* path, mode_t& mode, XrdOucErrInfo& eInfo, const XrdSecEntity* client = 0,
             const char* opaque = 0) override;
    int truncate(const char* path, XrdSfsFileOffset fsize, XrdOucErrInfo& eInfo,
                 const XrdSecEntity* client = 0, const char* opaque = 0) override;

    const WanConfig& config() const { return config_; }
    XrdSysError& log() { return log_; }

  private:
    XrdSfsFile* wrap(XrdSfsFile* inner);

    XrdSfsFileSystem& wrapped_;
    const WanConfig config_;
    XrdSysError log_;
};

}  // namespace wanio
