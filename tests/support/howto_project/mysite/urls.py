"""A new project's URLs: none until a page mounts its own (it writes this file)."""

urlpatterns: list = []
