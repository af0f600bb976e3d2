"""Key columns: caller-given keys compared byte for byte, trailing spaces included.

MySQL and MariaDB compare a text column by its collation, and the usual table default
(``utf8mb4_general_ci``, ``utf8mb4_0900_ai_ci``) folds case and accents; every PAD SPACE
collation, ``utf8mb4_bin`` included, also ignores trailing spaces. A key is an identifier,
not a word: ``Order-A``, ``order-a``, ``café``, ``cafe``, ``k`` and ``k `` are six keys. Key
columns therefore get a binary NO PAD collation on MySQL and MariaDB. PostgreSQL (with its
deterministic collations, the only kind Django creates) and SQLite (BINARY) already compare
text byte for byte, so the field changes nothing there.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ProjectState

#: Binary and NO PAD on MariaDB (10.2+).
MARIADB_KEY_COLLATION = "utf8mb4_nopad_bin"
#: Binary and NO PAD on MySQL (8.0.17+); MySQL's utf8mb4_bin is PAD SPACE.
MYSQL_KEY_COLLATION = "utf8mb4_0900_bin"


def key_collation(connection: BaseDatabaseWrapper) -> str | None:
    """Return the collation key columns need on ``connection``, None where text is bytes."""
    if connection.vendor != "mysql":
        return None
    mariadb = connection.mysql_is_mariadb  # type: ignore[attr-defined]
    return MARIADB_KEY_COLLATION if mariadb else MYSQL_KEY_COLLATION


class KeyField(models.CharField):
    """A CharField for a caller's key: equal only when the strings are equal in Python.

    The collation depends on the server, which ``db_collation`` (one name for every
    database) cannot say; the character set is spelled out because a binary utf8mb4
    collation is refused on a column of another character set. The SQL of queries is
    unchanged: the column's collation decides every comparison with a parameter.
    """

    def db_type(self, connection: BaseDatabaseWrapper) -> str | None:
        column_type = super().db_type(connection)
        if column_type is None or key_collation(connection) is None:
            return column_type
        return f"{column_type} CHARACTER SET utf8mb4"

    def db_parameters(self, connection: BaseDatabaseWrapper) -> dict[str, Any]:
        params = super().db_parameters(connection)
        params["collation"] = key_collation(connection) or params.get("collation")
        return params


class AlterKeyColumns(Operation):
    """Alter fields of one model into KeyFields, with one ALTER TABLE on MySQL and MariaDB.

    Django's AlterField cannot do it: it refuses to alter a GeneratedField's collation, and
    one AlterField per column would rebuild the table once per column. Here every column is
    re-declared in full (generated ones with their expression) in a single statement, which
    keeps the table's indexes and rows; on PostgreSQL and SQLite only the state changes.
    """

    reduces_to_sql = True
    reversible = True

    def __init__(self, model_name: str, fields: list[tuple[str, models.Field[Any, Any]]]):
        self.model_name = model_name
        self.fields = fields

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        kwargs = {"model_name": self.model_name, "fields": self.fields}
        return self.__class__.__qualname__, [], kwargs

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        for name, field in self.fields:
            state.alter_field(app_label, self.model_name.lower(), name, field, True)

    def database_forwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        self._modify(app_label, schema_editor, to_state)

    def database_backwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        self._modify(app_label, schema_editor, to_state)

    def describe(self) -> str:
        names = ", ".join(name for name, _ in self.fields)
        return f"Compare {self.model_name} keys as bytes ({names})"

    @property
    def migration_name_fragment(self) -> str:
        return f"{self.model_name.lower()}_keys_as_bytes"

    def _modify(
        self, app_label: str, editor: BaseDatabaseSchemaEditor, state: ProjectState
    ) -> None:
        """Re-declare the columns as ``state`` has them, in one ALTER TABLE (MySQL only)."""
        if editor.connection.vendor != "mysql":
            return
        model = state.apps.get_model(app_label, self.model_name)
        clauses, params = [], []
        for name, _ in self.fields:
            field = model._meta.get_field(name)
            clause, clause_params = column_definition(editor, field)
            clauses.append(f"MODIFY {editor.quote_name(field.column)} {clause}")
            params.extend(clause_params)
        table = editor.quote_name(model._meta.db_table)
        editor.execute(f"ALTER TABLE {table} {', '.join(clauses)}", params or None)


def column_definition(
    editor: BaseDatabaseSchemaEditor, field: models.Field[Any, Any]
) -> tuple[str, list[Any]]:
    """Return a MySQL column definition of ``field`` for MODIFY, without keys or defaults.

    Key columns have no database default; a primary key stays one (MODIFY keeps indexes).
    """
    db_params = field.db_parameters(editor.connection)
    definition = str(db_params["type"])
    if collation := db_params.get("collation"):
        definition += f" COLLATE {editor.quote_name(collation)}"
    if not field.generated:
        return f"{definition} {'NULL' if field.null else 'NOT NULL'}", []
    expression, params = field.generated_sql(editor.connection)  # type: ignore[attr-defined]
    persistency = "STORED" if field.db_persist else "VIRTUAL"  # type: ignore[attr-defined]
    return f"{definition} GENERATED ALWAYS AS ({expression}) {persistency}", list(params)
