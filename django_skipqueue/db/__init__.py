"""Database machinery a newcomer can read last: how the hot path talks to the server.

Owns the compiled hot-path statements (``statements.py``), short transactions and
whole-transaction retries (``transactions.py``), the database clock (``clock.py``), multi-row
INSERTs (``bulkinsert.py``) and cheap counts (``counting.py``).

Must not import anything of the package but the models (``bulkinsert.py`` needs ``Job``):
never ``worker``, ``maintenance``, ``monitoring``, ``admin`` or ``management``. It knows SQL,
not job states.
"""
