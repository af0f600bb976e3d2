"""One module per command of the outbox app; it must not import another command."""
