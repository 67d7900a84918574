"""Alembic's environment for the workbench: migrate on the connection the caller opened
(plumbing/migrations.py), inside its transaction."""

from alembic import context

context.configure(connection=context.config.attributes["connection"])
with context.begin_transaction():
    context.run_migrations()
