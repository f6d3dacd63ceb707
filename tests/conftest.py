import os
import tempfile

# Class rooms (ui/room.py, room/store.py): every test's database in a folder of its own run, never
# data/ in the checkout, and never a server named by the environment (a browser test's server inherits these).
os.environ.pop("ANATOMY_DATABASE_URL", None)
os.environ["ANATOMY_DATA_DIR"] = tempfile.mkdtemp(prefix="anatomy-test-data-")

# F4's built-in pairs are computed by a server at its start (ui.model.warm_real, ~10 s of a core): not
# in the tests' processes and servers, whose F4 tests compute the pairs they open (tests/test_lesson_f4.py).
os.environ["ANATOMY_PRELOAD_PATCHING"] = "0"

# Lessons skip plotly's figure validation for speed; the tests validate every figure drawn.
os.environ["ANATOMY_VALIDATE_FIGURES"] = "1"

# One PyTorch thread in each of scripts/test.sh's two workers (one a core), as the app itself runs
# (ui/preload.py): two workers of two threads each on two cores took a SmolLM2 generation 4-5x as long
# (tests/real_util.one_thread, measured there). The results do not depend on it.
if os.environ.get("PYTEST_XDIST_WORKER"):
    import torch
    torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    _quick_filter(config, items)
    _phase_filter(config, items)


# The edit loop (issue 40): `bash scripts/test.sh --quick` runs the unit tests of core/, viz/,
# ui/ and i18n and opens every lesson once in each language (test_all_lessons), in about three
# minutes; the whole suite (browser, AppTests that move every control, servers) before a commit.
QUICK_ALSO = ("test_all_lessons.py::test_lesson_opens_small_and_translated",)


def pytest_addoption(parser):
    parser.addoption("--quick", action="store_true", help="unit tests and every lesson opened once (scripts/test.sh --quick)")
    parser.addoption("--phase", choices=("all", "shared", "alone"), default="all",
                     help="shared: all but the tests that need the machine to themselves (ALONE); alone: only those")


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


# scripts/test.sh runs the suite on two pytest-xdist workers (issue 40), then these tests in one
# process with nothing beside them: they compare or bound times (two replicas against one, a
# student's page following within 2 s, a load under 1 s), or load the whole machine themselves
# (48 sessions at once), so a neighbour's work would make them fail or starve it.
ALONE = (
    "tests/test_nginx_replicas.py",
    "tests/test_class_opens_at_once.py",
    "tests/browser/test_room.py::test_teacher_and_student",
    "tests/test_date_model.py::test_weights_checksum_size_and_load_time",
    "tests/test_toy_embedding.py::test_embedding_is_fast_and_deterministic",
)


def _alone(item) -> bool:
    return any(item.nodeid == a or item.nodeid.startswith(a + ("" if a.endswith(".py") else "[")) for a in ALONE)


def pytest_ignore_collect(collection_path, config):
    """--phase alone does not import the modules that hold none of ALONE (its collection is short)."""
    if config.getoption("--phase") == "alone" and collection_path.suffix == ".py" \
            and collection_path.name.startswith("test_"):
        files = {a.split("::")[0] for a in ALONE}
        return not any(collection_path.as_posix().endswith(f) for f in files)
    return None


def _phase_filter(config, items):
    phase = config.getoption("--phase")
    if phase == "all":
        return
    keep, drop = [], []
    for item in items:
        (keep if _alone(item) == (phase == "alone") else drop).append(item)
    config.hook.pytest_deselected(items=drop)
    items[:] = keep
