"""A class room (issue 42): shared state of a teacher and their students, kept in a database.

No Streamlit, plotly or torch here: `room.store` is the whole storage layer, and the pages that
use it come later (STYLE.md rule 15).
"""
