"""The manage.py commands and what they share: purge progress, graceful interrupts.

Each command parses its arguments and calls one object of ``worker``, ``maintenance`` or
``monitoring``. Nothing else in the package may import this folder.
"""
