"""Send wake-up datagrams as fast as asked: ``python -m ...flood HOST PORT RATE SECONDS``.

Run inside another host's namespace by the flood test: half the datagrams name the queue
``default`` (each could start a claim), half are malformed (not queue names). Paced in
one-millisecond ticks; prints what it sent as JSON, with the seconds it sent for.
"""

from __future__ import annotations

import json
import socket
import sys
import time

PAYLOADS = (b"default", b"\xff\xfe' OR 1=1; --")


def main(argv: list[str]) -> int:
    host, port, rate, seconds = argv[0], int(argv[1]), float(argv[2]), float(argv[3])
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setblocking(False)
    address = (host, port)
    sent = dropped = 0
    began = time.monotonic()
    while (elapsed := time.monotonic() - began) < seconds:
        due = int(elapsed * rate) - sent - dropped
        for _ in range(max(due, 0)):
            try:
                sock.sendto(PAYLOADS[(sent + dropped) % 2], address)
                sent += 1
            except BlockingIOError:
                dropped += 1
        time.sleep(0.001)
    elapsed = time.monotonic() - began
    report = {"sent": sent, "not_sent": dropped, "rate": round(sent / elapsed)}
    print(json.dumps({**report, "seconds": round(elapsed, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
