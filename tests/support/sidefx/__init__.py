"""A package whose submodule has an import side effect (see test_security)."""
