// Paces the TCP connection a client reads through (wanio.net.pacing). Setting
// SO_MAX_PACING_RATE makes Linux pace that socket itself (TCP internal pacing, no fq
// qdisc needed): slow start then sends at twice the window per round trip spread over
// the round trip instead of window-sized bursts at the interface's speed. On a long path
// those bursts queue at the bottleneck, the queueing delay ends CUBIC's slow start early
// (HyStart), and the window then takes tens of seconds of cubic growth to fill the path.
#pragma once

#include <cstdint>
#include <string>

class XrdSecEntity;

namespace wanio {

// Applies `bytesPerSecond` as the maximum pacing rate of `client`'s link, found from its
// trace identifier and checked to be a TCP socket connected to the client's address.
// False, with the reason in `detail`, if it could not be applied.
bool paceClientLink(const XrdSecEntity* client, std::uint64_t bytesPerSecond, std::string& detail);

}  // namespace wanio
