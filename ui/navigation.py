"""The sidebar's navigation: a heading per part of the course and a link per lesson (issue 43).

Streamlit's own navigation (``st.navigation(position="sidebar")``) draws a ``<ul>`` whose children
are not ``<li>``s: two serious axe-core violations (list, listitem) on every page. Here the pages are
those ``st.navigation`` knows (``position="hidden"``), in the same order with the same titles, icons
and addresses, drawn with ``st.page_link`` and no list at all.
"""
from __future__ import annotations

import html
import json

import streamlit as st

from ui.frame import tr

# A fixed style sheet: compact rows as in Streamlit's own navigation, a heading per part, a focus
# ring (Streamlit's page link draws none), and a bar beside the current lesson.
NAV_CSS = """<style>
.st-key-anatomy-nav { gap: 0; }
.st-key-anatomy-nav h2.anatomy-nav-part { font-size: 0.875rem; font-weight: 600; line-height: 1.4;
  margin: 0.9rem 0 0.2rem; padding: 0 0.5rem; color: inherit; }
.st-key-anatomy-nav a[data-testid="stPageLink-NavLink"]:focus-visible { outline: 2px solid #2f2d2b;
  outline-offset: -2px; }
.st-key-anatomy-nav a[aria-current="page"] { box-shadow: inset 3px 0 0 #b3303f; }
</style>"""
# The current lesson's link says so to a screen reader (aria-current, as Streamlit's navigation did)
# and shows a bar on its left beside Streamlit's own shading; the block is a navigation landmark.
# A fixed script: only the page's ASCII address and our catalogue's label (as JSON) go into it.
NAV_JS = """<script>
(() => {{
  const here = {here}, label = {label};
  const mark = () => {{
    const nav = document.querySelector('.st-key-anatomy-nav');
    if (!nav) return false;
    nav.setAttribute('role', 'navigation');
    nav.setAttribute('aria-label', label);
    for (const a of nav.querySelectorAll('a[href]')) {{
      const path = a.getAttribute('href').split(/[?#]/)[0].replace(/\\/+$/, '').split('/').pop();
      if (path === here) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    }}
    return true;
  }};
  if (window.__anatomyNav) window.__anatomyNav.disconnect();
  const start = (tries) => {{
    if (!mark()) {{ if (tries < 40) setTimeout(() => start(tries + 1), 50); return; }}
    window.__anatomyNav = new MutationObserver(mark);
    window.__anatomyNav.observe(document.querySelector('.st-key-anatomy-nav'), {{childList: true, subtree: true}});
  }};
  start(0);
}})();
</script>"""


def draw_navigation(where, pages: dict[str, list], current) -> None:
    """Every page as a link in ``where``, under its part's heading (the home page under none)."""
    with where:
        st.html(NAV_CSS)
        for part, group in pages.items():
            if part:
                st.html(f'<h2 class="anatomy-nav-part">{html.escape(part)}</h2>')
            for page in group:
                st.page_link(page, width="stretch")
        st.html(NAV_JS.format(here=json.dumps(current.url_path), label=json.dumps(tr("common.nav_label"))),
                unsafe_allow_javascript=True)


