"""The pytest fixture of django-skipqueue: ``skipqueue``, the helpers of django_skipqueue.testing.

Load it with ``pytest_plugins = ["django_skipqueue.pytest_plugin"]`` in a ``conftest.py``, or
``-p django_skipqueue.pytest_plugin``. It needs pytest-django's database access (``db`` or
``transactional_db``): the fixture asks for ``db`` unless the test already has database access.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest


@pytest.fixture
def skipqueue(request: pytest.FixtureRequest) -> SimpleNamespace:
    """``skipqueue.run_jobs()``, ``skipqueue.assert_enqueued(...)`` and their friends."""
    if not {"db", "transactional_db"} & set(request.fixturenames):
        request.getfixturevalue("db")
    from django_skipqueue import testing

    return SimpleNamespace(**{name: getattr(testing, name) for name in testing.__all__})
