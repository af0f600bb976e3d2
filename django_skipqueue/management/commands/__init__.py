"""One module per manage.py command, each named after what it runs."""
