"""Keys compare byte for byte: a binary NO PAD collation on MySQL and MariaDB.

Idempotency keys and flow keys, and the generated columns made from them, get
``utf8mb4_nopad_bin`` (MariaDB) or ``utf8mb4_0900_bin`` (MySQL 8.0.17+), so that keys that
differ in case, accents or trailing spaces are distinct. One ALTER TABLE per table re-declares
its key columns (generated ones with their expression); MySQL and MariaDB rebuild the table,
rows and indexes kept: on a large jobs table, run it when the queue is quiet. Nothing changes
on PostgreSQL and SQLite, which compare text byte for byte already. See docs/howto/migrate.md.
"""

import django.db.models.expressions
import django.db.models.functions.text
import django.db.models.lookups
from django.db import migrations, models

import django_skipqueue.db.keys
from django_skipqueue.db.keys import AlterKeyColumns


class Migration(migrations.Migration):

    dependencies = [
        ('django_skipqueue', '0009_flow_blocked_holders'),
    ]

    operations = [
        AlterKeyColumns(
            model_name='flowkey',
            fields=[
                ('key', django_skipqueue.db.keys.KeyField(max_length=191, primary_key=True, serialize=False)),
            ],
        ),
        AlterKeyColumns(
            model_name='job',
            fields=[
                ('flow_key', django_skipqueue.db.keys.KeyField(blank=True, max_length=191, null=True)),
                ('idempotency_key', django_skipqueue.db.keys.KeyField(blank=True, max_length=191, null=True)),
                ('active_key', models.GeneratedField(db_persist=True, expression=models.Case(models.When(django.db.models.lookups.GreaterThan(django.db.models.expressions.CombinedExpression(models.F('key_statuses'), '&', models.Case(models.When(status='scheduled', then=models.Value(1)), models.When(status='ready', then=models.Value(2)), models.When(status='claimed', then=models.Value(4)), models.When(status='succeeded', then=models.Value(8)), models.When(status='failed', then=models.Value(16)), models.When(status='cancelled', then=models.Value(32)), models.When(status='blocked', then=models.Value(64)), default=models.Value(0), output_field=models.PositiveSmallIntegerField())), 0), then=models.F('idempotency_key')), default=models.Value(None), output_field=models.CharField(max_length=191)), output_field=django_skipqueue.db.keys.KeyField(max_length=191, null=True))),
                ('waiting_key', models.GeneratedField(db_persist=True, expression=models.Case(models.When(flow_key__isnull=False, status='blocked', then=django.db.models.functions.text.Concat(models.Value('b:'), models.F('flow_key'))), models.When(flow_key__isnull=False, status='ready', then=django.db.models.functions.text.Concat(models.Value('r:'), models.F('flow_key'))), default=models.Value(None), output_field=models.CharField(max_length=193)), output_field=django_skipqueue.db.keys.KeyField(max_length=193, null=True))),
            ],
        ),
        AlterKeyColumns(
            model_name='jobarchive',
            fields=[
                ('idempotency_key', django_skipqueue.db.keys.KeyField(max_length=191, null=True)),
            ],
        ),
    ]
