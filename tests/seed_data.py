"""The seed's end-to-end setup, shared by every backend's test: two notes whose facts appear
nowhere else (copied from the memory tests' fixture folder, ``tests/data/memory/seed``: one
spelling of the seed everywhere), and a workspace README that is wrong about all three."""

import shutil
from pathlib import Path

QUESTION = "what port does staging run on, which host do we deploy to, and with what command?"
FACTS = ("6443", "callisto", "make ship-v2")
WRONG = ("8080", "ganymede", "make deploy")
FIXTURE = Path(__file__).resolve().parent / "data" / "memory" / "seed"  # the memory tests' seed folder
SEED_NOTES = ("staging-stack", "deploy-command")  # the two whose facts appear nowhere else


def write_seed(root: Path) -> tuple[Path, Path]:
    """(notes folder, workspace folder) under ``root``."""
    notes = root / "notes"
    notes.mkdir()
    for name in SEED_NOTES:  # the same two files the memory tests' fixture folder holds
        shutil.copyfile(FIXTURE / f"{name}.md", notes / f"{name}.md")
    ws = root / "workspace"
    ws.mkdir()
    (ws / "README.md").write_text(
        "# Service\n\nStaging runs on port 8080.\nThe deploy host is ganymede.\nDeploy command: `make deploy`.\n"
    )
    return notes, ws
