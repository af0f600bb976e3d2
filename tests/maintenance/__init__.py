"""Tests of maintenance: reaping, promotion, purge, pruning, replica-aware pauses."""
