"""Tests of the transactional outbox: publishing, the relay, its claim index, the inbox."""
