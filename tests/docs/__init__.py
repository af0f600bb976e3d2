"""Tests that the docs hold: the samples run, the reference matches the code both ways."""
