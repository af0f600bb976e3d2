"""Tests of the job state machine: statuses, transitions and what each of them writes."""
