"""Check docs/reference/backend.md: the page's ``TASKS`` entry and its ``enqueue_many`` sample.

The sample (saved as enqueue_many.py) runs with users of the project as its ``orders`` (it
reads their ``pk``) and a recording task as ``send_receipt``: one result per call, in the
order of the calls, each with the id of the row that holds that call's arguments. A bulk with
one invalid call raises and inserts nothing.
"""

from pathlib import Path

from checks.chores import record
from django.contrib.auth.models import User

from django_skipqueue.compat import TaskResultDoesNotExist, task_backends
from django_skipqueue.exceptions import InvalidPayload
from django_skipqueue.models import Job

backend = task_backends["default"]
assert (backend.queue_names, backend.database) == (["default", "emails", "reports"], "default")
orders = [User.objects.create(username=name) for name in ("ada", "bob", "cy", "dee")]
namespace = {"send_receipt": record, "orders": orders}
exec(Path("enqueue_many.py").read_text(), namespace)
results = namespace["results"]
assert [result.args for result in results] == [[order.pk] for order in orders], [
    result.args for result in results
]
rows = dict(Job.objects.values_list("pk", "args"))
assert [rows[int(result.id)] for result in results] == [[order.pk] for order in orders], rows
assert len(rows) == len(orders), "one row per call"
assert [backend.get_result(result.id).args for result in results] == [[o.pk] for o in orders]
assert {result.status for result in results} == {"READY"}


def bulk_with(bad_call) -> None:
    """Enqueue ``bad_call`` between two valid calls: it must raise and insert nothing."""
    try:
        backend.enqueue_many([(record, ["fine"], {}), bad_call, (record, ["also fine"], {})])
    except InvalidPayload:
        pass
    else:
        raise AssertionError(f"{bad_call} was accepted")
    assert Job.objects.count() == len(orders), "a bulk with an invalid call inserted rows"


bulk_with((record, [object()], {}))  # not JSON
bulk_with((record, ["x" * 300_000], {}))  # past SKIPQUEUE_MAX_PAYLOAD_BYTES (256 KiB)

try:
    backend.get_result(str(max(rows) + 1000))
except TaskResultDoesNotExist:
    pass
else:
    raise AssertionError("an unknown id gave a result")
