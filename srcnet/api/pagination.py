"""Limit/offset pagination with a bounded page size."""

from rest_framework import pagination


class LimitOffsetPagination(pagination.LimitOffsetPagination):
    default_limit = 50
    max_limit = 1000
