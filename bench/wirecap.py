#!/usr/bin/env python3
"""Each NFS call's times on the wire of one network namespace: an oracle for the latency split.

    ip netns exec wb-sut1 python3 bench/wirecap.py --out /tmp/sut.json --seconds 60 [--port 2049]

Opens an AF_PACKET socket (every interface of the namespace but lo, both directions, kernel
receive timestamps by SO_TIMESTAMPNS), follows each TCP connection to --port by sequence number,
cuts its byte stream into RPC records (RFC 5531 §11 record marking: a 4-byte marker, top bit = last
fragment, low 31 bits = fragment length) and notes per record the time of its first and of its last
byte on this namespace's wire, its XID and, for a call, its procedure. Joins a connection already
running at the first segment that starts with a record (a call: message type 0, RPC version 2,
program 100003; a reply: message type 1, accepted, a verifier flavor ≤ 6); a gap in the sequence
(a dropped segment) loses sync until the next such segment. Ends at --seconds or SIGTERM and writes
{"records": [[conn, dir, xid, proc, t_first, t_last, length], ...], "stats": {...}} (dir "c" = to
the port, "s" = from it; proc −1 for replies; times in ns since the epoch, CLOCK_REALTIME: the same
clock in every namespace of the host). Standard library only; runs as root.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import struct
import time

ETH_P_ALL = 0x0003
SO_TIMESTAMPNS = 35
SOL_PACKET = 263
PACKET_STATISTICS = 6
NFS_PROGRAM = 100003
RECORD_MAX = 4 << 20  # a marker announcing more than this is not one (desync)
HEAD = 20  # xid, type, then (call) rpcvers, prog, vers — the proc is at 20..24


def record_start(data: bytes, to_port: bool) -> bool:
    """Does `data` begin with a record marker and an RPC header of this direction's kind?"""
    if len(data) < 24:
        return False
    mark, _xid, mtype, a, b, c = struct.unpack_from(">IIIIII", data)
    if not mark >> 31 or not 12 <= mark & 0x7FFFFFFF <= RECORD_MAX:
        return False
    if to_port:
        return mtype == 0 and a == 2 and b == NFS_PROGRAM
    return mtype == 1 and a == 0 and b <= 6  # MSG_ACCEPTED, verifier flavor AUTH_NONE..RPCSEC_GSS


class Stream:
    """One direction of one TCP connection, cut into RPC records."""

    def __init__(self) -> None:
        self.next_seq: int | None = None  # None: not in sync
        self.mark = b""  # marker bytes read so far
        self.frag_left = 0  # body bytes left in the current fragment
        self.last = False
        self.head = b""  # the record's first HEAD + 4 bytes
        self.length = 0
        self.t_first = 0
        self.open = False

    def feed(self, seq: int, data: memoryview, t_ns: int, to_port: bool, emit) -> bool:
        """Take one segment's payload; False when it broke sync (a gap)."""
        if self.next_seq is not None and seq != self.next_seq:
            if (self.next_seq - seq) % (1 << 32) < len(data):  # a retransmission overlapping
                data = data[(self.next_seq - seq) % (1 << 32) :]
            elif (self.next_seq - seq) % (1 << 32) < (1 << 31):
                return True  # wholly old
            else:
                self.__init__()  # type: ignore[misc]  # a gap: lost bytes
                return False
        if self.next_seq is None:
            if not record_start(bytes(data[:24]), to_port):
                return True
        self.next_seq = (seq + len(data)) % (1 << 32)
        self._cut(data, t_ns, emit)
        return True

    def _cut(self, data: memoryview, t_ns: int, emit) -> None:
        i, n = 0, len(data)
        while i < n:
            if self.frag_left == 0 and len(self.mark) < 4:
                if not self.open:
                    self.open, self.t_first, self.length = True, t_ns, 0
                take = min(4 - len(self.mark), n - i)
                self.mark += bytes(data[i : i + take])
                i += take
                if len(self.mark) == 4:
                    (m,) = struct.unpack(">I", self.mark)
                    self.frag_left, self.last = m & 0x7FFFFFFF, bool(m >> 31)
                    self.length += self.frag_left
                    if self.frag_left > RECORD_MAX:
                        self.__init__()  # type: ignore[misc]
                        return
                    self.mark = b"" if self.frag_left else self.mark
                continue
            take = min(self.frag_left, n - i)
            if len(self.head) < HEAD + 4:
                self.head += bytes(data[i : i + min(take, HEAD + 4 - len(self.head))])
            i += take
            self.frag_left -= take
            if self.frag_left == 0:
                self.mark = b""
                if self.last:
                    emit(self.head, self.t_first, t_ns, self.length)
                    self.open, self.head = False, b""


def ts_ns(ancdata) -> int:
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", payload[:16])
            return sec * 1_000_000_000 + nsec
    return time.time_ns()


def capture(port: int, seconds: float) -> dict:
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.setsockopt(socket.SOL_SOCKET, 33, 256 << 20)  # SO_RCVBUFFORCE: root may exceed rmem_max
    sock.settimeout(0.2)
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    streams: dict[tuple, Stream] = {}
    records: list[list] = []
    counts = {"packets": 0, "segments": 0, "desyncs": 0, "not_ipv4": 0}
    buf = bytearray(1 << 18)
    end = time.monotonic() + seconds
    while not stop["now"] and time.monotonic() < end:
        try:
            n, anc, _flags, addr = sock.recvmsg_into([buf], socket.CMSG_SPACE(16))
        except (TimeoutError, InterruptedError):
            continue
        if addr[0] == "lo":
            continue
        counts["packets"] += 1
        seg = parse(memoryview(buf)[:n], port)
        if seg is None:
            continue
        conn, to_port, seq, payload = seg
        counts["segments"] += 1
        key = (conn, to_port)
        stream = streams.setdefault(key, Stream())
        t = ts_ns(anc)

        def emit(head: bytes, t0: int, t1: int, length: int, conn=conn, to_port=to_port) -> None:
            xid = struct.unpack_from(">I", head, 0)[0] if len(head) >= 4 else -1
            proc = struct.unpack_from(">I", head, HEAD)[0] if to_port and len(head) >= 24 else -1
            records.append([conn, "c" if to_port else "s", xid, proc, t0, t1, length])

        if not stream.feed(seq, payload, t, to_port, emit):
            counts["desyncs"] += 1
    st = sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
    counts["kernel_packets"], counts["kernel_drops"] = struct.unpack("II", st)
    return {"records": records, "stats": counts}


def parse(frame: memoryview, port: int):
    """(conn "addr:port", to_port, seq, TCP payload) of an IPv4 TCP segment with a payload to or
    from `port`, else None."""
    if len(frame) < 54 or frame[12:14] != b"\x08\x00":
        return None
    ip = frame[14:]
    ihl, total, proto = (ip[0] & 0x0F) * 4, struct.unpack_from(">H", ip, 2)[0], ip[9]
    if proto != 6:
        return None
    tcp = ip[ihl:]
    sport, dport, seq = struct.unpack_from(">HHI", tcp, 0)
    doff = (tcp[12] >> 4) * 4
    payload = tcp[doff : max(doff, min(len(tcp), total - ihl))]
    if not len(payload) or port not in (sport, dport):
        return None
    to_port = dport == port
    src = socket.inet_ntoa(bytes(ip[12:16])) if to_port else socket.inet_ntoa(bytes(ip[16:20]))
    conn = f"{src}:{sport if to_port else dport}"
    return conn, to_port, seq, payload


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, required=True, help="at most this long (1–3600)")
    ap.add_argument("--port", type=int, default=2049)
    a = ap.parse_args()
    if not 1 <= a.seconds <= 3600:
        ap.error("--seconds must be 1–3600")
    out = capture(a.port, a.seconds)
    with open(a.out, "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
