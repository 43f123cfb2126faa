"""One error shape for the whole API: model validation errors become HTTP 400 naming the field."""

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):  # type: ignore[no-untyped-def]
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        exc = exceptions.ValidationError(detail=detail)
    return drf_exception_handler(exc, context)


def error_response(detail: dict, status: int = 400) -> Response:
    return Response(detail, status=status)
