import os
import tempfile

# Class rooms (ui/room.py, room/store.py): every test's database in a folder of its own run, never
# data/ in the checkout, and never a server named by the environment (a browser test's server inherits these).
os.environ.pop("ANATOMY_DATABASE_URL", None)
os.environ["ANATOMY_DATA_DIR"] = tempfile.mkdtemp(prefix="anatomy-test-data-")

# Lessons skip plotly's figure validation for speed; the tests validate every figure drawn.
os.environ["ANATOMY_VALIDATE_FIGURES"] = "1"


def pytest_collection_modifyitems(config, items):
    _quick_filter(config, items)


# The edit loop (issue 40): `bash scripts/test.sh --quick` runs the unit tests of core/, viz/,
# ui/ and i18n and opens every lesson once in each language (test_all_lessons), in about three
# minutes; the whole suite (browser, AppTests that move every control, servers) before a commit.
QUICK_ALSO = ("test_all_lessons.py::test_lesson_opens_small_and_translated",)


def pytest_addoption(parser):
    parser.addoption("--quick", action="store_true", help="unit tests and every lesson opened once (scripts/test.sh --quick)")


def _runs_the_app(path) -> bool:
    """A module that opens the app, a server or a browser, or compares with transformers."""
    text = path.read_text(errors="ignore")
    return any(word in text for word in ("AppTest", "apptest_util", "live_server", "chromium", "transformers"))


def _quick_filter(config, items):
    if not config.getoption("--quick"):
        return
    keep, drop, seen = [], [], {}
    for item in items:
        if item.path not in seen:
            seen[item.path] = item.path.parent.name != "browser" and not _runs_the_app(item.path)
        quick = seen[item.path] and not item.get_closest_marker("slow")
        if quick or any(item.nodeid.split("/")[-1].startswith(q) for q in QUICK_ALSO):
            keep.append(item)
        else:
            drop.append(item)
    config.hook.pytest_deselected(items=drop)
    items[:] = keep
