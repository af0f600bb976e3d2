"""Check docs/howto/exactly-once.md with real workers: a transactional task's writes happen once
when it succeeds and not at all when it raises, and its follow-up job commits with it.

Run by the page's ``run`` directive in ``manage.py shell``.
"""

import subprocess
import sys
from pathlib import Path

from django.conf import settings
from shop.models import Customer, LoyaltyPosting, Payment
from shop.payments import confirm_payment
from shop.tasks import credit_points

ada = Customer.objects.create(name="ada")
bob = Customer.objects.create(name="bob", points=10)
credits = [credit_points.enqueue(ada.pk, 1, 50), credit_points.enqueue(ada.pk, 2, 25)]
# Takes bob below zero: the UPDATE fails on the CHECK constraint after the INSERT succeeded.
overdraft = credit_points.enqueue(bob.pk, 3, -30)
payment = Payment.objects.create()
confirmation = confirm_payment.enqueue(payment.pk)

command = [sys.executable, "manage.py", "runworkers", "--burst", "--processes", "2"]
done = subprocess.run([*command, "--threads", "2"], capture_output=True, text=True, timeout=120)
assert done.returncode == 0, done.stdout + done.stderr

for result in [*credits, confirmation]:
    result.refresh()
    assert (result.status, result.attempts) == ("SUCCESSFUL", 1), (result.status, result.errors)
ada.refresh_from_db()
assert ada.points == 75, ada.points
postings = LoyaltyPosting.objects.filter(customer=ada).order_by("order_id")
assert list(postings.values_list("order_id", "points")) == [(1, 50), (2, 25)]

overdraft.refresh()
assert overdraft.status == "FAILED", overdraft.status
errors = [error.exception_class_path for error in overdraft.errors]
assert errors == ["django.db.utils.IntegrityError"] * settings.SKIPQUEUE_MAX_ATTEMPTS, errors
bob.refresh_from_db()
assert bob.points == 10, bob.points
assert not LoyaltyPosting.objects.filter(order_id=3).exists(), "a failed attempt left a posting"

payment.refresh_from_db()
assert payment.status == "confirmed", payment.status
sent = (Path(settings.BASE_DIR) / "confirmations.txt").read_text().split()
assert sent == [str(payment.pk)], sent
