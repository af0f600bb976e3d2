"""Tests of recurring tasks: timing, the scheduler, many schedulers at once, checks, admin."""
