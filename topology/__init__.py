"""The network model: telescopes, SRCs, storage endpoints, DTNs, links, VRFs and paths."""
