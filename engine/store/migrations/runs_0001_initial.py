"""The run store's tables: runs, events, step results and history, the call journal,
interrupts, engine states, owners and leases.

Times are seconds since the epoch (double precision) as in the SQLite store; event bodies
and definitions are kept as the exact JSON text written, other structured values as
``json`` (which keeps key order, unlike ``jsonb``).
"""

import sqlalchemy as sa
from alembic import op

revision = "runs_0001"
down_revision = None
branch_labels = ("runs",)
depends_on = None

TEXT = sa.Text()
TIME = sa.Float(precision=53)
JSON = sa.JSON()


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("run_id", TEXT, primary_key=True),
        sa.Column("workflow", TEXT, nullable=False),
        sa.Column("source", TEXT, nullable=False),
        sa.Column("definition", TEXT, nullable=False),
        sa.Column("engine", TEXT, nullable=False),
        sa.Column("engine_reason", TEXT, nullable=False),
        sa.Column("status", TEXT, nullable=False),
        sa.Column("reason", TEXT, nullable=False, server_default=""),
        sa.Column("inputs", JSON, nullable=False),
        sa.Column("outputs", JSON, nullable=False),
        sa.Column("created_ts", TIME, nullable=False),
        sa.Column("updated_ts", TIME, nullable=False),
        sa.Column("finished_ts", TIME),
        sa.Column("parent_run_id", TEXT),
        sa.Column("forked_at", TEXT),
    )
    op.create_index("runs_by_created", "runs", ["created_ts", "run_id"])
    op.create_table(
        "events",
        sa.Column("run_id", TEXT, primary_key=True),
        sa.Column("seq", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("kind", TEXT, nullable=False),
        sa.Column("mono", TIME, nullable=False),
        sa.Column("body", TEXT, nullable=False),
    )
    op.create_table(
        "step_results",
        sa.Column("run_id", TEXT, primary_key=True),
        sa.Column("step_id", TEXT, primary_key=True),
        sa.Column("status", TEXT, nullable=False),
        sa.Column("iteration", sa.Integer(), nullable=False),
        sa.Column("outputs", JSON, nullable=False),
        sa.Column("reason", TEXT, nullable=False),
        sa.Column("routed_by", JSON, nullable=False),
        sa.Column("not_routed_by", JSON, nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
    )
    op.create_table(
        "step_history",
        sa.Column("run_id", TEXT, primary_key=True),
        sa.Column("step_id", TEXT, primary_key=True),
        sa.Column("iteration", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("status", TEXT, nullable=False),
        sa.Column("outputs", JSON, nullable=False),
        sa.Column("reason", TEXT, nullable=False),
    )
    op.create_table(
        "journal",
        sa.Column("run_id", TEXT, primary_key=True),
        sa.Column("step_id", TEXT, primary_key=True),
        sa.Column("iteration", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("call_index", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("kind", TEXT, nullable=False),
        sa.Column("payload", JSON),
    )
    op.create_table(
        "interrupts",
        sa.Column("interrupt_id", TEXT, primary_key=True),
        sa.Column("run_id", TEXT, nullable=False),
        sa.Column("step_id", TEXT, nullable=False),
        sa.Column("iteration", sa.Integer(), nullable=False),
        sa.Column("request", TEXT, nullable=False),
        sa.Column("status", TEXT, nullable=False),
        sa.Column("answer", TEXT),
        sa.Column("created_ts", TIME, nullable=False),
        sa.Column("resolved_ts", TIME),
    )
    op.create_index("interrupts_by_run", "interrupts", ["run_id"])
    op.create_table(
        "engine_states",
        sa.Column("run_id", TEXT, primary_key=True),
        sa.Column("engine_state", JSON, nullable=False),
        sa.Column("updated_ts", TIME, nullable=False),
    )
    op.create_table(
        "run_owners",
        sa.Column("run_id", TEXT, primary_key=True),
        sa.Column("host", TEXT, nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("token", TEXT, nullable=False),
        sa.Column("proc_start", TEXT),
        sa.Column("claimed_ts", TIME, nullable=False),
    )
    op.create_table(
        "run_leases",
        sa.Column("run_id", TEXT, primary_key=True),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("holder", TEXT, nullable=False),
        sa.Column("claimed_ts", TIME, nullable=False),
    )


def downgrade() -> None:
    for table in (
        "run_leases",
        "run_owners",
        "engine_states",
        "interrupts",
        "journal",
        "step_history",
        "step_results",
        "events",
        "runs",
    ):
        op.drop_table(table)
