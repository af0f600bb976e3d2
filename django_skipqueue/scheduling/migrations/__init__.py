"""Migrations of the scheduling app."""
