#include "FlowLabel.hh"

#include <cstddef>

namespace wanio {

namespace {

// The low `bits` bits of `value`, in reverse order.
std::uint32_t reversed(std::uint32_t value, int bits) {
    std::uint32_t out = 0;
    for (int i = 0; i < bits; ++i) out |= ((value >> i) & 1u) << (bits - 1 - i);
    return out;
}

// Entropy bit i (0..4) goes to label bit kEntropyBits[i].
constexpr int kEntropyBits[5] = {0, 1, 8, 18, 19};

}  // namespace

bool scitagFlowLabel(int scitag, std::uint32_t entropy, std::uint32_t& label) {
    if (scitag < 65 || scitag > 65535) return false;
    const std::uint32_t experiment = static_cast<std::uint32_t>(scitag) >> 6;
    const std::uint32_t activity = static_cast<std::uint32_t>(scitag) & 0x3F;
    if (experiment > static_cast<std::uint32_t>(kFlowLabelMaxExperiment)) return false;
    std::uint32_t out = reversed(experiment, 9) << 9 | activity << 2;
    for (int i = 0; i < 5; ++i) out |= ((entropy >> i) & 1u) << kEntropyBits[i];
    label = out & kFlowLabelMask;
    return true;
}

void flowLabelMeaning(std::uint32_t label, int& experiment, int& activity) {
    experiment = static_cast<int>(reversed((label >> 9) & 0x1FF, 9));
    activity = static_cast<int>((label >> 2) & 0x3F);
}

int scitagFromUrl(const std::string& url) {
    const std::size_t quest = url.find('?');
    if (quest == std::string::npos) return 0;
    static const std::string key = "scitag.flow=";
    std::size_t at = quest + 1;
    while (at < url.size()) {
        std::size_t end = url.find_first_of("&\t", at);
        if (end == std::string::npos) end = url.size();
        if (url.compare(at, key.size(), key) == 0 && at + key.size() <= end) {
            const std::size_t first = at + key.size();
            if (first == end || end - first > 5) return -1;
            int value = 0;
            for (std::size_t i = first; i < end; ++i) {
                if (url[i] < '0' || url[i] > '9') return -1;
                value = value * 10 + (url[i] - '0');
            }
            return value >= 65 && value <= 65535 ? value : -1;
        }
        at = end + 1;
    }
    return 0;
}

}  // namespace wanio
