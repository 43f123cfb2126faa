// XRootD's trace identifier of a client link, "<user>.<pid>:<fd>@<host>", where <fd> is
// the server's descriptor of the link's socket (XrdLink builds it that way).
#pragma once

namespace wanio {

// The link's socket descriptor named by a trace identifier, or -1 if it names none.
int linkDescriptor(const char* tident);

}  // namespace wanio
