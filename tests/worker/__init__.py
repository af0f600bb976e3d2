"""Tests of the worker processes: the loop, batching, stops, crashes, wake-ups."""
