"""A TCP relay that delays every byte by a fixed time each way: a long link without netem.

Where the kernel has no ``sch_netem`` (tc cannot add delay), the rig puts this relay on the
server's bridge address: clients connect to its port, and each chunk read from one side is
written to the other ``delay`` seconds later, in order. With the rig's random-drop rule
(``NetRig.lose()``, real packet loss on the host's link) it makes a slow, lossy link.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time


class DelayRelay:
    """Listen on ``host``:free port, relay to ``target``, ``delay`` seconds each way."""

    def __init__(self, host: str, target: tuple[str, int], delay: float) -> None:
        self.target, self.delay = target, delay
        self.listener = socket.create_server((host, 0))
        self.port = self.listener.getsockname()[1]
        self.loop = asyncio.new_event_loop()
        self.writers: set[asyncio.StreamWriter] = set()
        #: Round trips so far, over every connection (see the module's docstring).
        self.turns = 0
        self.thread = threading.Thread(target=self._run, name="delay-relay", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        self.server = await asyncio.start_server(self._relay, sock=self.listener)
        async with self.server:
            with contextlib.suppress(asyncio.CancelledError):
                await self.server.serve_forever()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.add(writer)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self.writers.add(up_writer)
        #: Who sent last on this connection: [True] for the client, [False] for the server.
        last = [False]
        await asyncio.gather(
            self._pump(reader, up_writer, last, True), self._pump(up_reader, writer, last, False)
        )

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        last: list[bool],
        client: bool,
    ) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def send() -> None:
            while True:
                due, data = await queue.get()
                if not data:
                    break
                if (wait := due - time.monotonic()) > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()

        sender = asyncio.create_task(send())
        try:
            while data := await reader.read(65536):
                if client and not last[0]:
                    self.turns += 1
                last[0] = client
                queue.put_nowait((time.monotonic() + self.delay, data))
        except OSError:
            pass
        finally:
            queue.put_nowait((0.0, b""))
            with contextlib.suppress(OSError, ConnectionError):
                await sender
            writer.close()

    def close(self) -> None:
        def stop() -> None:
            self.server.close()
            for writer in self.writers:
                writer.close()
            for task in asyncio.all_tasks(self.loop):
                task.cancel()

        self.loop.call_soon_threadsafe(stop)
        self.thread.join(10)
        if not self.thread.is_alive():
            self.loop.close()
        self.listener.close()
