"""Reports: the app of docs/howto/migrate.md's periodic task (the page writes its command)."""
