"""procrastinate's schema (its jobs, workers, periodic defers and their functions), as the
pinned procrastinate (constraints.txt) ships it.

A newer procrastinate that changes its schema gets a revision of its own here that runs the
migration files it ships for the versions between (``SchemaManager.get_migrations_path()``),
never this one again.
"""

from alembic import op

revision = "queue_0001"
down_revision = None
branch_labels = ("queue",)
depends_on = None


def upgrade() -> None:
    from procrastinate.schema import SchemaManager

    # psycopg's own execute with no parameters: the schema's text is sent as it is (no
    # placeholder parsing of its % signs), all its statements at once
    connection = op.get_bind().connection.driver_connection
    assert connection is not None
    connection.execute(SchemaManager.get_schema())


def downgrade() -> None:
    raise NotImplementedError("procrastinate ships no downgrade of its schema")
