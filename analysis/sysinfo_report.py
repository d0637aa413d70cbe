"""The System section of a rating report: the server host's system and the server's settings, or
an external server as its client saw it (`fstress probe`) and as the user described it, and the
NFSv4.1 session the server granted (sysinfo.json)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analysis.html_page import e, fmt_dict, kv, num, table

NFS4_SESSION_KEYS = (
    "max_slots",
    "max_request_size",
    "max_response_size",
    "max_response_size_cached",
    "max_operations",
    "lease_time_s",
    "impl_name",
    "impl_domain",
)


def _nfs4_html(probe: Mapping[str, Any]) -> str:
    """The NFSv4.1 session the server granted the probe (`fstress probe --nfs-version 4.1`): its
    slot table and request / response sizes (bytes), lease time; "" without one."""
    nfs4 = probe.get("nfs4") or {}
    if not nfs4:
        return ""
    return f"<h3>NFSv{e(probe.get('nfs_version', '4.1'))} session the server granted</h3>" + kv(
        (k, nfs4[k]) for k in NFS4_SESSION_KEYS if nfs4.get(k) not in (None, "")
    )


def _external_html(sysinfo: Mapping[str, Any]) -> str:
    """An external server as its client saw it (`fstress probe`) and as the user described it."""
    server, probe = sysinfo.get("server") or {}, sysinfo.get("probe") or {}
    ep = server.get("endpoint") or {}
    rtt = probe.get("rtt_us") or {}
    pairs = [
        ("external server", server.get("description") or "(no description)"),
        ("endpoint", f"{ep.get('address')}:{ep.get('export')}"),
        ("NFS port", f"{ep.get('nfs_port')} ({probe.get('nfs_port_from', 'given')})"),
        ("MOUNT port", f"{ep.get('mount_port')} ({probe.get('mount_port_from', 'given')})"),
        (
            "NULL round trip",
            f"median {num(rtt.get('median'))} µs, p90 {num(rtt.get('p90'))} µs "
            f"over {rtt.get('n', '?')} calls"
            if rtt
            else None,
        ),
    ]
    out = [kv((k, v) for k, v in pairs if v is not None)]
    programs = probe.get("rpc_programs") or []
    if programs:
        out.append(
            "<h3>RPC programs (portmapper)</h3>"
            + table(
                ["program", "name", "version", "protocol", "port"],
                [
                    [
                        p.get("program"),
                        p.get("name"),
                        p.get("version"),
                        p.get("protocol"),
                        p.get("port"),
                    ]
                    for p in programs
                ],
            )
        )
    elif probe.get("rpc_programs_error"):
        out.append(f'<p class="muted">portmapper: {e(probe["rpc_programs_error"])}</p>')
    for name in ("fsinfo", "fsstat", "pathconf"):
        if probe.get(name):
            out.append(f"<h3>{name.upper()} of the export</h3>" + kv(sorted(probe[name].items())))
    out.append(_nfs4_html(probe))
    return "".join(out)


def sysinfo_html(sysinfo: Mapping[str, Any] | None) -> str:
    if not sysinfo:
        return '<p class="muted">no system information recorded</p>'
    if sysinfo.get("mode") == "external":
        return _external_html(sysinfo)
    system = sysinfo.get("system") or {}
    server = sysinfo.get("server") or {}
    kernel = system.get("kernel") or {}
    cpu = system.get("cpu") or {}
    pairs = [
        ("host", sysinfo.get("host")),
        ("address", (sysinfo.get("network") or {}).get("address")),
        ("hostname", system.get("hostname")),
        ("os", (system.get("os") or {}).get("pretty_name")),
        ("kernel", " ".join(str(kernel.get(k, "")) for k in ("release", "machine")).strip()),
        ("cpu", f"{cpu.get('count', '?')} × {cpu.get('model', '?')}" if cpu else None),
        ("memory", f"{system['memory_kb'] / 1048576:.1f} GiB" if system.get("memory_kb") else None),
        ("packages", fmt_dict(system.get("packages"))),
    ]
    out = [kv((k, v) for k, v in pairs if v)]
    settings = server.get("settings") or {}
    if settings:
        out.append("<h3>Server settings</h3>" + kv(sorted(settings.items())))
    out.append(_nfs4_html(sysinfo.get("probe") or {}))
    if server.get("config"):
        out.append(
            f"<details><summary>server config ({e(server.get('config_file', ''))})</summary>"
            f"<pre>{e(server['config'])}</pre></details>"
        )
    return "".join(out)
