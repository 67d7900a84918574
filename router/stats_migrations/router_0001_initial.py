"""Provider totals, recent calls and breaker rows, as in the SQLite stats file."""

import sqlalchemy as sa
from alembic import op

revision = "router_0001"
down_revision = None
branch_labels = ("router",)
depends_on = None

TIME = sa.Float(precision=53)


def _counter(name: str, kind: sa.types.TypeEngine[float] | sa.BigInteger) -> sa.Column[float]:
    return sa.Column(name, kind, nullable=False, server_default="0")


def upgrade() -> None:
    op.create_table(
        "provider_totals",
        sa.Column("provider", sa.Text(), primary_key=True),
        _counter("requests", sa.BigInteger()),
        _counter("successes", sa.BigInteger()),
        _counter("failures", sa.BigInteger()),
        _counter("rate_limited", sa.BigInteger()),
        _counter("input_tokens", sa.BigInteger()),
        _counter("output_tokens", sa.BigInteger()),
        _counter("cost_usd", TIME),
        _counter("fallbacks", sa.BigInteger()),
        _counter("updated_wall", TIME),
    )
    op.create_table(
        "provider_calls",
        sa.Column("id", sa.BigInteger(), sa.Identity(), primary_key=True),
        sa.Column("provider", sa.Text(), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("latency_s", TIME),
        sa.Column("error_class", sa.Text()),
        sa.Column("wall", TIME, nullable=False),
    )
    op.create_index("provider_calls_by_provider", "provider_calls", ["provider", "id"])
    op.create_table(
        "provider_breaker",
        sa.Column("provider", sa.Text(), primary_key=True),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("cooldown_remaining_s", TIME, nullable=False),
        sa.Column("consecutive_trips", sa.Integer(), nullable=False),
        sa.Column("open_reason", sa.Text()),
        sa.Column("last_error", sa.Text()),
        sa.Column("last_error_status", sa.Integer()),
        sa.Column("misconfigured", sa.Boolean(), nullable=False, server_default="false"),
        sa.Column("misconfigured_reason", sa.Text()),
        sa.Column("changed_wall", TIME),
        sa.Column("saved_wall", TIME, nullable=False),
    )


def downgrade() -> None:
    for table in ("provider_breaker", "provider_calls", "provider_totals"):
        op.drop_table(table)
