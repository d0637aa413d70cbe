"""Checks on what a user hands in, applied where it enters: text that Ansible would template, rating
ids, and YAML files (inventories, nightly configurations).

Ansible templates every string of its extra-vars: a Params value or a flag holding ``{{ ... }}``
would be evaluated by a root playbook (``lookup("pipe", ...)`` runs a command), so `refuse_template`
refuses the three Jinja markers in every string a user types. Inventories and roles are the
operator's and keep their templates; they are read with `load_yaml`, which bounds the file and
refuses YAML aliases and anchors (a 2 KB file of nested aliases expands to billions of nodes for
any walk of the result) and deep nesting.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

UNSAFE_ID_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
MAX_RATING_ID = 128  # store keys, log and lease file names stay well under NAME_MAX (255)
TEMPLATE_MARKERS = ("{{", "{%", "{#")
MAX_YAML_BYTES = 1 << 20
MAX_YAML_DEPTH = 64


def refuse_template(name: str, value: Any) -> None:
    """ValueError naming `name` when `value` (a string, or strings inside lists and mappings)
    holds a Jinja marker Ansible would evaluate."""
    if isinstance(value, str):
        hit = next((m for m in TEMPLATE_MARKERS if m in value), None)
        if hit:
            raise ValueError(
                f"{name}: {value[:60]!r} holds {hit!r}, which Ansible would evaluate as a "
                f"template; plain text only"
            )
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            refuse_template(f"{name}[{i}]", v)
    elif isinstance(value, dict):
        for k, v in value.items():
            refuse_template(f"{name}.{k}", v)


def check_rating_id(rating_id: Any, name: str = "rating_id") -> None:
    """A store-safe rating id: 1 to MAX_RATING_ID letters, digits, '.', '_' and '-', not "." or
    ".."; ValueError naming `name`, the word the user typed (the CLI's rating id is its --results
    name)."""
    if not isinstance(rating_id, str) or not rating_id or rating_id in (".", ".."):
        raise ValueError(
            f"{name}: {rating_id!r} is not a rating id; 1 to {MAX_RATING_ID} letters, digits, "
            f"'.', '_' and '-'"
        )
    if len(rating_id) > MAX_RATING_ID:
        raise ValueError(
            f"{name}: the rating id {rating_id[:24]}… is {len(rating_id)} characters long; at "
            f"most {MAX_RATING_ID}"
        )
    bad = UNSAFE_ID_CHARS.search(rating_id)
    if bad:
        raise ValueError(
            f"{name}: the rating id {rating_id!r} holds {bad.group(0)!r}; only letters, digits, "
            f"'.', '_' and '-'"
        )


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases and anchors and nesting deeper than MAX_YAML_DEPTH."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            kind = "alias *" if isinstance(event, yaml.AliasEvent) else "anchor &"
            raise yaml.composer.ComposerError(
                None,
                None,
                f"found {kind}{event.anchor}: YAML aliases and "
                f"anchors are not allowed; write the values out",
                event.start_mark,
            )
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_YAML_DEPTH} levels", event.start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def unknown_keys(data: Mapping[Any, Any], known: Iterable[str]) -> str | None:
    """ "unknown key(s) a, b; known: x, y" for the keys of a user's mapping outside `known`, else
    None (the caller names the file or field it read)."""
    known = list(known)
    unknown = sorted(map(str, set(data) - set(known)))
    if not unknown:
        return None
    return f"unknown key(s) {', '.join(unknown)}; known: {', '.join(known)}"


def load_yaml(text: str | bytes, max_bytes: int = MAX_YAML_BYTES) -> Any:
    """The YAML document of `text` (safe types only), or yaml.YAMLError: more than `max_bytes`,
    an alias or anchor, or nesting beyond MAX_YAML_DEPTH."""
    if len(text) > max_bytes:
        raise yaml.YAMLError(f"{len(text)} bytes; at most {max_bytes}")
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


MAX_RESULTS_PATH = 1024  # the runner's artifacts nest ~200 characters deeper; PATH_MAX is 4096


def check_results_path(text: Any, flag: str = "--results") -> None:
    """A results directory the user typed: not empty, one line, at most MAX_RESULTS_PATH characters,
    no template marker, its last part a rating id (check_rating_id). ValueError naming `flag`."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(
            f"{flag}: {text!r} is empty; give a directory (or leave the flag out for "
            f"results/<time>-<workload>-<slot>)"
        )
    if any(ord(c) < 32 for c in text) or len(text) > MAX_RESULTS_PATH:
        raise ValueError(
            f"{flag}: {text[:40]!r}… ({len(text)} characters) is not allowed; a path of one line, "
            f"at most {MAX_RESULTS_PATH} characters"
        )
    refuse_template(flag, text)  # its files' paths are extra-vars of the playbooks
    name = text.rstrip("/").rsplit("/", 1)[-1]
    check_rating_id(name, flag)
