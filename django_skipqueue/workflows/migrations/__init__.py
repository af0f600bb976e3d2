"""Migrations of the workflows app (batches and chains).

Must not import the models or any module of the package: a migration describes the schema of
its time.
"""
