"""Database machinery a newcomer can read last: how the hot path talks to the server.

Owns how statements reach the server (``statements.py``: short transactions, whole-transaction
retries, the hot path's statements compiled once), the database clock (``clock.py``),
multi-row INSERTs (``bulkinsert.py``) kept under the packet limit (``packets.py``), cheap
counts (``counting.py``), the outage log (``outage.py``) and the migrations a database lacks
(``migrated.py``).

Must not import anything of the package but the models (``bulkinsert.py`` needs ``Job``):
never ``worker``, ``maintenance``, ``monitoring``, ``admin`` or ``management``. It knows SQL,
not job states.
"""
