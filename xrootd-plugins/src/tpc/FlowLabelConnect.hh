// Sets the SciTags flow label (FlowLabel.hh) on the copy program's own TCP connections.
//
// XrdCl owns the sockets, so xrdcp-wan defines connect() itself (FlowLabelConnect.cc): the
// executable's definition comes first in symbol resolution, so libXrdCl's calls reach it,
// and it calls the C library's through dlsym(RTLD_NEXT). Once a scitag is armed, every IPv6
// TCP connect() of the program (all of them go to the source: the pull, its sub-streams and
// the checksum query) gets IPV6_FLOWINFO_SEND and the label, with fresh entropy per
// connection, in sin6_flowinfo: Linux takes a TCP socket's flow label at connect time and
// keeps it on every packet it sends. The source's packets carry the same label when its
// host reflects it (net.ipv6.flowlabel_reflect bit 1, set by the dtn_tuning role).
// IPv4 (and IPv4-mapped) connections, other socket types and an unarmed program are left
// unlabelled. Every TCP connection also asks for Fast Open first (FastOpen.hh).
#pragma once

namespace wanio {

// Marks the connections made from now on with `scitag`'s label. Returns false (and marks
// nothing) when the scitag has no label (FlowLabel.hh: outside 65..65535 or an experiment
// beyond the layout's 9 bits); 0 disarms.
bool armFlowLabel(int scitag);

// How many connections were given the label, and how many the kernel refused it for (a
// namespace holding exclusive flow-label leases answers EINVAL: connected unlabelled).
struct FlowLabelCounts {
    unsigned long labelled;
    unsigned long refused;
};
FlowLabelCounts flowLabelCounts();

}  // namespace wanio
