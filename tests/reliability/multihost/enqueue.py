"""Enqueue jobs on the rig's server from a child: ``python -m ...enqueue TASK N [KWARGS [EVERY]]``.

The test process's own database is the shared test server; the rig's jobs go to the private
server the hosts reach, so they are enqueued by a child with that DATABASE_URL (and with
wake-ups off unless the test turns them on: see the wake-up tests). Prints the ids as JSON.
"""

from __future__ import annotations

import json
import sys
import threading

import django


def main(argv: list[str]) -> int:
    path, count, kwargs = argv[0], int(argv[1]), json.loads(argv[2] if len(argv) > 2 else "{}")
    every = float(argv[3]) if len(argv) > 3 else None
    django.setup()
    from django.utils.module_loading import import_string

    from django_skipqueue.compat import task_backends

    task = import_string(path)
    if every is None:
        results = task_backends["default"].enqueue_many([(task, [], kwargs)] * count)
    else:  # one at a time, each commit followed by its wake-up datagram
        results = []
        for _ in range(count):
            results.append(task.enqueue(**kwargs))
            threading.Event().wait(every)
    print(json.dumps([int(result.id) for result in results]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
