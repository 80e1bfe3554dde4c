"""The docs a user reads stay true to the code: docs/CLI.md is every command's --help as the
code prints it; the README's install and test commands are the ones CI runs; its links resolve."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cockpit.cli_reference import render

ROOT = Path(__file__).resolve().parents[1]


def test_the_cli_reference_is_current():
    assert (ROOT / "docs" / "CLI.md").read_text(encoding="utf-8") == render(), \
        "docs/CLI.md is stale: python -m cockpit.cli_reference > docs/CLI.md"


def test_the_readme_is_short_and_its_test_command_is_the_one_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    install = readme.split("## Install and run")[1].split("```bash")[1].split("```")[0]
    assert "Python ≥ 3.11" in readme and "torch" not in install and install.strip().endswith("&& cockpit")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -e '.[test,claude-code]'" in readme and "-e '.[test,claude-code]'" in ci
    assert "python -m pytest -q" in readme and "python -m pytest -q" in ci


def test_every_relative_link_in_the_docs_resolves():
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            assert (doc.parent / target).exists(), f"{doc.relative_to(ROOT)}: broken link {target}"


def test_every_data_file_the_code_reads_is_declared_package_data():
    """A file beside the code that the code opens must ship in the wheel (judge.json once did not)."""
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    for package in ("memory", "cockpit"):
        for path in (ROOT / package).rglob("*.json"):
            rel = path.relative_to(ROOT / package).as_posix()
            if rel.startswith("model/"):
                continue  # the model folder is put into the wheel by setup.py
            assert any(Path(rel).match(pattern) for pattern in declared[package]), f"{package}/{rel} is not package data"


def test_the_protocol_table_is_generated_from_the_method_registry_and_current():
    """docs/PROTOCOL.md's method table is what `python -m cockpit.server.methods --write` makes of
    the server's registry: a method, parameter or type changed without regenerating fails here."""
    from cockpit.server import methods

    doc = (ROOT / "docs" / "PROTOCOL.md").read_text(encoding="utf-8")
    assert methods.protocol_doc(doc) == doc, "docs/PROTOCOL.md is stale: python -m cockpit.server.methods --write"
    table = doc.split(methods.TABLE_START)[1].split(methods.TABLE_END)[0]
    documented = set(re.findall(r"^\| `([a-z_.]+)` \|", table, flags=re.M))
    assert documented == set(methods.METHODS) and "spawn" in documented


def test_a_stale_protocol_table_is_caught():
    from cockpit.server import methods

    doc = (ROOT / "docs" / "PROTOCOL.md").read_text(encoding="utf-8")
    stale = doc.replace("`top_k` (integer ≥ 1, optional)", "`top_k` (string, optional)", 1)
    assert stale != doc and methods.protocol_doc(stale) == doc
    with pytest.raises(ValueError, match="no .* section"):
        methods.protocol_doc("# no table here")
