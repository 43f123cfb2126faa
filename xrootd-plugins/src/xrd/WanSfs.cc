#include "WanSfs.hh"

#include <memory>

#include "WanSfsFile.hh"

namespace wanio {

WanSfs::WanSfs(XrdSfsFileSystem& wrapped, const WanConfig& config, XrdSysLogger* logger)
    : wrapped_(wrapped), config_(config), log_(logger, "wanio_") {
    FeatureSet = wrapped.Features();
}

XrdSfsFile* WanSfs::wrap(XrdSfsFile* inner) {
    if (!inner) return nullptr;
    // Ownership passes to the caller, as the XrdSfs interface requires.
    return std::make_unique<WanSfsFile>(std::unique_ptr<XrdSfsFile>(inner), *this).release();
}

XrdSfsDirectory* WanSfs::newDir(char* user, int MonID) {
    return wrapped_.newDir(user, MonID);
}
XrdSfsDirectory* WanSfs::newDir(XrdOucErrInfo& eInfo) {
    return wrapped_.newDir(eInfo);
}
XrdSfsFile* WanSfs::newFile(char* user, int MonID) {
    return wrap(wrapped_.newFile(user, MonID));
}
XrdSfsFile* WanSfs::newFile(XrdOucErrInfo& eInfo) {
    return wrap(wrapped_.newFile(eInfo));
}

int WanSfs::chksum(csFunc Func, const char* csName, const char* path, XrdOucErrInfo& eInfo,
                   const XrdSecEntity* client, const char* opaque) {
    return wrapped_.chksum(Func, csName, path, eInfo, client, opaque);
}
int WanSfs::chmod(const char* path, XrdSfsMode mode, XrdOucErrInfo& eInfo,
                  const XrdSecEntity* client, const char* opaque) {
    return wrapped_.chmod(path, mode, eInfo, client, opaque);
}
void WanSfs::Connect(const XrdSecEntity* client) {
    wrapped_.Connect(client);
}
void WanSfs::Disc(const XrdSecEntity* client) {
    wrapped_.Disc(client);
}
void WanSfs::EnvInfo(XrdOucEnv* envP) {
    wrapped_.EnvInfo(envP);
}
int WanSfs::exists(const char* path, XrdSfsFileExistence& eFlag, XrdOucErrInfo& eInfo,
                   const XrdSecEntity* client, const char* opaque) {
    return wrapped_.exists(path, eFlag, eInfo, client, opaque);
}
int WanSfs::FAttr(XrdSfsFACtl* faReq, XrdOucErrInfo& eInfo, const XrdSecEntity* client) {
    return wrapped_.FAttr(faReq, eInfo, client);
}
int WanSfs::FSctl(const int cmd, XrdSfsFSctl& args, XrdOucErrInfo& eInfo,
                  const XrdSecEntity* client) {
    return wrapped_.FSctl(cmd, args, eInfo, client);
}
int WanSfs::fsctl(const int cmd, const char* args, XrdOucErrInfo& eInfo,
                  const XrdSecEntity* client) {
    return wrapped_.fsctl(cmd, args, eInfo, client);
}
int WanSfs::getChkPSize() {
    return wrapped_.getChkPSize();
}
int WanSfs::getStats(char* buff, int blen) {
    return wrapped_.getStats(buff, blen);
}
const char* WanSfs::getVersion() {
    return wrapped_.getVersion();
}
int WanSfs::gpFile(gpfFunc& gpAct, XrdSfsGPFile& gpReq, XrdOucErrInfo& eInfo,
                   const XrdSecEntity* client) {
    return wrapped_.gpFile(gpAct, gpReq, eInfo, client);
}
int WanSfs::mkdir(const char* path, XrdSfsMode mode, XrdOucErrInfo& eInfo,
                  const XrdSecEntity* client, const char* opaque) {
    return wrapped_.mkdir(path, mode, eInfo, client, opaque);
}
int WanSfs::prepare(XrdSfsPrep& pargs, XrdOucErrInfo& eInfo, const XrdSecEntity* client) {
    return wrapped_.prepare(pargs, eInfo, client);
}
int WanSfs::rem(const char* path, XrdOucErrInfo& eInfo, const XrdSecEntity* client,
                const char* opaque) {
    return wrapped_.rem(path, eInfo, client, opaque);
}
int WanSfs::remdir(const char* path, XrdOucErrInfo& eInfo, const XrdSecEntity* client,
                   const char* opaque) {
    return wrapped_.remdir(path, eInfo, client, opaque);
}
int WanSfs::rename(const char* oPath, const char* nPath, XrdOucErrInfo& eInfo,
                   const XrdSecEntity* client, const char* opaqueO, const char* opaqueN) {
    return wrapped_.rename(oPath, nPath, eInfo, client, opaqueO, opaqueN);
}
int WanSfs::stat(const char* Name, struct stat* buf, XrdOucErrInfo& eInfo,
                 const XrdSecEntity* client, const char* opaque) {
    return wrapped_.stat(Name, buf, eInfo, client, opaque);
}
int WanSfs::stat(const char* path, mode_t& mode, XrdOucErrInfo& eInfo, const XrdSecEntity* client,
                 const char* opaque) {
    return wrapped_.stat(path, mode, eInfo, client, opaque);
}
int WanSfs::truncate(const char* path, XrdSfsFileOffset fsize, XrdOucErrInfo& eInfo,
                     const XrdSecEntity* client, const char* opaque) {
    return wrapped_.truncate(path, fsize, eInfo, client, opaque);
}

}  // namespace wanio
