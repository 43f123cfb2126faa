"""Data products, their replicas and the policies that place them."""
