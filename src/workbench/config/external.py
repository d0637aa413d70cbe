"""An external server: an NFS export Workbench rates but does not provision (a filer, a box someone
else runs). The user gives its endpoint and a description; every server factor is refused, since
nothing of the server is Workbench's to set — but nfs_version, the protocol the load hosts speak to
it (over NFSv4.1 no portmapper and no MOUNT: port 2049 unless given, the export is its pseudo path).
Client-side settings — workload, rate, runlength, the load hosts — are not factors and still apply.

The Params form, the CLI, map_surface's sweep file and the nightly baselines all name the endpoint
with the words of ``EXTERNAL_PARAMS``; `external_server` checks them once for all of them.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from workbench.config.factors import BY_NAME, check_factor

_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
_EXPORT = re.compile(r"^/[A-Za-z0-9._/+:@=,-]{0,1023}$")
DESCRIPTION_MAX_CHARS = 500

# Param / CLI word → (ExternalServer field, help). The CLI flag is --<word with dashes>.
EXTERNAL_PARAMS: dict[str, tuple[str, str]] = {
    "server_address": (
        "address",
        "external server: its address (IP or host name); empty = the slot's own SUT",
    ),
    "server_export": ("export", "external server: the exported path (e.g. /export)"),
    "server_nfs_port": (
        "nfs_port",
        "external server: NFS port (empty = ask its portmapper; NFSv4.1: 2049)",
    ),
    "server_mount_port": (
        "mount_port",
        "external server: MOUNT port (empty = ask its portmapper; none over NFSv4.1)",
    ),
    "server_description": (
        "description",
        "external server: what it is, in your words (for the report)",
    ),
}


@dataclass(frozen=True)
class ExternalServer:
    address: str
    export: str
    nfs_port: int = 0  # 0 = ask the server's portmapper (NFSv4.1: 2049)
    mount_port: int = 0  # 0 = ask the server's portmapper
    description: str = ""

    def endpoint(self) -> dict[str, Any]:
        """The fstress role's `fstress_endpoint`."""
        return {
            "address": self.address,
            "nfs_port": self.nfs_port,
            "mount_port": self.mount_port,
            "export": self.export,
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _port(name: str, value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise ValueError(
            f"{name} must be a port number 1..65535 (or empty: ask the portmapper), got {value!r}"
        )
    return value


def _address(value: Any) -> str:
    text = str(value).strip()
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        pass
    if not _HOSTNAME.match(text):
        raise ValueError(f"server_address must be an IP address or a host name, got {value!r}")
    return text


def external_server(params: Mapping[str, Any]) -> ExternalServer | None:
    """The external server the words of EXTERNAL_PARAMS name in `params`; None when
    server_address is empty (the slot's own SUT). ValueError names the bad word."""
    given = {k: params.get(k) for k in EXTERNAL_PARAMS if params.get(k) not in (None, "")}
    if "server_address" not in given:
        if given:
            raise ValueError(
                f"{', '.join(sorted(given))}: only with server_address (an external server)"
            )
        return None
    export = str(given.get("server_export") or "")
    if not _EXPORT.match(export):
        raise ValueError(
            f"server_export must be an absolute path (e.g. /export), got {export or '(empty)'!r}"
        )
    description = str(given.get("server_description") or "").strip()
    if len(description) > DESCRIPTION_MAX_CHARS or any(ord(c) < 32 for c in description):
        raise ValueError(
            f"server_description must be one line of at most {DESCRIPTION_MAX_CHARS} characters"
        )
    return ExternalServer(
        address=_address(given["server_address"]),
        export=export,
        nfs_port=_port("server_nfs_port", given.get("server_nfs_port")),
        mount_port=_port("server_mount_port", given.get("server_mount_port")),
        description=description,
    )


def external_text(external: Mapping[str, Any]) -> str:
    """An external server for a person: "external server ADDRESS:EXPORT (description)"."""
    desc = external.get("description")
    return f"external server {external['address']}:{external['export']}" + (
        f" ({desc})" if desc else ""
    )


def server_key(external: Mapping[str, Any] | None) -> str:
    """Which server a rating measured, for its history: "" = a slot's own SUT (its factors say which
    configuration), else the external endpoint "address:export"."""
    return f"{external['address']}:{external['export']}" if external else ""


def refuse_server_factors(chosen: Mapping[str, Any]) -> None:
    """ValueError naming every server factor in `chosen` (not None) but those the load hosts apply
    (nfs_version): none applies to an external server, which Workbench neither provisions nor
    configures."""
    bad = {
        k: v
        for k, v in chosen.items()
        if v is not None and k in BY_NAME and not BY_NAME[k].external
    }
    if bad:
        named = ", ".join(f"{k}={v}" for k, v in sorted(bad.items()))
        raise ValueError(
            f"server factor(s) {named} cannot apply to an external server (Workbench does not "
            f"provision or configure it); workload, rate, runlength and load hosts still apply"
        )


def external_factors(server: ExternalServer, chosen: Mapping[str, Any]) -> dict[str, Any]:
    """The factors of `chosen` (not None) that apply to the external `server` (nfs_version),
    checked; ValueError naming a server factor (refuse_server_factors) or a MOUNT port given for
    NFSv4.1."""
    refuse_server_factors(chosen)
    out = {k: check_factor(k, v) for k, v in chosen.items() if v is not None}
    if out.get("nfs_version", BY_NAME["nfs_version"].default) != "3" and server.mount_port:
        raise ValueError(
            f"server_mount_port: NFSv{out['nfs_version']} has no MOUNT protocol (the export is the "
            f"server's pseudo path); leave it empty, got {server.mount_port}"
        )
    return out
