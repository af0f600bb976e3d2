"""One module per command of the reservations app; it must not import another command."""
