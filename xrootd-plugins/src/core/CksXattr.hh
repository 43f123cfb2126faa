// Reads and writes the "user.XrdCks.adler32" extended attribute in the exact
// record format that XRootD's stock checksum manager (XrdCksManager::Get)
// accepts, so `xrdfs query checksum` is answered without reading the file.
#pragma once

#include <cstdint>
#include <ctime>

namespace wanio {

class CksXattr {
  public:
    static constexpr const char* kName = "user.XrdCks.adler32";

    // Stores `adler` for the file open at fd, stamped with the file's current
    // mtime (the manager rejects the value once the mtime changes). 0 or -errno.
    static int store(int fd, std::uint32_t adler);
    // Removes any stored value; a missing attribute is not an error. 0 or -errno.
    static int remove(int fd);
    // Reads the stored value back. 0, -ENODATA, or -errno.
    static int load(int fd, std::uint32_t& adler, long long& fmTime);
};

}  // namespace wanio
