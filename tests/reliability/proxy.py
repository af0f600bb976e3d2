"""A TCP proxy in front of MariaDB that injects faults at exact points of the wire protocol.

Worker processes connect through it (their DATABASE_URL names its port). It forwards bytes
both ways and reads the client's packets, so a test can say: "on the next COMMIT of a
transaction that ran a statement containing X, do Y", where Y happens

- ``before``: the COMMIT never reaches the server (it rolls the transaction back when the
  connection drops), or
- ``ack_lost``: the server commits, but its answer never reaches the client, which sees the
  connection drop in the middle of COMMIT: the outcome is unknown to it, or
- ``after``: the answer is delivered first.

Each fault runs an action (for instance SIGKILL the worker process) and, except ``after``,
cuts the connection. Nothing in the project knows about the proxy: the faults are those of a
real network and a real process death, placed deterministically. The connections are plain
text (MariaDB here runs without TLS); a COM_QUERY packet is ``03`` followed by the SQL text,
with parameters already interpolated by mysqlclient.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

COM_QUERY = 0x03
MODES = ("before", "ack_lost", "after")


@dataclass
class Fault:
    """Fire ``action`` at the COMMIT of a transaction whose statements contained ``marker``."""

    marker: bytes
    mode: str = "ack_lost"
    action: Callable[[], object] | None = None
    #: How many times the fault fires (then it disarms itself).
    shots: int = 1
    #: Set once per firing; tests wait on it.
    fired: threading.Event = field(default_factory=threading.Event)
    fired_count: int = 0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")


class FaultProxy:
    """Listen on a free local port and relay every connection to ``target_port``."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.faults: list[Fault] = []
        self.lock = threading.Lock()
        self.connections = 0
        self.cut = 0
        self._stopping = False
        self._sockets: set[socket.socket] = set()
        self._thread = threading.Thread(target=self._accept, daemon=True, name="fault-proxy")
        self._thread.start()

    def arm(self, fault: Fault) -> Fault:
        with self.lock:
            self.faults.append(fault)
        return fault

    def close(self) -> None:
        self._stopping = True
        self.listener.close()
        with self.lock:
            for sock in list(self._sockets):
                _close(sock)

    def cut_all(self) -> int:
        """Drop every relayed connection at once (a network partition, healed at once)."""
        with self.lock:
            sockets = list(self._sockets)
        for sock in sockets:
            _close(sock)
        return len(sockets) // 2

    def _accept(self) -> None:
        while not self._stopping:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.target, timeout=10)
                server.settimeout(None)
            except OSError:
                _close(client)
                continue
            relay = _Relay(self, client, server)
            with self.lock:
                self.connections += 1
                self._sockets.update((client, server))
            threading.Thread(target=relay.client_to_server, daemon=True).start()
            threading.Thread(target=relay.server_to_client, daemon=True).start()

    def _take(self, statements: list[bytes]) -> Fault | None:
        """Return (and use up one shot of) the first armed fault this transaction matches."""
        with self.lock:
            for fault in self.faults:
                if fault.shots > 0 and any(fault.marker in sql for sql in statements):
                    fault.shots -= 1
                    return fault
        return None

    def _forget(self, *sockets: socket.socket) -> None:
        with self.lock:
            for sock in sockets:
                self._sockets.discard(sock)


class _Relay:
    """One relayed connection: two pumps, the client's statements since the last COMMIT."""

    def __init__(self, proxy: FaultProxy, client: socket.socket, server: socket.socket) -> None:
        self.proxy, self.client, self.server = proxy, client, server
        self.statements: list[bytes] = []
        #: A fault waiting for the server's answer to COMMIT (``ack_lost`` / ``after``).
        self.pending: Fault | None = None
        self.pending_lock = threading.Lock()

    def client_to_server(self) -> None:
        try:
            while packet := _read_packet(self.client):
                if not self._on_client_packet(packet):
                    return
        except OSError:
            pass
        finally:
            self._shutdown()

    def _on_client_packet(self, packet: bytes) -> bool:
        """Relay one packet; return False when a fault cut the connection."""
        payload = packet[4:]
        sql = payload[1:].strip().upper() if payload[:1] == bytes([COM_QUERY]) else b""
        if sql in (b"COMMIT", b"ROLLBACK"):
            statements, self.statements = self.statements, []
            fault = self.proxy._take(statements) if sql == b"COMMIT" else None
            if fault is not None and fault.mode == "before":
                self._fire(fault)
                return False
            if fault is not None:
                with self.pending_lock:
                    self.pending = fault
        elif sql.startswith(b"SET AUTOCOMMIT"):
            self.statements = []  # a transaction begins (or ends): forget autocommit work
        elif sql:
            self.statements.append(payload[1:])
        self.server.sendall(packet)
        return True

    def server_to_client(self) -> None:
        try:
            while packet := _read_packet(self.server):
                with self.pending_lock:
                    fault, self.pending = self.pending, None
                if fault is not None and fault.mode == "ack_lost":
                    self._fire(fault)
                    return
                self.client.sendall(packet)
                if fault is not None:
                    self._fire(fault, cut=False)
        except OSError:
            pass
        finally:
            self._shutdown()

    def _fire(self, fault: Fault, *, cut: bool = True) -> None:
        if fault.action is not None:
            fault.action()
        if cut:
            self._shutdown()
            with self.proxy.lock:
                self.proxy.cut += 1
        fault.fired_count += 1
        fault.fired.set()

    def _shutdown(self) -> None:
        _close(self.client)
        _close(self.server)
        self.proxy._forget(self.client, self.server)


def _read_packet(sock: socket.socket) -> bytes:
    """Read one MySQL packet (4-byte header: 3-byte length, sequence id); b"" at EOF."""
    header = _read_exactly(sock, 4)
    if not header:
        return b""
    (length,) = struct.unpack("<I", header[:3] + b"\0")
    body = _read_exactly(sock, length) if length else b""
    if length and not body:
        return b""
    return header + body


def _read_exactly(sock: socket.socket, count: int) -> bytes:
    chunks, remaining = [], count
    while remaining:
        chunk = sock.recv(min(remaining, 1 << 16))
        if not chunk:
            return b""
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
