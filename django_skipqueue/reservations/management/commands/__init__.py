"""One module per command of the reservations app."""
