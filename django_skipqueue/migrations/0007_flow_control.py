"""Flow control: the ``blocked`` status, a job's flow key and slot, and the FlowKey table.

``waiting_key`` ("b:" and the flow key while the job is blocked, "r:" and the key while it is
ready, NULL for a plain job) is a stored generated column with its own index, read by the
admission. ``active_key`` gains the ``blocked`` bit, so that an
idempotency key holds while its job waits for a slot; a generated column cannot be altered
in place, so its unique index and the column are dropped and made again, as in 0006. MySQL
and MariaDB rebuild the jobs table for the new stored columns: on a large table, run it when
the queue is quiet.
"""

from django.db import migrations, models
from django.db.models.expressions import Combinable, CombinedExpression
from django.db.models.functions import Concat
from django.db.models.lookups import GreaterThan

BITS = {
    "scheduled": 1,
    "ready": 2,
    "claimed": 4,
    "succeeded": 8,
    "failed": 16,
    "cancelled": 32,
    "blocked": 64,
}
STATUS_BIT = models.Case(
    *[models.When(status=status, then=models.Value(bit)) for status, bit in BITS.items()],
    default=models.Value(0),
    output_field=models.PositiveSmallIntegerField(),
)
STATUSES = [
    ("scheduled", "Scheduled"),
    ("ready", "Ready"),
    ("claimed", "Claimed"),
    ("succeeded", "Succeeded"),
    ("failed", "Failed"),
    ("cancelled", "Cancelled"),
    ("blocked", "Blocked"),
]


class Migration(migrations.Migration):
    dependencies = [("django_skipqueue", "0006_job_key_statuses")]

    operations = [
        migrations.CreateModel(
            name="FlowKey",
            fields=[
                ("key", models.CharField(max_length=191, primary_key=True, serialize=False)),
                ("limit", models.PositiveIntegerField(blank=True, null=True)),
                ("running", models.PositiveIntegerField(default=0)),
                ("ordered", models.BooleanField(default=False)),
                ("on_failure", models.CharField(default="skip", max_length=8)),
                ("rate", models.PositiveIntegerField(blank=True, null=True)),
                ("period", models.FloatField(blank=True, null=True)),
                ("window_start", models.DateTimeField(blank=True, null=True)),
                ("window_count", models.PositiveIntegerField(default=0)),
                ("wake_at", models.DateTimeField(blank=True, db_index=True, null=True)),
            ],
            options={"db_table": "skipqueue_flow_key"},
        ),
        migrations.AlterField(
            model_name="job",
            name="status",
            field=models.CharField(choices=STATUSES, default="ready", max_length=10),
        ),
        migrations.AddField(
            model_name="job",
            name="flow_key",
            field=models.CharField(blank=True, max_length=191, null=True),
        ),
        migrations.AddField(
            model_name="job",
            name="flow_slot",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name="job",
            name="waiting_key",
            field=models.GeneratedField(
                db_persist=True,
                expression=models.Case(
                    models.When(
                        status="blocked",
                        flow_key__isnull=False,
                        then=Concat(models.Value("b:"), models.F("flow_key")),
                    ),
                    models.When(
                        status="ready",
                        flow_key__isnull=False,
                        then=Concat(models.Value("r:"), models.F("flow_key")),
                    ),
                    default=models.Value(None),
                    output_field=models.CharField(max_length=193),
                ),
                output_field=models.CharField(max_length=193, null=True),
            ),
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(fields=["waiting_key", "id"], name="skipqueue_waiting"),
        ),
        migrations.AlterField(
            model_name="job",
            name="key_statuses",
            field=models.PositiveSmallIntegerField(db_default=79, default=79),
        ),
        migrations.RemoveConstraint(model_name="job", name="skipqueue_unique_key"),
        migrations.RemoveField(model_name="job", name="active_key"),
        migrations.AddField(
            model_name="job",
            name="active_key",
            field=models.GeneratedField(
                db_persist=True,
                expression=models.Case(
                    models.When(
                        GreaterThan(
                            CombinedExpression(
                                models.F("key_statuses"), Combinable.BITAND, STATUS_BIT
                            ),
                            0,
                        ),
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
