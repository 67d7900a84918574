"""A settled step's counters are kept in its ``budget`` event; the ``engine_states`` row is
rewritten only when more than its counters change, so it may lag behind the run.

No table changes: the revision marks what the rows mean. A program that knows only
``runs_0001`` resumes from the row alone and would undercount a run's step starts and elapsed
time against its budget; it refuses a database at this revision instead ("this one knows up
to runs_0001 — upgrade the workbench").
"""

revision = "runs_0002"
down_revision = "runs_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Nothing to alter (see the module's docstring)."""


def downgrade() -> None:
    """Nothing to alter: a program at ``runs_0001`` may read the tables again, at its risk of
    undercounting runs written at this revision."""
