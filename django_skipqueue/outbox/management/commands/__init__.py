"""One module per command of the outbox app."""
