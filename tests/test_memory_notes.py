"""Parsing and folder walking (memory/notes.py): forgiving, never executing, never writing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_memory_support import DATA

from memory.notes import FileEntry, NoteError, parse_bytes, read_note, scan


def parse(name: str):
    raw = (DATA / "malformed" / name).read_bytes()
    return parse_bytes(raw, name)


def test_bom_and_crlf_are_read():
    n = parse("bom.md")
    assert (n.name, n.description) == ("bom-note", "A note saved with a UTF-8 byte order mark.")
    c = parse("crlf.md")
    assert c.name == "crlf-note" and c.description == "A note with Windows line ends."
    assert "\r" not in c.body and c.body == "Body line one.\nBody line two."


def test_no_frontmatter_falls_back_to_file_name_and_first_line():
    n = parse("no-frontmatter.md")
    assert n.name == "no-frontmatter"
    assert n.description == "Backups run nightly at 02:00 UTC"
    assert not n.has_description
    assert any("no frontmatter" in w for w in n.warnings)


def test_typed_yaml_values_are_coerced_with_warnings():
    n = parse("typed-yaml.md")
    assert n.name == "2024" and isinstance(n.name, str)
    assert n.description == "first part, second part"
    assert n.type == "2024-05-01"
    assert n.priority is True
    joined = " ".join(n.warnings)
    assert "'description' is a YAML list" in joined
    # plain scalars stay text (no YAML 1.1 int/date): no warning for them
    assert "'name'" not in joined and "'type'" not in joined


@pytest.mark.parametrize("value", ["22:30", "yes", "no", "on", "1e3", "0o17", "2025-02-30"])
def test_yaml_11_scalars_stay_text(value):
    raw = f"---\nname: {value}\ndescription: {value}\ntype: {value}\n---\nbody\n".encode()
    n = parse_bytes(raw, "n.md")
    assert (n.name, n.description, n.type) == (value, value, value)
    assert n.warnings == []


@pytest.mark.parametrize("value,want", [("true", True), ("yes", True), ("on", True), ("high", True), ("1", True),
                                        ("2", True), ("0.5", True), ("false", False), ("no", False),
                                        ("off", False), ("0", False), ("~", False), ("''", False)])
def test_priority_keeps_its_meaning(value, want):
    raw = f"---\nname: n\ndescription: d\npriority: {value}\n---\nbody\n".encode()
    assert parse_bytes(raw, "n.md").priority is want


def test_unsafe_tag_is_never_executed(tmp_path):
    marker = Path("/tmp/cockpit-pwned")
    marker.unlink(missing_ok=True)
    with pytest.raises(NoteError, match="invalid YAML"):
        parse("unsafe-tag.md")
    assert not marker.exists()


def test_yaml_bomb_is_refused_quickly():
    with pytest.raises(NoteError, match="alias"):
        parse("yaml-bomb.md")


def test_invalid_yaml_binary_and_undecodable_are_refused():
    with pytest.raises(NoteError, match="invalid YAML"):
        parse("invalid-yaml.md")
    raw = b"---\nname: b\ndescription: \"unclosed\n---\nbody\n"
    with pytest.raises(NoteError, match=r"invalid YAML frontmatter \(line 3\): while scanning a quoted scalar"):
        parse_bytes(raw, "b.md")  # the file's line where the bad value begins
    raw = b"---\nname: b\ndescription: [one,\n  two\nother: 1\n---\nbody\n"
    with pytest.raises(NoteError, match=r"\(line 3\): while parsing a flow sequence; [^;]*expected ',' or '\]'"
                                        r".* on line 5$"):
        parse_bytes(raw, "c.md")  # where it began, and where the parser stopped
    with pytest.raises(NoteError, match="binary"):
        parse_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "img.md")
    with pytest.raises(NoteError, match="not UTF-8"):
        parse_bytes(b"---\nname: x\n---\ncaf\xe9 \xff\xfe", "latin.md")


@pytest.mark.parametrize("value,expected", [
    ("high", True), ("HIGH", True), ("High", True), ("true", True), ("yes", True),
    ("low", False), ("", False), ("false", False), ("0", False),
])
def test_priority_values(value, expected):
    raw = f"---\nname: p\ndescription: d\npriority: {value}\n---\nb\n".encode()
    assert parse_bytes(raw, "p.md").priority is expected


def test_frontmatter_that_is_not_a_mapping_is_ignored_with_warning():
    n = parse_bytes(b"---\n- just\n- a list\n---\nFirst line here.\n", "list.md")
    assert n.name == "list" and n.description == "First line here."
    assert any("not a mapping" in w for w in n.warnings)


def test_claude_code_memory_note_reads_as_is():
    raw = (b"---\nname: user-prefers-tabs\ndescription: The user prefers tabs over spaces.\n"
           b"type: user\n---\nApplies to every language except YAML.\n")
    n = parse_bytes(raw, "user_prefers_tabs.md")
    assert (n.name, n.type, n.priority) == ("user-prefers-tabs", "user", False)


def test_content_hash_is_of_raw_bytes():
    a = parse_bytes(b"---\nname: a\ndescription: d\n---\nx\n", "a.md")
    b = parse_bytes(b"---\nname: a\ndescription: d\n---\nx\n\n", "a.md")
    assert a.hash != b.hash and len(a.hash) == 64


def test_scan_walks_subfolders_skips_index_hidden_and_specials(tmp_path):
    root = tmp_path / "notes"
    (root / "sub" / "deep").mkdir(parents=True)
    (root / "a.md").write_text("x")
    (root / "sub" / "deep" / "b.md").write_text("x")
    (root / "MEMORY.md").write_text("- [a](a.md)")
    (root / ".hidden.md").write_text("x")
    (root / ".git").mkdir()
    (root / ".git" / "c.md").write_text("x")
    (root / "readme.txt").write_text("x")
    (root / "dir.md").mkdir()
    os.mkfifo(root / "pipe.md")
    outside = tmp_path / "outside.md"
    outside.write_text("secret")
    (root / "escape.md").symlink_to(outside)
    (root / "dangling.md").symlink_to(root / "nowhere.md")
    (root / "inside-link.md").symlink_to(root / "a.md")
    entries, skipped = scan(root)
    assert sorted(e.rel for e in entries) == ["a.md", "inside-link.md", "sub/deep/b.md"]
    reasons = dict(skipped)
    assert reasons["escape.md"] == "symlink points outside the notes folder"
    assert reasons["dangling.md"] == "broken symlink"
    assert reasons["dir.md"] == "a directory, not a note file"
    assert reasons["pipe.md"] == "not a regular file"
    assert all(e.size > 0 and e.mtime_ns > 0 for e in entries)


def test_read_note_reports_unreadable(tmp_path):
    entry = FileEntry("gone.md", str(tmp_path / "gone.md"), 0, 0)
    with pytest.raises(NoteError, match="unreadable"):
        read_note(entry)
