"""An ordinary task the exactly-once how-to enqueues: it "mails" by appending to a file."""

from pathlib import Path

from django.conf import settings

from django_skipqueue.tasks import task


@task
def send_confirmation_email(payment_id: int) -> None:
    with (Path(settings.BASE_DIR) / "confirmations.txt").open("a") as file:
        file.write(f"{payment_id}\n")
