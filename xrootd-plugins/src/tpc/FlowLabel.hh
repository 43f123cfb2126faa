// The SciTags IPv6 flow label: a copy's flow identifier (scitag, experiment << 6 | activity,
// 65..65535) laid out in the 20-bit flow label of its packets, as the SciTags marking does
// (scitags.org; flowd-go's flow-label marker, IETF draft-cc-v6ops-wlcg-flow-label-marking):
//
//   bit  19 18 | 17 ........ 9 |  8 | 7 ...... 2 | 1 0
//        entropy | experiment,   | en | activity   | entropy
//                | bit-reversed  |    |            |
//
// 15 bits of meaning (the experiment's 9 bits written least significant bit first, from bit 17
// down; the activity's 6 bits as they are) and 5 of entropy, drawn per connection so that
// equal-cost multipath routing still spreads a copy's connections. docs/network.md has the table.
#pragma once

#include <cstdint>
#include <string>

namespace wanio {

// The bits of a label that carry the experiment and the activity (the rest is entropy).
constexpr std::uint32_t kFlowLabelMeaningMask = 0x3FEFC;
constexpr std::uint32_t kFlowLabelMask = 0xFFFFF;
// Experiments the layout can carry (9 bits); a scitag's experiment can be up to 1023.
constexpr int kFlowLabelMaxExperiment = 511;

// The label of flow identifier `scitag` with `entropy`'s 5 low bits as its entropy bits
// (bits 0-1, 8, 18-19, in that order). False when the scitag is outside 65..65535 or its
// experiment does not fit the layout's 9 bits (then the flow goes unlabelled).
bool scitagFlowLabel(int scitag, std::uint32_t entropy, std::uint32_t& label);

// The experiment and activity a label carries (its meaning bits read back).
void flowLabelMeaning(std::uint32_t label, int& experiment, int& activity);

// The `scitag.flow` value of a root:// URL's opaque part (after '?': keys separated by '&'
// or by tabs, as XRootD's tpc.scgi forwards a source's CGI): 0 when there is none, -1 when
// there is one but it is not a decimal within 65..65535.
int scitagFromUrl(const std::string& url);

}  // namespace wanio
