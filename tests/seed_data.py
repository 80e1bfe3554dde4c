"""The seed's end-to-end setup, shared by every backend's test: two notes whose facts appear
nowhere else, and a workspace README that is wrong about all three."""

from pathlib import Path

QUESTION = "what port does staging run on, which host do we deploy to, and with what command?"
FACTS = ("6443", "callisto", "make ship-v2")
WRONG = ("8080", "ganymede", "make deploy")


def write_seed(root: Path) -> tuple[Path, Path]:
    """(notes folder, workspace folder) under ``root``."""
    notes = root / "notes"
    notes.mkdir()
    (notes / "staging-stack.md").write_text(
        "---\nname: staging-stack\ndescription: Staging stack - staging runs on port 6443, deploy host callisto\n"
        "priority: high\n---\nThe staging stack listens on port 6443. We deploy to host callisto.\n"
    )
    (notes / "deploy-command.md").write_text(
        "---\nname: deploy-command\ndescription: Deploy command - we deploy with make ship-v2\n---\n"
        "To deploy, run `make ship-v2` from the repository root.\n"
    )
    ws = root / "workspace"
    ws.mkdir()
    (ws / "README.md").write_text(
        "# Service\n\nStaging runs on port 8080.\nThe deploy host is ganymede.\nDeploy command: `make deploy`.\n"
    )
    return notes, ws
