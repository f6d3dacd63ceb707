"""The sidebar's navigation: Streamlit's own (``st.navigation(position="sidebar")``), every part's
lessons under its heading, made whole for a screen reader (issue 43) by a small fixed script.

Streamlit 1.67 draws the pages as a ``<ul>`` whose children are ``<li>``s and, for each section,
a ``<div>`` holding a header and more ``<li>``s: two serious axe-core violations (list, listitem)
on every page. ``NAV_JS`` takes the list semantics off (role=none on the list and its items: links
under headings, as a table of contents reads), makes each part's header a level-2 heading and names
the navigation landmark in the page's language; Streamlit itself marks the current lesson's link
(aria-current). A mutation observer applies it again whenever Streamlit redraws the navigation.
``NAV_CSS`` draws a focus ring on the links and a bar beside the current one. Both are fixed, so
they travel in the theme's two elements (ui/theme.py): the navigation costs a page run no element.
Our earlier navigation of page links (one element per lesson and part, ~30 a page) was a fifth of
a first page's server time (issue 39).
"""
from __future__ import annotations

import json

import streamlit as st

import i18n

NAV_CSS = """<style>
[data-testid="stSidebarNav"] a[data-testid="stSidebarNavLink"]:focus-visible { outline: 2px solid #2f2d2b;
  outline-offset: -2px; }
[data-testid="stSidebarNav"] a[aria-current="page"] { box-shadow: inset 3px 0 0 #b3303f; }
</style>"""

# The landmark's name in each language, from the catalogues (fixed for the process).
_LABELS = json.dumps({lang: i18n.t(lang, "common.nav_label") for lang in i18n.LANGS}, ensure_ascii=False)
NAV_JS = """<script>
(() => {
  if (window.__anatomyNav) return;
  window.__anatomyNav = true;
  const labels = %s;
  const set = (el, name, value) => { if (el.getAttribute(name) !== value) el.setAttribute(name, value); };
  const mark = () => {
    const nav = document.querySelector('[data-testid="stSidebarNav"]');
    if (!nav) return;
    set(nav, 'aria-label', labels[document.documentElement.lang] || labels.en);
    for (const el of nav.querySelectorAll('ul, li')) set(el, 'role', 'none');
    for (const h of nav.querySelectorAll('[data-testid="stNavSectionHeader"]')) {
      set(h, 'role', 'heading');
      set(h, 'aria-level', '2');
    }
  };
  const watch = new MutationObserver(mark);
  watch.observe(document.body, {childList: true, subtree: true});
  watch.observe(document.documentElement, {attributes: true, attributeFilter: ['lang']});
  mark();
})();
</script>""" % _LABELS


def navigation(pages: dict[str, list]):
    """The page this run shows; every page in the sidebar under its part's heading (the home page
    under none), all parts open."""
    return st.navigation(pages, position="sidebar", expanded=True)
