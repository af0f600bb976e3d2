"""Sphinx configuration for the django-skipqueue docs."""

project = "django-skipqueue"
author = "django-skipqueue developers"
extensions = ["myst_parser"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "benchmarks/raw"]
html_theme = "furo"
html_title = "django-skipqueue"
