"""Import a topology file into the database in one transaction: all of it, or nothing.

Every error names the line and the field (``line 57, links[3].capacity: ...``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models, transaction

from ..choices import SiteKind
from ..models import (
    Dtn,
    Link,
    NetworkPath,
    PointOfPresence,
    RegionalCentre,
    Site,
    StorageEndpoint,
    Telescope,
    Vrf,
)
from ..yamlio import LinedDict, TopologyFileError, load
from . import fields as F
from .paths import ComputeRule, compute_paths, save_declared_path

SECTIONS = (
    "version",
    "vrfs",
    "telescopes",
    "regional_centres",
    "points_of_presence",
    "storage_endpoints",
    "dtns",
    "links",
    "paths",
)
SITE_SECTIONS: dict[str, tuple[type[Site], dict[str, F.Key]]] = {
    "telescopes": (Telescope, F.TELESCOPE_KEYS),
    "regional_centres": (RegionalCentre, F.CENTRE_KEYS),
    "points_of_presence": (PointOfPresence, F.POP_KEYS),
}


@dataclass
class ImportSummary:
    """What an import changed, per kind of object."""

    created: dict[str, int] = field(default_factory=dict)
    updated: dict[str, int] = field(default_factory=dict)
    paths_computed: int = 0
    warnings: list[str] = field(default_factory=list)

    def count(self, kind: str, created: bool) -> None:
        target = self.created if created else self.updated
        target[kind] = target.get(kind, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "created": self.created,
            "updated": self.updated,
            "paths_computed": self.paths_computed,
            "warnings": self.warnings,
        }


@dataclass(frozen=True)
class Entry:
    """One entry of a section, converted to model field values."""

    section: str
    index: int
    line: int
    values: dict[str, Any]

    def where(self, key: str | None = None) -> str:
        base = f"{self.section}[{self.index}]"
        return f"{base}.{key}" if key else base

    def error(self, message: str, key: str | None = None) -> TopologyFileError:
        return TopologyFileError(message, line=self.line, field=self.where(key))


def import_topology(*, text: str) -> ImportSummary:
    """Parse, validate and write the whole file; raises TopologyFileError and writes nothing on any error."""
    document = load(text)
    if not isinstance(document, LinedDict):
        raise TopologyFileError("the file must be a mapping of sections", line=1)
    for key in document:
        if key not in SECTIONS:
            raise TopologyFileError(
                f"unknown section {key!r} (known: {', '.join(SECTIONS)})", line=document.line, field=str(key)
            )
    if document.get("version") != 1:
        raise TopologyFileError("only version 1 is understood", line=document.line, field="version")
    summary = ImportSummary()
    # Names are unique across a file (sites across their three sections): a second entry of one name
    # would silently overwrite the first.
    site_names: set[str] = set()
    with transaction.atomic():
        _import_vrfs(document, summary)
        for section, (model, keys) in SITE_SECTIONS.items():
            for entry in _entries(document, section, keys, names=site_names):
                _upsert_site(entry, model, keys, summary)
        for entry in _entries(document, "storage_endpoints", F.STORAGE_KEYS, names=set()):
            _upsert_named(entry, StorageEndpoint, F.STORAGE_KEYS, summary, {"site": _site_ref})
        for entry in _entries(document, "dtns", F.DTN_KEYS, names=set()):
            _upsert_named(entry, Dtn, F.DTN_KEYS, summary, {"site": _site_ref})
        for entry in _entries(document, "links", F.LINK_KEYS, names=set()):
            _upsert_link(entry, summary)
        _import_paths(document, summary)
    return summary


def _entries(
    document: Mapping[str, Any],
    section: str,
    keys: dict[str, F.Key],
    label: str | None = None,
    names: set[str] | None = None,
) -> Iterator[Entry]:
    items = document.get(section) or []
    line = getattr(document, "line", None)
    if not isinstance(items, list):
        raise TopologyFileError("expected a list", line=line, field=label or section)
    for index, raw in enumerate(items):
        if not isinstance(raw, LinedDict):
            raise TopologyFileError("expected a mapping", line=line, field=f"{label or section}[{index}]")
        entry = Entry(label or section, index, raw.line, {})
        for key in raw:
            if key not in keys:
                raise entry.error(f"unknown key (known: {', '.join(keys)})", str(key))
        for key, spec in keys.items():
            if key not in raw or raw[key] is None:
                if spec.required:
                    raise entry.error("is required", key)
                continue
            try:
                entry.values[spec.field] = spec.convert(raw[key])
            except ValueError as exc:
                raise entry.error(str(exc), key) from exc
        name = raw.get("name")
        if names is not None and isinstance(name, str):
            if name in names:
                raise entry.error(f"duplicate name {name[:80]!r}: another entry of this file has it", "name")
            names.add(name)
        yield entry


def _key_for(field_name: str, keys: dict[str, F.Key]) -> str:
    return next((key for key, spec in keys.items() if spec.field == field_name), field_name)


def _validate(entry: Entry, instance: models.Model, keys: dict[str, F.Key]) -> None:
    try:
        instance.full_clean()
    except ValidationError as exc:
        field_name, messages = next(iter(exc.message_dict.items()))
        key = None if field_name == "__all__" else _key_for(field_name, keys)
        raise entry.error(" ".join(messages), key) from exc


def _site_ref(entry: Entry, field_name: str, value: str) -> Site:
    site = Site.objects.filter(name=value).first()
    if site is None:
        raise entry.error(f"no site named {value!r}", _key_for(field_name, {**F.STORAGE_KEYS, **F.LINK_KEYS}))
    return site


def _vrf_ref(entry: Entry, field_name: str, value: str) -> Vrf:
    vrf = Vrf.objects.filter(name=value).first()
    if vrf is None:
        raise entry.error(
            f"no VRF named {value!r}", field_name if field_name in ("parent", "vrfs") else "vrf"
        )
    return vrf


def _assign(
    entry: Entry, instance: models.Model, resolvers: dict[str, Any], skip: tuple[str, ...] = ()
) -> None:
    for field_name, value in entry.values.items():
        if field_name in skip:
            continue
        if field_name in resolvers:
            value = resolvers[field_name](entry, field_name, value)
        setattr(instance, field_name, value)


def _upsert_named(
    entry: Entry,
    model: type[models.Model],
    keys: dict[str, F.Key],
    summary: ImportSummary,
    resolvers: dict[str, Any],
    skip: tuple[str, ...] = (),
) -> models.Model:
    instance = model._default_manager.filter(name=entry.values["name"]).first()
    created = instance is None
    if created:
        instance = model()
    assert instance is not None
    _assign(entry, instance, resolvers, skip)
    _validate(entry, instance, keys)
    instance.save()
    summary.count(str(model._meta.model_name), created)
    return instance


def _import_vrfs(document: Mapping[str, Any], summary: ImportSummary) -> None:
    entries = list(_entries(document, "vrfs", F.VRF_KEYS, names=set()))
    # Parents may come later in the file: create every VRF first, then link and validate them.
    for entry in entries:
        _upsert_named(entry, Vrf, F.VRF_KEYS, summary, {}, skip=("parent",))
    for entry in entries:
        vrf = Vrf.objects.get(name=entry.values["name"])
        parent = entry.values.get("parent")
        vrf.parent = _vrf_ref(entry, "parent", parent) if parent else None
        _validate(entry, vrf, F.VRF_KEYS)
        vrf.save()


def _upsert_site(entry: Entry, model: type[Site], keys: dict[str, F.Key], summary: ImportSummary) -> None:
    existing = Site.objects.filter(name=entry.values["name"]).first()
    if existing is not None and not model.objects.filter(pk=existing.pk).exists():
        raise entry.error(
            f"a site named {existing.name!r} already exists as a {existing.get_kind_display()}", "name"
        )
    _upsert_named(entry, model, keys, summary, {"vrf": _vrf_ref})


def _upsert_link(entry: Entry, summary: ImportSummary) -> None:
    link = _upsert_named(
        entry, Link, F.LINK_KEYS, summary, {"a_end": _site_ref, "b_end": _site_ref}, skip=("vrfs",)
    )
    assert isinstance(link, Link)
    link.vrfs.set([_vrf_ref(entry, "vrfs", name) for name in entry.values.get("vrfs", [])])


def _import_paths(document: Mapping[str, Any], summary: ImportSummary) -> None:
    section = document.get("paths") or {}
    if not isinstance(section, LinedDict):
        raise TopologyFileError("expected a mapping with 'compute' and 'declared'", field="paths")
    for key in section:
        if key not in ("compute", "declared"):
            raise TopologyFileError(
                "unknown key (known: compute, declared)", line=section.line, field=f"paths.{key}"
            )
    rules = []
    kinds = set(SiteKind.values)
    for entry in _entries(section, "compute", F.COMPUTE_RULE_KEYS, "paths.compute"):
        for key in ("from", "to"):
            unknown = set(entry.values[key]) - kinds
            if unknown:
                raise entry.error(
                    f"unknown site kind {sorted(unknown)[0]!r} (known: {', '.join(sorted(kinds))})", key
                )
        rules.append(ComputeRule(sources=tuple(entry.values["from"]), destinations=tuple(entry.values["to"])))
    result = compute_paths(rules)
    summary.paths_computed = result.created
    summary.warnings.extend(result.unreachable)
    for entry in _entries(section, "declared", F.DECLARED_PATH_KEYS, "paths.declared"):
        values = entry.values
        try:
            created = save_declared_path(
                name=values["name"],
                source=values["source"],
                destination=values["destination"],
                link_names=values["links"],
                vrf=values.get("vrf"),
            )
        except ValidationError as exc:
            field_name, messages = next(iter(exc.message_dict.items()))
            raise entry.error(" ".join(messages), None if field_name == "__all__" else field_name) from exc
        summary.count("declared_paths", created)


__all__ = ["ImportSummary", "NetworkPath", "TopologyFileError", "import_topology"]
