"""The TCP addresses a process listens on (Linux's /proc), for the tests that check a server
binds to loopback only."""

from __future__ import annotations

import os


def listening(pid: int) -> list[str]:
    """The local addresses (hex, as /proc/net/tcp{,6} write them) of ``pid``'s listening TCP
    sockets."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    out = []
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as f:
            next(f)
            for line in f:
                parts = line.split()
                if parts[3] == "0A" and parts[9] in inodes:      # 0A: LISTEN
                    out.append(parts[1].rsplit(":", 1)[0])
    return out


def is_loopback(hex_addr: str) -> bool:
    """127.0.0.0/8, ::1 or ::ffff:127.x.x.x, as /proc writes them (32-bit words, little-endian)."""
    if len(hex_addr) == 8:
        return hex_addr.endswith("7F")
    return (hex_addr == "00000000000000000000000001000000"
            or (hex_addr.startswith("0000000000000000FFFF0000") and hex_addr.endswith("7F")))


def jvm_pid(spark) -> int:
    """The pid of the JVM PySpark launched for ``spark``."""
    return spark.sparkContext._gateway.proc.pid
