"""Personal API tokens as the REST API shows them: never the key, but once, in the answer that made it."""

from __future__ import annotations

from rest_framework import serializers

from ..models import ApiToken, TokenScope


class ApiTokenSerializer(serializers.ModelSerializer):
    user = serializers.CharField(source="user.username", read_only=True)
    revoked_by = serializers.CharField(
        source="revoked_by.username", read_only=True, default=None, allow_null=True
    )
    state = serializers.SerializerMethodField()

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "user",
            "name",
            "scope",
            "prefix",
            "created",
            "expires",
            "last_used",
            "last_used_from",
            "revoked",
            "revoked_by",
            "state",
        ]
        read_only_fields = fields

    def get_state(self, token: ApiToken) -> str:
        from django.utils import timezone

        if token.revoked is not None:
            return "revoked"
        return "expired" if token.expires <= timezone.now() else "live"


class NewApiTokenSerializer(ApiTokenSerializer):
    key = serializers.CharField(read_only=True, help_text="The token itself: shown this once, never again.")

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "key"]
        read_only_fields = fields


class ApiTokenRequestSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    scope = serializers.ChoiceField(choices=TokenScope.choices, default=TokenScope.OPERATE)
    expires_in_days = serializers.IntegerField(required=False, min_value=1)


class SignOnSerializer(serializers.Serializer):
    issuer = serializers.CharField()
    cli_client_id = serializers.CharField()
    audience = serializers.CharField()
    scopes = serializers.ListField(child=serializers.CharField())


class PasswordTokenRequestSerializer(ApiTokenRequestSerializer):
    """``POST /api/token/``: a user name and password for a new token (the bootstrap admin's, and accounts
    with local passwords)."""

    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, style={"input_type": "password"}, trim_whitespace=False)
    name = serializers.CharField(max_length=100, required=False)
