"""Every event type survives the wire (a new event type that does not fails here)."""

import dataclasses
import json
import typing

import pytest

from cockpit import events as ev
from cockpit.wire import WireError, event_from_json, event_to_json


def sample(tp, name="x"):
    """A non-default value of type ``tp``."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, __import__("types").UnionType):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        return sample(options[0], name)
    if origin is tuple:
        return (sample(typing.get_args(tp)[0], name),)
    if origin is dict or tp is dict:
        return {"k": [1, "two"]}
    if tp is typing.Any:
        return {"path": "a.py", "n": 3}
    if isinstance(tp, type) and issubclass(tp, ev.SessionStatus):
        return ev.SessionStatus.NEEDS_APPROVAL
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp, vars(ev))
        return tp(**{f.name: sample(hints[f.name], f.name) for f in dataclasses.fields(tp)})
    return {str: f"{name}-value ✓", int: 7, float: 1.25, bool: True}[tp]


@pytest.mark.parametrize("name", sorted(ev.EVENT_TYPES))
def test_every_event_type_round_trips(name):
    cls = ev.EVENT_TYPES[name]
    event = sample(cls)
    wire = json.loads(json.dumps(event_to_json(event)))
    assert wire["type"] == name
    assert event_from_json(wire) == event


def test_the_protocol_document_names_every_event_type():
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "PROTOCOL.md").read_text(encoding="utf-8")
    assert not [name for name in ev.EVENT_TYPES if f"`{name}`" not in doc]


def test_event_types_are_complete():
    expected = {"SessionSpawned", "StatusChanged", "Preseeded", "TextDelta", "ToolCall", "ToolResult",
                "UsageUpdate", "UserMessage", "ApprovalRequested", "ApprovalResolved", "WorktreeChanged",
                "Reviewed", "ContextNotice", "SessionErrorEvent", "SessionDone"}
    assert expected <= set(ev.EVENT_TYPES)


@pytest.mark.parametrize("bad", [
    None, [], {"type": "Nope", "data": {}}, {"type": "TextDelta"}, {"type": "TextDelta", "data": {"session_id": 3, "text": "x"}},
    {"type": "StatusChanged", "data": {"session_id": "s", "status": "dancing"}},
])
def test_bad_payloads_are_wire_errors(bad):
    with pytest.raises(WireError):
        event_from_json(bad)
