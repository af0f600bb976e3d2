"""The page's sections, one module per part; each registers itself (report.registry.section)."""
