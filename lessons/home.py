"""Home: what the app is, and the course map."""
import streamlit as st

from ui.course import PARTS
from ui.frame import tr

st.title(tr("home.title"))
st.markdown(tr("home.intro"))

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
st.markdown(tr("home.how"))
