// The round trip to the source, as the kernel measures it on the program's own connections.
//
// XrdCl owns the sockets; xrdcp-wan's connect() (FlowLabelConnect.cc) sees each one and
// remembers it here. Once the source is open, the kernel's smoothed RTT of those
// connections (TCP_INFO: from the handshake and the login and open that followed) is the
// path's round trip, measured without a request of its own. (XrdCl answers a stat from
// what the open returned, so a timed stat measures nothing.)
#pragma once

namespace wanio {

// Remembers a connected (or connecting) TCP socket of the program. Lock-free; the most
// recent connections are kept.
void rememberConnection(int fd);

// The largest smoothed RTT, in seconds, among the remembered sockets still open and
// connected; 0 when there is none.
double measuredRttSeconds();

}  // namespace wanio
