"""The manage.py commands and what they share: argument types, purge progress, interrupts.

Owns the commands (``commands/``) and what they share: the argument types and ``--backend``
handling (``arguments.py``), purge progress (``progress.py``) and graceful interrupts
(``interrupts.py``). Each command parses its arguments and calls one object of ``worker``,
``maintenance`` or ``monitoring``.

Must not import ``admin``. Nothing else in the package may import this folder, but the
optional apps' commands its argument types and start-up checks (``database.py``).
"""
