"""Sphinx configuration for the django-skipqueue docs."""

import sys
from pathlib import Path

project = "django-skipqueue"
author = "django-skipqueue developers"
sys.path.insert(0, str(Path(__file__).parent / "_ext"))

extensions = ["myst_parser", "measures"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "benchmarks/raw"]
html_theme = "furo"
html_title = "django-skipqueue"
