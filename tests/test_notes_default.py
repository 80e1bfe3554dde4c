"""The default notes folder (no --notes): ./notes, else, in a subfolder of a git work tree, the
notes/ folder at its root; the same rule for every command, and errors name the absolute path."""

import argparse
import json
from pathlib import Path

from helpers import make_repo

from cockpit.cli import main
from cockpit.headless import _notes_folder
from cockpit.notes_location import resolve_notes


def _repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {"README.md": "hi\n"})
    (repo / "notes").mkdir()
    (repo / "notes" / "staging.md").write_text("---\nname: staging\ndescription: where staging runs\n---\n"
                                               "Staging runs on port 8080.\n")
    (repo / "sub" / "deeper").mkdir(parents=True)
    return repo


def test_from_a_subfolder_the_default_is_the_repository_roots_notes(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    sub = repo / "sub" / "deeper"
    for value in (None, "notes"):
        assert resolve_notes(value, sub) == (repo / "notes").resolve()
    (sub / "notes").mkdir()  # a notes/ of its own wins
    assert resolve_notes(None, sub) == (sub / "notes").resolve()
    assert resolve_notes("other", sub) == (sub / "other").resolve()  # a folder named is as named
    monkeypatch.chdir(repo / "sub")
    assert _notes_folder(argparse.Namespace(notes=None)) == (repo / "notes").resolve()  # cockpit run's


def test_memory_search_from_a_subfolder_finds_the_roots_notes(tmp_path, monkeypatch, capsys):
    repo = _repo(tmp_path)
    monkeypatch.chdir(repo / "sub")
    assert main(["memory", "search", "staging", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert [h["name"] for h in hits][:1] == ["staging"]


def test_no_notes_anywhere_names_the_absolute_path(tmp_path, monkeypatch, capsys):
    repo = make_repo(tmp_path / "bare", {"README.md": "hi\n"})
    (repo / "sub").mkdir()
    monkeypatch.chdir(repo / "sub")
    assert main(["memory", "search", "staging"]) == 2
    err = capsys.readouterr().err
    assert err == f"cockpit: error: notes folder {(repo / 'sub' / 'notes').resolve()} does not exist (use --notes DIR)\n"
