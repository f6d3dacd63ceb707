"""The rooms of core/ import only downwards, and core/ never reaches for the app's layers."""
import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parent.parent / "core"
ROOMS = ("parts", "text", "models", "calc", "lab")
# What each room may import from core (besides itself).
ALLOWED = {"parts": set(), "text": set(), "models": {"parts", "text"}, "calc": {"parts"},
           "lab": {"parts", "text", "models", "calc"}}
NEVER = ("streamlit", "plotly", "ui", "viz", "lessons", "app", "i18n")


def _imports(path: Path) -> list[str]:
    """Every module named by an import in the file, at any depth (lazy imports count).

    Example: "from core.parts import mha" -> ["core.parts.mha"]; "import core" -> ["core"]
    """
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names += [f"{node.module}.{a.name}" if node.module in ("core", *(f"core.{r}" for r in ROOMS))
                      else node.module for a in node.names]
    return names


def _modules():
    return sorted(p for p in CORE.rglob("*.py"))


def test_no_module_left_at_top_level():
    assert [p.name for p in CORE.glob("*.py")] == ["__init__.py"]
    assert sorted(p.name for p in CORE.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(ROOMS)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(CORE)))
def test_imports_point_down(path):
    rel = path.relative_to(CORE).parts
    room = rel[0] if len(rel) > 1 else None
    for name in _imports(path):
        top = name.split(".")[0]
        assert top not in NEVER, f"{path.name} imports {name}: core/ is PyTorch only"
        if top != "core" or room is None:
            continue
        parts = name.split(".")
        assert len(parts) >= 2 and parts[1] in ROOMS, f"{path.name} imports {name}, which is in no room"
        target = parts[1]
        assert target == room or target in ALLOWED[room], (
            f"core/{room}/{path.name} imports {name}: {room} may import {sorted(ALLOWED[room]) or 'nothing'} of core")


def test_the_checker_sees_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from core.models.model import LlamaDecoder\n    import streamlit\n")
    assert _imports(bad) == ["core.models.model", "streamlit"]
