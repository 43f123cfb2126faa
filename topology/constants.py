"""Names and limits shared by the topology models."""

from django.core.validators import RegexValidator

# Site and link names: letters, digits, dot, dash, underscore; start with a letter.
NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9._-]*$"
# Storage endpoint names follow Rucio's RSE naming (upper case), so they can be mirrored as RSEs.
RSE_NAME_PATTERN = r"^[A-Z0-9][A-Z0-9_-]*$"
MAX_RTT_MS = 2000.0
GBIT = 1_000_000_000

name_validator = RegexValidator(NAME_PATTERN, "Use letters, digits, '.', '-' or '_', starting with a letter.")
rse_validator = RegexValidator(
    RSE_NAME_PATTERN, "Use upper-case letters, digits, '-' or '_' (a Rucio RSE name)."
)

# A storage endpoint's host: a DNS name (RFC 1123 labels) or an IPv4 address; nothing that could carry a
# path, credentials or a port into the URLs built from it. (An IPv6 host is reached by its DNS name: the
# URLs are built as scheme://host:port/.)
HOSTNAME_PATTERN = (
    r"^(?=.{1,253}$)(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*"
    r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$"
)
# A storage path prefix: /segment/.../ of letters, digits, '.', '-', '_' (no '.' or '..' segments).
PREFIX_PATTERN = r"^/(?:(?!\.{1,2}/)[A-Za-z0-9._-]+/)*$"
hostname_validator = RegexValidator(HOSTNAME_PATTERN, "Use a DNS host name or an IPv4 address.")
prefix_validator = RegexValidator(
    PREFIX_PATTERN,
    "Use /segment/.../ of letters, digits, '.', '-' or '_', starting and ending with '/', "
    "without '.' or '..'.",
)
