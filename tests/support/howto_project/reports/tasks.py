"""The nightly report that docs/howto/migrate.md's management command enqueues."""

from django_skipqueue.tasks import task


@task
def build_nightly_report(day: str) -> str:
    return f"report for {day}"
