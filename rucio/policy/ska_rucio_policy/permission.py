"""Rucio's generic permissions, unchanged (a policy package must name its permission module)."""

from rucio.core.permission.generic import has_permission

__all__ = ["has_permission"]
