"""One module per manage.py command of the job queue, each named after what it runs.

A command parses its options and calls one object; it must not import another command or
``admin``, and holds no queue logic of its own.
"""
