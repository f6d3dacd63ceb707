"""Teacher links (issue 42 §1): a one-time token that lets the teacher's second device become the
teacher; the table keeps the token's hash and the secret sealed with the token, and an expiry.

Revision 0002, after 0001.
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "teacher_links",
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("room_code", sa.String(6), nullable=False),
        sa.Column("sealed", sa.String(200), nullable=False),
        sa.Column("expires_at", sa.Double, nullable=False),
        sa.ForeignKeyConstraint(["room_code"], ["rooms.code"], name="fk_teacher_links_room_code"),
        sa.PrimaryKeyConstraint("token_hash", name="pk_teacher_links"),
    )
    op.create_index("ix_teacher_links_room_code", "teacher_links", ["room_code"])


def downgrade() -> None:
    op.drop_index("ix_teacher_links_room_code", table_name="teacher_links")
    op.drop_table("teacher_links")
