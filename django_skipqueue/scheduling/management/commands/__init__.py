"""One module per command of the scheduling app."""
