"""Alembic runs this for every migration command. room.store.upgrade hands it a connection
already inside a transaction (config.attributes["connection"]); without one it connects to the
URL set as sqlalchemy.url, or to the store's default database (room.store.database_url)."""

import sqlalchemy as sa
from alembic import context

from room.store import get_engine, metadata

config = context.config


def run(connection: sa.Connection) -> None:
    # render_as_batch: SQLite cannot ALTER a column, so later migrations' column changes are written
    # as "copy the table" (Alembic's batch mode); PostgreSQL gets plain ALTERs.
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=metadata,
                      literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
elif config.attributes.get("connection") is not None:
    run(config.attributes["connection"])
else:
    with get_engine(config.get_main_option("sqlalchemy.url")).connect() as connection:
        run(connection)
