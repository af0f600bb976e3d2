"""Tests of the figures: skipqueue_status and health on a large history."""
