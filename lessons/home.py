"""Home: what the app is, and the course map."""
import streamlit as st

from ui.course import PARTS
from ui.frame import tr
from ui.room import join_box

# A fixed style sheet (no user text) for this page's cards only: a page link is one line,
# clipped with an ellipsis, and at 1024x768 a third of a card cut "B1 · Scaled dot-pro".
# Here the lesson's name wraps instead.
CARDS_CSS = """<style>
.st-key-home-cards [data-testid="stPageLink-NavLink"],
.st-key-home-cards [data-testid="stPageLink-NavLink"] * {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
  height: auto !important; max-width: 100% !important;
}
</style>"""

st.title(tr("home.title"))
st.markdown(tr("home.intro"))
st.html(CARDS_CSS)
join_box()        # a class room's code, typed from the projector (issue 42)

with st.container(key="home-cards"):
    for part, lessons in PARTS:
        st.subheader(tr(f"home.part_{part}"))
        cols = st.columns(3)
        for i, lesson in enumerate(lessons):
            with cols[i % 3].container(border=True):
                name = f"{lesson.code} · {tr(f'course.{lesson.ns}.nav')}"
                if lesson.exists:
                    st.page_link(f"lessons/{lesson.file}", label=name, icon=lesson.icon)
                else:
                    st.markdown(f"{name} — *{tr('home.coming')}*")
                st.caption(tr(f"course.{lesson.ns}.blurb"))

st.divider()
st.markdown(tr("home.how") + "\n\n" + tr("home.counting"))
