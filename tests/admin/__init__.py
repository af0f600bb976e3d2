"""Tests of the admin: the job list and page, actions, the dashboard, a real browser."""
