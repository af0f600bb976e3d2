"""A broker that stops answering: a TCP proxy that can go silent, or a port that never speaks.

A broker process stopped with SIGSTOP, a host behind a firewall that drops packets, or a
load balancer whose backend hangs all look the same to a client: its connection is accepted,
its bytes are taken, and no answer ever comes. ``StallingProxy(target)`` forwards both ways to
``target`` (a shared broker, which is never touched) until ``freeze()``; ``StallingProxy()``
is silent from the start. Once silent it reads and keeps what clients send, so a test can wait
until a client wrote something it now waits an answer for.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time


class StallingProxy:
    """Listen on 127.0.0.1:<free port>; forward to ``target`` until frozen (None: never)."""

    def __init__(self, target: tuple[str, int] | None = None) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.setblocking(False)
        self.port: int = self.listener.getsockname()[1]
        self.accepted = 0
        #: What clients sent since the proxy went silent (forwarded nothing of it).
        self.held = bytearray()
        self._frozen = target is None
        self._peers: dict[socket.socket, socket.socket | None] = {}
        self._clients: set[socket.socket] = set()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.listener, selectors.EVENT_READ)
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name="stalling-proxy", daemon=True)
        self._thread.start()

    def url(self, scheme: str, path: str = "") -> str:
        return f"{scheme}://127.0.0.1:{self.port}/{path}"

    def freeze(self) -> None:
        """Stop answering: keep every connection open, forward nothing more either way."""
        with self._lock:
            self._frozen = True

    def heard(self, data: bytes) -> bool:
        """Whether a client sent ``data`` since the proxy went silent."""
        with self._lock:
            return data in self.held

    def wait_heard(self, data: bytes, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.heard(data):
            if time.monotonic() > deadline:
                raise AssertionError(f"no client sent {data!r} within {timeout} s")
            time.sleep(0.05)

    def close(self) -> None:
        self._closed.set()
        self._thread.join(5)
        for sock in [self.listener, *self._peers]:
            with contextlib.suppress(OSError):
                sock.close()

    def _serve(self) -> None:
        while not self._closed.is_set():
            for key, _ in self._selector.select(0.1):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self.listener:
                    self._accept()
                else:
                    self._pass_on(sock)

    def _accept(self) -> None:
        with contextlib.suppress(BlockingIOError):
            client, _ = self.listener.accept()
            self.accepted += 1
            upstream = None
            if self.target is not None:
                upstream = socket.create_connection(self.target, timeout=5)
                self._peers[upstream] = client
                self._selector.register(upstream, selectors.EVENT_READ)
            self._peers[client] = upstream
            self._clients.add(client)
            self._selector.register(client, selectors.EVENT_READ)

    def _pass_on(self, sock: socket.socket) -> None:
        try:
            data = sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            self._selector.unregister(sock)
            return
        with self._lock:
            if self._frozen:
                if sock in self._clients:  # the broker's bytes are dropped
                    self.held += data
                return
        peer = self._peers.get(sock)
        if peer is not None:
            peer.sendall(data)
