"""One module per command of the scheduling app; it must not import another command."""
