"""Tests of reservation pools: holds, the claim plan, concurrency and the expiry sweep."""
