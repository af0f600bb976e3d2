"""Helpers the tests share: task modules, private servers, process and docs-page runners.

Nothing here is collected as a test.
"""
