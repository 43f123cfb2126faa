// The source URL a third-party pull opens.
//
// XRootD's destination names the source with a rendezvous (`tpc.key`, `tpc.org`, ...)
// that the source matches against the grant the copy's client made there by opening the
// file first with the same key: a connection, a login and an open across the path before
// the pull can start. A copy that hands the pull a token for the source instead (its
// `authz`, forwarded by the destination from the rendezvous's `tpc.scgi`) needs no grant:
// the token says what the pull may read, as an HTTP-TPC pull's
// TransferHeaderAuthorization does. Such a pull opens the source as any token-holding
// reader would, without the rendezvous's keys, so the source does not wait for a grant
// that nobody made (docs/transfers.md, "A root:// copy with tokens").
#pragma once

#include <string>

namespace wanio {

// `url` without its `tpc.*` parameters when its opaque part (after '?': keys separated by
// '&' or by tabs) carries a non-empty `authz`; `url` as it is otherwise. `tokenPull` says
// which it was.
std::string pullSourceUrl(const std::string& url, bool& tokenPull);

}  // namespace wanio
