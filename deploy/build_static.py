"""The files nginx serves itself (deploy/nginx.conf), gathered into one folder and pre-compressed.

    python deploy/build_static.py DEST

DEST/streamlit/static/...      Streamlit's front end, from the installed streamlit package
DEST/app/app/static/plotly.min.js   plotly.js from the installed plotly wheel (as ui/chart.py serves it)
DEST/app/app/static/anatomy-{chart,classroom}.<digest>.js   the components' modules (ui/chart.py, ui/classroom.py)

Every text file of 1 KB or more gets a ``.gz`` beside it, so nginx sends it compressed without
compressing it again for each student (gzip_static). Used by the Dockerfile's proxy stage and by
tests/test_nginx_replicas.py, so both serve exactly what the replicas would.
"""
from __future__ import annotations

import gzip
import shutil
import sys
from pathlib import Path

import plotly
import streamlit

COMPRESS = {".js", ".css", ".html", ".json", ".svg", ".map", ".txt", ".ttf", ".woff", ".mjs"}


def build(dest: Path, level: int = 9) -> Path:
    dest = Path(dest)
    st_static = Path(streamlit.__file__).parent / "static"
    shutil.copytree(st_static, dest / "streamlit", dirs_exist_ok=True)
    app_static = dest / "app" / "app" / "static"
    app_static.mkdir(parents=True, exist_ok=True)
    shutil.copy2(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", app_static / "plotly.min.js")
    from ui.chart import publish_chart_js  # noqa: PLC0415 (the components' modules, as the app publishes them)
    from ui.classroom import publish_classroom_js  # noqa: PLC0415

    publish_chart_js(app_static)
    publish_classroom_js(app_static)
    for path in dest.rglob("*"):
        if path.is_file() and path.suffix in COMPRESS and path.stat().st_size >= 1024:
            with open(path, "rb") as src, gzip.open(f"{path}.gz", "wb", compresslevel=level) as out:
                shutil.copyfileobj(src, out)
    return dest


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # the app's packages (ui.chart)
    build(Path(sys.argv[1]))
