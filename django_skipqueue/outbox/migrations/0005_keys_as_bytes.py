"""Message ids, keys and inbox consumers compare byte for byte on MySQL and MariaDB.

``utf8mb4_nopad_bin`` (MariaDB) or ``utf8mb4_0900_bin`` (MySQL 8.0.17+): ids that differ in
case, accents or trailing spaces are distinct messages, for ``publish()`` and for
``inbox.receive()``. One ALTER TABLE per table (a rebuild, rows and indexes kept); nothing
changes on PostgreSQL and SQLite. See docs/howto/migrate.md.
"""

from django.db import migrations

import django_skipqueue.db.keys
from django_skipqueue.db.keys import AlterKeyColumns


class Migration(migrations.Migration):

    dependencies = [
        ('skipqueue_outbox', '0004_compact_payload'),
    ]

    operations = [
        AlterKeyColumns(
            model_name='outboxmessage',
            fields=[
                ('key', django_skipqueue.db.keys.KeyField(blank=True, default='', max_length=255)),
                ('message_id', django_skipqueue.db.keys.KeyField(max_length=255, unique=True)),
            ],
        ),
        AlterKeyColumns(
            model_name='inboxmessage',
            fields=[
                ('consumer', django_skipqueue.db.keys.KeyField(blank=True, default='', max_length=100)),
                ('message_id', django_skipqueue.db.keys.KeyField(max_length=255)),
            ],
        ),
    ]
