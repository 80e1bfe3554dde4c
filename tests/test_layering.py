"""The import rules of docs/ARCHITECTURE.md: memory/ never imports cockpit/ (nor textual, nor
anthropic); the session engine and headless mode never import textual."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def _files(*parts: str) -> list[Path]:
    out: list[Path] = []
    for part in parts:
        p = ROOT / part
        out.extend([p] if p.is_file() else sorted(p.rglob("*.py")))
    return out


def test_memory_imports_no_cockpit_textual_or_anthropic():
    files = _files("memory")
    assert files, "memory/ has no Python files"
    for f in files:
        bad = _imports(f) & {"cockpit", "textual", "anthropic"}
        assert not bad, f"{f.relative_to(ROOT)} imports {bad}"


def test_session_engine_never_imports_textual():
    files = _files("cockpit/runtime", "cockpit/events.py", "cockpit/headless.py")
    assert files
    for f in files:
        assert "textual" not in _imports(f), f"{f.relative_to(ROOT)} imports textual"


def test_checker_sees_imports(tmp_path):
    # the checker itself must be able to fail
    f = tmp_path / "x.py"
    f.write_text("import textual.app\nfrom cockpit.events import Usage\n")
    assert {"textual", "cockpit"} <= _imports(f)


def test_only_the_claude_code_backend_imports_the_sdk():
    """The claude-code extra is optional: nothing else imports claude_agent_sdk, and importing the
    runtime (manager, the backend's package) does not load it."""
    import subprocess
    import sys

    allowed = ROOT / "cockpit" / "runtime" / "claude_code"
    for f in _files("cockpit", "memory"):
        if "claude_agent_sdk" in _imports(f):
            assert f.parent == allowed and f.name != "__init__.py", f"{f.relative_to(ROOT)} imports claude_agent_sdk"
    code = ("import sys, cockpit.cli, cockpit.headless, cockpit.runtime.manager, cockpit.runtime.claude_code; "
            "assert 'claude_agent_sdk' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_the_tui_reaches_sessions_only_through_the_runtime_protocol():
    # no Session objects, no SessionManager internals: what the TUI knows comes as events
    files = _files("cockpit/tui")
    assert files
    for f in files:
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert node.module not in ("cockpit.runtime.session", "cockpit.runtime.manager"), \
                    f"{f.relative_to(ROOT)} imports {node.module}"
                if node.module == "cockpit.runtime":
                    names = {a.name for a in node.names}
                    assert not names & {"Session", "SessionManager"}, f"{f.relative_to(ROOT)} imports {names}"
            if isinstance(node, ast.Attribute) and node.attr in ("sessions", "get") and \
                    isinstance(node.value, ast.Attribute) and node.value.attr == "manager":
                raise AssertionError(f"{f.relative_to(ROOT)} reads manager.{node.attr} (a Session)")


def test_the_tui_never_probes_the_runtime_or_what_it_returns():
    """The app is typed against ``Runtime``: no getattr/hasattr on the runtime (``manager`` /
    ``runtime``) or on a session it returned — a missing member is mypy's error, not a silent None."""
    probes = []
    for f in _files("cockpit/tui"):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in ("getattr", "hasattr") and node.args:
                target = node.args[0]
                name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                if name in ("manager", "runtime", "session"):
                    probes.append(f"{f.relative_to(ROOT)}:{node.lineno} {node.func.id}({ast.unparse(target)}, …)")
    assert probes == []


def test_real_classes_and_their_fakes_implement_the_same_protocols():
    """Each seam's Protocol is met by the real classes and by every test fake standing in for
    them (same members, async-ness and parameters), so a fake cannot drift from what it fakes."""
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    from helpers import assert_implements
    from test_runtime_tools import FakeEngine as ToolsFakeEngine
    from tui_fakes import FakeEngine, FakeManager

    from cockpit.runtime.manager import SessionManager
    from cockpit.runtime.protocols import AppEngine, BatchRuntime, GridRuntime, MemoryBackend, Runtime, SessionHost
    from cockpit.server.hosts import MultiHostRuntime
    from cockpit.server.remote import RemoteEngine, RemoteRuntime
    from memory import MemoryEngine

    for impl in (MemoryEngine, RemoteEngine, FakeEngine):
        assert_implements(impl, AppEngine)
    assert_implements(ToolsFakeEngine, MemoryBackend)
    for impl in (SessionManager, RemoteRuntime, MultiHostRuntime, FakeManager):
        assert_implements(impl, Runtime)
    assert_implements(MultiHostRuntime, GridRuntime)
    assert_implements(SessionManager, BatchRuntime)
    assert_implements(SessionManager, SessionHost)
    # the check itself can fail: a fake missing a method, or with another signature
    with pytest.raises(AssertionError, match="no save"):
        assert_implements(type("NoSave", (), {"ready": True, "wait_ready": lambda self, timeout=None: True,
                                              "build_preseed": lambda self, query, top_k=5: None,
                                              "search": lambda self, query, top_k=5: []}), MemoryBackend)
    with pytest.raises(AssertionError, match="does not take top_k"):
        assert_implements(type("NoTopK", (ToolsFakeEngine,), {"search": lambda self, query: []}), MemoryBackend)
