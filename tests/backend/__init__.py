"""Tests of what runs in the web process: the backend contract, enqueue, checks, pausing."""
