"""What a docs-page reader does in the admin: log in, open the pages it names, run an action.

A mixin of ``tests.support.tutorial_runner.Runner``: it uses the reader's server port, the
superuser the page created (``credentials``) and appends what it did to the reader's log.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlencode
from urllib.request import Request

from tests.support.reader_processes import login

LOCAL_URL = re.compile(r"http://127\.0\.0\.1:8000(/admin/\S*?)(?=[>\s)`]|$)")


class ReaderAdmin:
    """The admin pages a reader opens, as the superuser the page created."""

    port: int
    credentials: tuple[str, str] | None
    log: list[str]

    def remember_credentials(self, command: str) -> None:
        password = re.search(r"DJANGO_SUPERUSER_PASSWORD=(\S+)", command)
        username = re.search(r"--username (\S+)", command)
        if password and username:
            self.credentials = (username.group(1), password.group(1))

    def visit_admin(self, page: Path) -> None:
        """Log in as the superuser the page created, and open every admin URL it names."""
        assert self.credentials, "the page must create a superuser before its admin pages"
        opener = login(self.port, *self.credentials)
        for path in sorted(set(LOCAL_URL.findall(page.read_text()))):
            self.admin_page(path, opener)

    def admin_page(self, path: str, opener: Any = None) -> str:
        """The body of an admin page, read as the page's superuser (200, not the login form)."""
        assert self.credentials, "the page must create a superuser before its admin pages"
        opener = opener or login(self.port, *self.credentials)
        with opener.open(f"http://127.0.0.1:{self.port}{path}", timeout=30) as response:
            body = response.read().decode()
        self.log.append(f"GET {path} -> {response.status}")
        assert response.status == 200, path
        assert 'name="password"' not in body, f"{path} shows the login form"
        return body

    def run_admin_action(self, action: str, path: str) -> None:
        """Select every job the list at ``path`` shows, choose ``action`` and click Run."""
        assert self.credentials, "the page must create a superuser before its admin pages"
        opener = login(self.port, *self.credentials)
        body = self.admin_page(path, opener)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', body)
        selected = re.findall(r'name="_selected_action" value="(\d+)"', body)
        assert token and selected, f"no job to select at {path}"
        form = [("csrfmiddlewaretoken", token.group(1)), ("action", action), ("index", "0")]
        form += [("_selected_action", job) for job in selected]
        url = f"http://127.0.0.1:{self.port}{path}"
        request = Request(url, data=urlencode(form).encode(), headers={"Referer": url})
        with opener.open(request, timeout=30) as response:
            shown = response.read().decode()
        self.log.append(f"POST {path} action={action} jobs={selected} -> {response.status}")
        assert 'class="success"' in shown, f"{action} on {selected} reported no success"
