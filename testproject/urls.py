from django.contrib import admin
from django.urls import path

from django_skipqueue.monitoring.views import metrics

urlpatterns = [
    path("admin/", admin.site.urls),
    # The database gauges for Prometheus (staff, or the SKIPQUEUE_METRICS_TOKEN bearer token).
    path("skipqueue/metrics", metrics, name="skipqueue_metrics"),
]
