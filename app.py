"""Transformer Anatomy: navigation, language and device, the frame around every lesson.

Run with:  streamlit run app.py
"""
# First: every lazy import and once-per-process set-up, before any lesson runs (ui/preload.py).
import ui.preload  # noqa: F401, I001

import streamlit as st
import torch

from ui import classroom, room
from ui.course import PARTS, ROOT
from ui.frame import language_and_device_controls, sanitise_url, tr
from ui.navigation import navigation
from ui.theme import theme_css

# The lessons' tensors are tiny: one thread per script run is as fast as two, and it leaves the
# other core to the next student's run (and, on a laptop, to the browser drawing the figures).
torch.set_num_threads(1)

st.set_page_config(page_title="Transformer Anatomy · Transformer 解剖室", page_icon="🔬", layout="wide")

sanitise_url()
theme_css()          # text contrast (ui/theme.py)
language_and_device_controls()
room.start()           # a class room: ?room=<CODE> (ui/room.py), before presenter mode reads the URL
classroom.start()      # presenter mode: ?present=1 (ui/classroom.py)

pages: dict[str, list] = {
    "": [st.Page(str(ROOT / "lessons" / "home.py"), title=tr("home.nav"), icon=":material/home:",
                 default=True)],
}
for part, lessons in PARTS:
    present = [
        st.Page(str(ROOT / "lessons" / lesson.file), title=f"{lesson.code} · {tr(f'course.{lesson.ns}.nav')}",
                icon=lesson.icon, url_path=lesson.url_path)
        for lesson in lessons if lesson.exists
    ]
    if present:
        pages[tr(f"home.part_{part}")] = present

current = navigation(pages)   # the sidebar's (ui/navigation.py)
# Copy link / presenter mode (its bar, keys and one section at a time), in course order.
order = [page for group in pages.values() for page in group]
classroom.bar(current, order)
room.follow(current, order)   # a student's screen follows the teacher (ui/room.py)
current.run()
room.after_page(current)
