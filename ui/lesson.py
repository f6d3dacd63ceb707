"""A lesson as a list of sections (issue 41): the page declares what each section is (its name, the
core functions of its code panel, its draw function) and the frame lays it out.

    lesson = Lesson("b1")                                   # the title and the introduction

    @lesson.section("scale", code=(scaling_by_width,))
    def scale(s, seed):                                     # a fragment: reruns alone
        width = st.slider(...)                              # into s.controls (see below)
        figure(drawn(histogram, ...), key="b1.hist")        # into s.figure, beside the code

    lesson.run(seed=seed)                                   # lays out every section, then draws each

A section is, top to bottom: its title (``{ns}.{name}_title``), its prose (``{ns}.{name}_text``
when the catalogue has it), a presenter slide mark (the prose on one slide, the rest on the next),
the slots ``above`` (``controls`` by default) across the page's width, then the figure slot beside
"The code" of ``code`` (or across the page without code). The fixed parts (prose, code) are laid
out once a page run; a section's draw function runs in its own fragment (ui.batching.fragment), so
a control moved inside it reruns that section alone and re-sends only what its slots hold.

Every section is in a container keyed ``section-{ns}-{name}``: a stable address in the page (the
browser finds it as ``.st-key-section-{ns}-{name}``), what the class room follows.

``run(**values)`` gives each draw function the values it names in its signature (after its slots),
so a page-level control (the seed, the text) is declared once and read by the sections that use it.
Sections drawn by one fragment together (one control above them all moves them all) are declared
without a draw function and drawn by ``@lesson.body``, which receives every section's slots.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import streamlit as st

import i18n
from ui.batching import fragment
from ui.code import beside_code, code_panel
from ui.frame import header
from ui.quiz import try_this
from ui.slides import slide
from ui.words import lang, tr


class Slots:
    """A section's containers by name: ``s.controls``, ``s.figure`` and any other ``above`` or
    ``below`` names it declared. Reading a name it did not declare is an error, not a new slot."""

    def __init__(self, name: str, containers: dict):
        self._name = name
        self._containers = containers

    def __getattr__(self, slot: str):
        try:
            return self.__dict__["_containers"][slot]
        except KeyError:
            raise AttributeError(f"section {self.__dict__['_name']!r} has no slot {slot!r}") from None

    def __getitem__(self, slot: str):
        return getattr(self, slot)


@dataclass
class Section:
    """One unit of a lesson. ``name`` is its stable address and the stem of its catalogue keys.
    ``text`` is the prose's key (or keys, one paragraph each; None for none); by default
    ``{ns}.{name}_text`` when the catalogue has it. ``slide`` puts the presenter's "continued" mark
    after the prose (True), after the ``above`` slot it names, or nowhere (False). ``above``/``below``: slots across the page's width over and under the figure
    row. ``height``/``widths``: the code panel's height and the row's columns (ui.code.beside_code)."""
    name: str
    draw: Callable | None = None
    code: tuple = ()
    title: str | None = None
    title_fields: dict | None = None           # the title's {fields}, known when the page runs (B3's mask)
    text: str | Sequence[str] | None = ""
    slide: bool | str = True
    above: tuple[str, ...] = ("controls",)
    below: tuple[str, ...] = ()
    lead: tuple[str, ...] = ()                 # slots under the title, before the prose (a model switch)
    height: int | None = 520
    widths: tuple[int, int] = (1, 1)
    note: Callable[[], None] | None = None     # drawn once under the prose (a warning, a caption)
    # "The code" across the page's width under the figure and the below slots, not beside the
    # figure (at 1024 px a code panel beside a wide figure would scroll sideways: B4, C1).
    code_below: bool = False
    # slots (above or below) that begin a slide of their own in presenter mode ("continued" marked
    # before each): a figure drawn a part a slide (F3's early checkpoints, then the late ones; B1's
    # scores, weights and output after Q, K, V). A dict gives each slot its slide's own title, a
    # catalogue key (F4's "The two runs"). A mark written by a draw function inside a slot is two
    # containers deep, where presenter mode does not look (ui/classroom.js): declare it here.
    marks: tuple[str, ...] | dict[str, str] = ()
    # A presenter slide titled by this key opens the section, which has no heading on the page
    # (D1: its sections are its slides, named on the slide and in the overview, not on the page).
    opens: str | None = None
    slots: Slots | None = field(default=None, repr=False)


def _has(key: str) -> bool:
    return key in i18n.catalogue(lang())


class Lesson:
    """A lesson page: its header now, its sections as they are declared, laid out and drawn by
    ``run``, then its questions (``quiz``) and anything the page draws after."""

    def __init__(self, ns: str):
        self.ns = ns
        self.sections: list[Section] = []
        self._body: Callable | None = None
        header(ns)

    def section(self, name: str, draw: Callable | None = None, **options):
        """Declare a section; as a decorator, the function is its draw function."""
        if draw is None and not options.pop("layout_only", False):
            def declare(fn: Callable) -> Callable:
                self.sections.append(Section(name, fn, **options))
                return fn
            return declare
        self.sections.append(Section(name, draw, **options))
        return None

    def body(self, fn: Callable) -> Callable:
        """One fragment for the sections without a draw function: ``fn(slots, **values)`` with
        ``slots`` a dict of every section's Slots by name."""
        self._body = fn
        return fn

    def layout(self, section: Section) -> Slots:
        """A section's fixed parts, laid out once a page run; its slots, empty."""
        ns = self.ns
        if section.opens:
            # At the page's top level, not first in the section's container: presenter mode shows a
            # container that opens with its only slide mark as one slide, its mark hidden (ui/classroom.js).
            slide(tr(section.opens))
        with st.container(key=f"section-{ns}-{section.name}"):
            # title=False: a heading that follows a control (B2's "4 heads of width 8"), written by
            # the draw function into s.title, a placeholder at the heading's place.
            title_slot = st.empty() if section.title is False else None
            if title_slot is None and not section.opens:
                st.subheader(tr(section.title or f"{ns}.{section.name}_title", **(section.title_fields or {})))
            lead = {name: st.container() for name in section.lead}
            text = section.text
            if text == "":
                text = f"{ns}.{section.name}_text" if _has(f"{ns}.{section.name}_text") else None
            if text:
                st.markdown("\n\n".join(tr(key) for key in ([text] if isinstance(text, str) else text)))
            if section.note is not None:
                section.note()
            mark = tr("classroom.slide.continued",
                      title=tr(section.title or f"{ns}.{section.name}_title", **(section.title_fields or {})))
            if section.slide is True:
                slide(mark)
            slots = dict(lead)
            for name in section.above:
                if name in section.marks:
                    slide(tr(section.marks[name]) if isinstance(section.marks, dict) else mark)
                slots[name] = st.container()
                if section.slide == name:
                    slide(mark)
            beside = section.code and not section.code_below
            slots["figure"] = (beside_code(*section.code, height=section.height, widths=section.widths)
                               if beside else st.container())
            for name in section.below:
                if name in section.marks:
                    slide(tr(section.marks[name]) if isinstance(section.marks, dict) else mark)
                slots[name] = st.container()
            if section.code and section.code_below:
                code_panel(*section.code, height=section.height)
        if title_slot is not None:
            slots["title"] = title_slot
        section.slots = Slots(section.name, slots)
        return section.slots

    def run(self, **values) -> dict[str, Slots]:
        """Lay out every section, then draw each (its own fragment, or the page's ``body``)."""
        self.arrange()
        return self.draw(**values)

    def arrange(self) -> dict[str, Slots]:
        """``run``'s first half: every section laid out, its slots empty. A page-level control that
        sits inside a section (a model switch under its title) is drawn into its slot between
        ``arrange()`` and ``draw(**values)``, and its value handed to the draw functions. A section
        already laid out is not laid out again: sections declared after that control read (C2's, which
        exist only when the model it chose loaded) are laid out by a second ``arrange()``."""
        return {section.name: section.slots if section.slots is not None else self.layout(section)
                for section in self.sections}

    def draw(self, **values) -> dict[str, Slots]:
        """``run``'s second half: each section drawn (its own fragment, or the page's ``body``)."""
        slots = {section.name: section.slots for section in self.sections}
        for section in self.sections:
            if section.draw is not None:
                _draw(section, values)
        if self._body is not None:
            _body(self._body, slots, values)
        return slots

    def quiz(self, questions: Sequence[tuple[str, int]]) -> None:
        try_this(self.ns, questions)


def _wanted(fn: Callable, values: dict) -> dict:
    """The values ``fn`` names in its signature (after its first argument, the slots)."""
    names = list(inspect.signature(fn).parameters)[1:]
    return {name: values[name] for name in names if name in values}


def _draw(section: Section, values: dict) -> None:
    _section_fragment(section.draw, section.slots, **_wanted(section.draw, values))


@fragment
def _section_fragment(draw: Callable, slots: Slots, **values) -> None:
    """A section's draw function in its fragment, writing into its figure slot unless it names
    another: ``with s.controls:``."""
    with slots.figure:
        draw(slots, **values)
    _ran()


@fragment
def _body_fragment(draw: Callable, slots: dict, **values) -> None:
    draw(slots, **values)
    _ran()


def _ran() -> None:
    # A control moved in this fragment changed the URL with no run of the page: a class room's
    # teacher tells the class now (ui/room.py, issue 42), not at the page's next run.
    from ui.room import after_fragment  # noqa: PLC0415 (ui.room imports the frame)

    after_fragment()


def _body(draw: Callable, slots: dict, values: dict) -> None:
    _body_fragment(draw, slots, **_wanted(draw, values))
