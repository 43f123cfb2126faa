"""RSE expressions as Rucio writes them, evaluated against the storage the platform knows (pure: no Django).

A scientist's rule names its destinations with an expression: an RSE name (``AUSRC_DISK``), an attribute
test (``country=AU``, ``site=UKSRC``, ``region=europe``), ``*`` (every RSE), combined with ``|`` (union),
``&`` (intersection) and ``\\`` (difference), left to right, with parentheses. The same text means the same
set here as in Rucio because the Rucio adapter gives every RSE exactly these attributes
(``RucioAdapter.sync_endpoint``). The platform evaluates it itself, so an expression that names storage it
does not know, or matches nothing, is refused before anything is created, in Rucio mode too."""

from __future__ import annotations

import re
from collections.abc import Mapping

MAX_LENGTH = 500
_TOKEN = re.compile(r"\s*(?:(?P<op>[|&\\()])|(?P<term>[A-Za-z0-9_.:*=-]+))")
_ATTRIBUTE = re.compile(r"^(?P<key>[A-Za-z0-9_]+)=(?P<value>[A-Za-z0-9_.:-]+)$")
_NAME = re.compile(r"^[A-Z0-9]+([_-][A-Z0-9]+)*$")


class ExpressionError(ValueError):
    """The expression cannot be read (the message says where), or names an attribute no RSE has."""


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise ExpressionError(f"unexpected {text[pos:].lstrip()[:20]!r} at character {pos + 1}")
        out.append(match.group("op") or match.group("term"))
        pos = match.end()
    return out


def evaluate(text: str, rses: Mapping[str, Mapping[str, str]]) -> set[str]:
    """The names of the RSEs in ``rses`` (name -> attributes) that ``text`` selects."""
    if not text or not text.strip():
        raise ExpressionError("the expression is empty")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"the expression is longer than {MAX_LENGTH} characters")
    tokens = _tokens(text)
    keys = {key for attrs in rses.values() for key in attrs}
    pos = 0

    def term() -> set[str]:
        nonlocal pos
        if pos >= len(tokens):
            raise ExpressionError("the expression ends where an RSE or attribute was expected")
        token = tokens[pos]
        pos += 1
        if token == "(":
            inner = union()
            if pos >= len(tokens) or tokens[pos] != ")":
                raise ExpressionError("a '(' is not closed")
            pos += 1
            return inner
        if token == "*":
            return set(rses)
        attribute = _ATTRIBUTE.match(token)
        if attribute:
            key, value = attribute.group("key"), attribute.group("value")
            if key not in keys:
                raise ExpressionError(f"no RSE has the attribute {key!r} (known: {', '.join(sorted(keys))})")
            return {name for name, attrs in rses.items() if str(attrs.get(key)) == value}
        if token in "|&\\)" or not _NAME.match(token):
            raise ExpressionError(f"{token!r} is not an RSE name (upper-case letters and digits, _ or -)")
        return {token} if token in rses else set()

    def union() -> set[str]:
        nonlocal pos
        result = term()
        while pos < len(tokens) and tokens[pos] in "|&\\":
            op = tokens[pos]
            pos += 1
            right = term()
            result = result | right if op == "|" else result & right if op == "&" else result - right
        return result

    result = union()
    if pos != len(tokens):
        raise ExpressionError(f"unexpected {tokens[pos]!r} after a complete expression")
    return result
