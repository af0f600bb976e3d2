"""The states in which an idempotency key blocks a new job become per job (``key_statuses``).

``active_key`` is generated from them now; a generated column cannot be altered in place, so
the unique index and the column are dropped and made again. MySQL and MariaDB rebuild the
jobs table for the new stored column: on a large table, run it when the queue is quiet.
"""

from django.db import migrations, models
from django.db.models.expressions import Combinable, CombinedExpression
from django.db.models.lookups import GreaterThan

BITS = {"scheduled": 1, "ready": 2, "claimed": 4, "succeeded": 8, "failed": 16, "cancelled": 32}
STATUS_BIT = models.Case(
    *[models.When(status=status, then=models.Value(bit)) for status, bit in BITS.items()],
    default=models.Value(0),
    output_field=models.PositiveSmallIntegerField(),
)


class Migration(migrations.Migration):
    dependencies = [("django_skipqueue", "0005_job_trace_context")]

    operations = [
        migrations.RemoveConstraint(model_name="job", name="skipqueue_unique_key"),
        migrations.RemoveField(model_name="job", name="active_key"),
        migrations.AddField(
            model_name="job",
            name="key_statuses",
            field=models.PositiveSmallIntegerField(db_default=15, default=15),
        ),
        migrations.AddField(
            model_name="job",
            name="active_key",
            field=models.GeneratedField(
                db_persist=True,
                expression=models.Case(
                    models.When(
                        GreaterThan(CombinedExpression(models.F("key_statuses"), Combinable.BITAND, STATUS_BIT), 0),
                        then=models.F("idempotency_key"),
                    ),
                    default=models.Value(None),
                    output_field=models.CharField(max_length=191),
                ),
                output_field=models.CharField(max_length=191, null=True),
            ),
        ),
        migrations.AddConstraint(
            model_name="job",
            constraint=models.UniqueConstraint(fields=("active_key",), name="skipqueue_unique_key"),
        ),
    ]
