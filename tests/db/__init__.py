"""Tests of the database side: the claim and its index, short transactions, retries, inserts."""
