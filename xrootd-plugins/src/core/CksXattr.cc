#include "CksXattr.hh"

#include <arpa/inet.h>
#include <endian.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <cerrno>
#include <cstring>

#include "XrdCks/XrdCksData.hh"

namespace wanio {

int CksXattr::store(int fd, std::uint32_t adler) {
    struct stat st;
    if (::fstat(fd, &st) != 0) return -errno;
    XrdCksData rec;  // zero-initialises itself
    std::strncpy(rec.Name, "adler32", sizeof(rec.Name) - 1);
    const std::time_t now = std::time(nullptr);
    // The manager compares fmTime with st_mtime after converting both fields
    // from network byte order, exactly as XrdCksXAttr stores them.
    rec.fmTime = static_cast<long long>(htobe64(static_cast<std::uint64_t>(st.st_mtime)));
    rec.csTime = static_cast<int>(htonl(static_cast<std::uint32_t>(now - st.st_mtime)));
    rec.Length = 4;
    const std::uint32_t be = htonl(adler);
    std::memcpy(rec.Value, &be, sizeof(be));
    if (::fsetxattr(fd, kName, &rec, sizeof(rec), 0) != 0) return -errno;
    return 0;
}

int CksXattr::remove(int fd) {
    if (::fremovexattr(fd, kName) == 0 || errno == ENODATA) return 0;
    if (errno == ENOTSUP) return 0;  // filesystem without user xattrs: nothing to go stale
    return -errno;
}

int CksXattr::load(int fd, std::uint32_t& adler, long long& fmTime) {
    XrdCksData rec;
    ssize_t n = ::fgetxattr(fd, kName, &rec, sizeof(rec));
    if (n < 0) return -errno;
    if (static_cast<std::size_t>(n) != sizeof(rec) || rec.Length != 4) return -EINVAL;
    std::uint32_t be = 0;
    std::memcpy(&be, rec.Value, sizeof(be));
    adler = ntohl(be);
    fmTime = static_cast<long long>(be64toh(static_cast<std::uint64_t>(rec.fmTime)));
    return 0;
}

}  // namespace wanio
