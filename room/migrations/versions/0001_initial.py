"""The class room's first schema (issue 42): rooms, positions, questions, votes, participants,
rate limits. A copy of room.store's tables as they were at this revision: a migration is history,
so it never imports the current tables.

Revision 0001, the first.
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rooms",
        sa.Column("code", sa.String(6), nullable=False),
        sa.Column("teacher_salt", sa.String(32)),
        sa.Column("teacher_hash", sa.String(64)),
        sa.Column("created_at", sa.Double, nullable=False),
        sa.Column("active_at", sa.Double, nullable=False),
        sa.Column("ended_at", sa.Double),
        sa.PrimaryKeyConstraint("code", name="pk_rooms"),
    )
    op.create_index("ix_rooms_active_at", "rooms", ["active_at"])
    op.create_table(
        "positions",
        sa.Column("room_code", sa.String(6), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("lesson", sa.String(100), nullable=False),
        sa.Column("section", sa.String(100), nullable=False),
        sa.Column("query", sa.Text, nullable=False),
        sa.Column("updated_at", sa.Double, nullable=False),
        sa.PrimaryKeyConstraint("room_code", name="pk_positions"),
        sa.ForeignKeyConstraint(["room_code"], ["rooms.code"], name="fk_positions_room_code"),
    )
    op.create_table(
        "questions",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("room_code", sa.String(6), nullable=False),
        sa.Column("lesson", sa.String(100), nullable=False),
        sa.Column("question_key", sa.String(100), nullable=False),
        sa.Column("n_options", sa.SmallInteger, nullable=False),
        sa.Column("round", sa.SmallInteger, nullable=False),
        sa.Column("state", sa.String(8), nullable=False),
        sa.Column("opened_at", sa.Double, nullable=False),
        sa.Column("updated_at", sa.Double, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_questions"),
        sa.ForeignKeyConstraint(["room_code"], ["rooms.code"], name="fk_questions_room_code"),
        sa.UniqueConstraint("room_code", "lesson", "question_key", name="uq_questions_room_code_lesson_question_key"),
        sa.CheckConstraint("n_options BETWEEN 2 AND 10", name="ck_questions_n_options"),
        sa.CheckConstraint("round IN (1, 2)", name="ck_questions_round"),
        sa.CheckConstraint("state IN ('open', 'closed', 'revealed')", name="ck_questions_state"),
    )
    op.create_table(
        "votes",
        sa.Column("question_id", sa.Integer, nullable=False),
        sa.Column("round", sa.SmallInteger, nullable=False),
        sa.Column("student_id", sa.String(64), nullable=False),
        sa.Column("option", sa.SmallInteger, nullable=False),
        sa.Column("voted_at", sa.Double, nullable=False),
        sa.PrimaryKeyConstraint("question_id", "round", "student_id", name="pk_votes"),
        sa.ForeignKeyConstraint(["question_id"], ["questions.id"], name="fk_votes_question_id"),
        sa.CheckConstraint("round IN (1, 2)", name="ck_votes_round"),
        sa.CheckConstraint("option >= 0", name="ck_votes_option"),
    )
    op.create_table(
        "participants",
        sa.Column("room_code", sa.String(6), nullable=False),
        sa.Column("student_id", sa.String(64), nullable=False),
        sa.Column("joined_at", sa.Double, nullable=False),
        sa.Column("last_seen", sa.Double, nullable=False),
        sa.Column("following", sa.Boolean, nullable=False),
        sa.PrimaryKeyConstraint("room_code", "student_id", name="pk_participants"),
        sa.ForeignKeyConstraint(["room_code"], ["rooms.code"], name="fk_participants_room_code"),
    )
    op.create_table(
        "rate_limits",
        sa.Column("bucket", sa.String(100), nullable=False),
        sa.Column("window", sa.BigInteger, nullable=False),
        sa.Column("hits", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("bucket", "window", name="pk_rate_limits"),
    )


def downgrade() -> None:
    for table in ("rate_limits", "participants", "votes", "questions", "positions"):
        op.drop_table(table)
    op.drop_index("ix_rooms_active_at", "rooms")
    op.drop_table("rooms")
