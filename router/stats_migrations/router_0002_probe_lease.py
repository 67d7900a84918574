"""The shared half-open probe lease: one row per provider, claimed by one conditional UPDATE,
holding the outcome of the last probe settled so the other workers adopt it."""

import sqlalchemy as sa
from alembic import op

revision = "router_0002"
down_revision = "router_0001"
branch_labels = None
depends_on = None

TIME = sa.Float(precision=53)


def upgrade() -> None:
    op.create_table(
        "provider_probe",
        sa.Column("provider", sa.Text(), primary_key=True),
        sa.Column("holder", sa.Text()),
        sa.Column("expires_wall", TIME, nullable=False, server_default="0"),
        sa.Column("settled_wall", TIME, nullable=False, server_default="0"),
        sa.Column("state", sa.Text()),
        sa.Column("cooldown_remaining_s", TIME, nullable=False, server_default="0"),
        sa.Column("consecutive_trips", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("open_reason", sa.Text()),
        sa.Column("saved_wall", TIME, nullable=False, server_default="0"),
    )


def downgrade() -> None:
    op.drop_table("provider_probe")
