from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('django_skipqueue', '0008_flow_window_jobs'),
    ]

    operations = [
        migrations.AddField(
            model_name='flowkey',
            name='blocked_holders',
            field=models.JSONField(default=list),
        ),
    ]
