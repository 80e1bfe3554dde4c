"""One agent session: an asyncio task running the Messages API tool loop in its working tree.

States (``cockpit.events.SessionStatus``), known from the loop itself:

``queued`` (waiting for a concurrency slot) → ``starting`` → ``preseeding`` (only when preseed
is on; detail "waiting for model warm-up…" while the embedder loads) → ``streaming`` (a request
is in flight) ⇄ ``running tool`` ⇄ ``needs approval`` (a tool call waits for the user) →
``waiting for you`` (interactive sessions after ``end_turn``, ``max_tokens``, the turn cap or a
full context; a follow-up via ``SessionManager.send`` resumes ``streaming``) → ``done`` |
``error`` | ``killed``. Non-interactive (headless) sessions go straight to ``done`` after the
model ends its turn (``error`` when the turn cap is hit), and an approval nobody can answer is
denied with the reason told to the model. At a spend cap (:mod:`cockpit.runtime.budget`, checked
after each response and before each request) an interactive session is ``budget reached`` until
the cap is raised; a headless one ends ``error`` (kind ``budget``). A session waiting for the user
(approval, follow-up or a higher cap) gives its concurrency slot back.

Turn handling:

- ``stop_reason == "tool_use"``: each ``tool_use`` block is prepared (validated; an edit's diff
  computed), judged by the session's :class:`~cockpit.runtime.permissions.PermissionPolicy`
  (allow / ask / deny), run, and published (ToolCall / ApprovalRequested / ApprovalResolved /
  ToolResult events); the results go back in one user message as ``tool_result`` blocks.
- ``"max_tokens"``: the turn ends visibly; unfinished tool calls in it are not run.
- ``None`` (stream ended without ``message_stop``): an interrupted turn, retried, then an error
  (see :mod:`cockpit.runtime.model_call`). Consumers drop the partial text of the current turn
  when a StatusChanged detail starts with "retry".

The first user message holds an ``<env>`` block (working directory, worktree branch, permission
mode), the preseed block (when any) and the task, so the system prompt and tools stay identical
for every session (cached once, shared). Prompt caching: the system block, the last tool
definition and the last content block of each request carry ``cache_control``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cockpit.events import ApprovalRequested, ContextNotice, InstructionsLoaded, RuleApplied, ToolCall, ToolResult
from cockpit.runtime import prompts, scratch
from cockpit.runtime.bash import session_env
from cockpit.runtime.history import RAN_OUTSIDE
from cockpit.runtime.model_call import ContextFull, ModelCaller, SessionFailure, block_to_param, one_line
from cockpit.runtime.permissions import Decision, PermissionPolicy, rules_text, session_rules_for
from cockpit.runtime.query import preseed_query
from cockpit.runtime.session_base import S, SessionBase, SessionSpec, denial_message
from cockpit.runtime.tools import PreparedCall, ToolOutcome, ToolRunner, tool_definitions
from cockpit.runtime.workspace import PathRefused

if TYPE_CHECKING:  # pragma: no cover
    pass

CONTEXT_WARN = 0.8
STATE_CHANGED = ("An allow rule matches this command, but the shell's state changed since the session started "
                 "(exported variables such as PATH, LD_PRELOAD or PYTEST_ADDOPTS, or shell options): a rule cannot "
                 "vouch for what the command runs now.")


class Session(SessionBase):
    """Cockpit's own loop (see the module doc); the shared surface is :class:`SessionBase`'s.
    Adds ``policy`` (the permission policy), ``tools`` (the tool runner) and ``model`` (requests)."""

    def _init_backend(self) -> None:
        self._warned_context = False
        self.instructions_text = ""
        self.instruction_files: tuple[str, ...] = ()
        self._path_rules: list = []  # path-scoped rules not yet given to the model
        self._described: list = []  # "agent requested" rules (matched to the task by meaning)
        spec = self.spec
        self.policy = PermissionPolicy(spec.permission_mode, self._cfg.allow, self._cfg.deny, root=spec.cwd,
                                       sandboxed=spec.sandbox == "bubblewrap", protected=tuple(self._cfg.protected))
        self._sandbox_tmp: str | None = None
        self._proxy_dir: str | None = None
        self._proxy: Any = None
        self._protected_seen: dict[str, str] = {}  # protected paths' fingerprints known (see _protected_after)
        self._protected_git = False  # the tree was a git tree at the start: a failing git fails closed
        self._protected_base: str | None = None  # the commit protected paths are put back to
        keys = tuple(s for s in (self._cfg.api_key, self._cfg.auth_token) if s)
        env = session_env(dict(os.environ), secrets_to_strip=keys,
                          extra={"COCKPIT_SESSION_ID": self.id}, keep=tuple(self._cfg.pass_env))
        self.tools = ToolRunner(spec.cwd, self.engine, spec.top_k, env=env, bash_timeout=self._cfg.bash_timeout)
        self.model = ModelCaller(self._host, self.id, self.spec.model, self.acct, self.rec.emit,
                                 self._redact, self._cfg)

    def system_prompt(self) -> str:
        return prompts.system_prompt(self.preseed_enabled)

    def _header_extra(self) -> dict[str, Any]:
        return {"instructions": list(self.instruction_files), "instructions_text": self.instructions_text}

    # -- main loop ------------------------------------------------------------------------
    async def _main(self) -> None:
        await self._setup_sandbox()
        await self._load_instructions()
        if self.resumed_from is not None:
            self._resume_setup()
        else:
            await self._preseed()
            self._open_transcript()
            first = self._first_content or prompts.first_user_content(
                self.task, self.preseed_text, prompts.env_block(self.spec), await self._rules_for_task())
            self._add_message("user", first)
        need_model = not self.messages or self.messages[-1]["role"] == "user"
        while True:
            kind, detail = await self._turns() if need_model else ("resumed", "")
            if need_model:
                await self._protected_at_rest()
            need_model = True
            if not self.interactive:
                if kind == "turn_cap":
                    raise SessionFailure("turn_cap", detail)
                if kind == "context_full":
                    raise SessionFailure("context_full", detail)
                return
            if await self._wait_follow_up(detail) is None:  # ended by a review action or a continuation
                return

    async def _cleanup(self) -> None:
        await self.tools.close()
        if self._proxy is not None:
            await self._proxy.close()
        if self._sandbox_tmp is not None:  # (with the .gitconfig beside it)
            await asyncio.to_thread(scratch.remove, self._sandbox_tmp)
        if self._proxy_dir is not None:
            await asyncio.to_thread(shutil.rmtree, self._proxy_dir, True)

    def _notes_glob(self) -> str:
        """``<notes folder>/**`` relative to the tree, when the notes folder lies in the project."""
        notes = getattr(self.engine, "notes_dir", None)
        if notes is None:
            return ""
        w = self.spec.worktree
        root = Path(w.repo) if w is not None else self._tree()
        try:
            rel = Path(notes).resolve().relative_to(root.resolve()).as_posix()
        except (ValueError, OSError):
            return ""
        return f"{rel}/**" if rel not in ("", ".") else ""

    def _tree(self) -> Path:
        """What the session may write: its worktree, or the workspace when it works in place."""
        w = self.spec.worktree
        return Path(w.path) if w is not None else Path(self.spec.cwd)

    async def quiesce(self) -> bool:
        """Its shell (and so its sandbox, and everything started in it) is ended; the next command
        starts a new one. The session lives on."""
        if self.status.is_final:
            return False
        await self.tools.bash.close()
        return True

    async def _setup_sandbox(self) -> None:
        """The protected paths' hooks folder, and — when the session is sandboxed — the sandbox
        its shell starts in (:mod:`cockpit.runtime.sandbox`), with the allowlist proxy when its
        network is ``allow``."""
        from cockpit.runtime import sandbox as sb
        from cockpit.runtime.protected import hooks_path_of

        tree = self._tree()
        self.policy.hooks_path = await asyncio.to_thread(hooks_path_of, tree)
        notes = self._notes_glob()
        if notes:  # a note written in the tree reaches every later session's first message
            self.policy.protected = (*self.policy.protected, notes)
        await asyncio.to_thread(self._protected_start)
        if self.spec.sandbox != "bubblewrap":
            return
        worktrees = self._cfg.resolved_worktrees_dir()
        self._sandbox_tmp = tmp = await asyncio.to_thread(sb.session_tmp, worktrees)
        settings = replace(self._cfg.sandbox_settings(), network=self.spec.network,
                           protected=self.policy.protected)
        proxy_sock = None
        if self.spec.network == "allow":
            from cockpit.runtime.netproxy import AllowlistProxy

            # not in the writable temp folder (the socket could be swapped for a link): its own
            # folder, bound read-only inside
            self._proxy_dir = await asyncio.to_thread(sb.proxy_dir)
            proxy_sock = os.path.join(self._proxy_dir, "proxy.sock")
            self._proxy = AllowlistProxy(settings.allow_hosts, proxy_sock)
            await self._proxy.start()
        w = self.spec.worktree
        conf = await asyncio.to_thread(sb.confinement_for, tree, self.spec.cwd, tmp, settings,
                                       w.branch if w is not None else None, proxy_sock,
                                       (str(worktrees), str(self._cfg.resolved_sessions_dir())))
        backend = sb.BACKENDS[self.spec.sandbox]
        self.tools.bash.wrap = lambda argv: backend.command(conf, argv)

    async def _load_instructions(self) -> None:
        """CLAUDE.md / AGENTS.md / rule files of the project (``memory.instructions``): always-apply
        ones into the second system block, path-scoped ones kept for the task and tool results."""
        if self.spec.backend != "cockpit":
            return  # another agent (Claude Code) reads its own instruction files
        try:
            from memory.instructions import discover

            found, warnings = await asyncio.to_thread(discover, self.spec.workspace)
        except Exception as exc:  # instructions are an aid: never a reason to fail the session
            found, warnings = [], [f"instruction files not read: {type(exc).__name__}: {exc}"]
        always = [i for i in found if i.scope == "always"]
        on_request = [i for i in found if i.scope == "description"]
        self._path_rules = [i for i in found if i.scope == "paths"]
        self._described = on_request
        self.instructions_text = prompts.instructions_text(always, on_request)
        self.instruction_files = tuple(i.rel for i in always)
        if found or warnings:
            self.rec.emit(InstructionsLoaded(
                self.id, tuple(i.rel for i in always), tuple(i.rel for i in self._path_rules),
                tuple(i.rel for i in on_request), tuple(warnings)))

    async def _rules_for_task(self) -> str:
        """The rule files the task calls for, whole: path-scoped ones whose globs match a path the
        task names, and "agent requested" ones whose description is about the task (judged with
        the engine's model and calibrated gate, like notes)."""
        from memory.instructions import described_for_task, for_task

        hits = for_task(self._path_rules, self.task) if self._path_rules else []
        similarity = getattr(self.engine, "similarity", None)
        if self._described and similarity is not None and self.preseed_enabled:
            try:
                hits += await asyncio.to_thread(described_for_task, self._described, preseed_query(self.task),
                                                similarity)
            except Exception as exc:  # an aid only: the rules stay listed in the system block
                self._note("rules_error", message=one_line(f"{type(exc).__name__}: {exc}"))
        for ins in hits:
            if ins in self._path_rules:
                self._path_rules.remove(ins)
            self.rec.emit(RuleApplied(self.id, ins.rel, "task"))
        return "\n\n".join(prompts.rule_text(i) for i in hits)

    def _rules_for_path(self, tool_use_id: str, given: str) -> str:
        """Path-scoped rules (not yet given) for a file a tool touched ("" when none)."""
        if not self._path_rules or not given:
            return ""
        try:
            target = self.tools.workspace.resolve(given)
        except PathRefused:
            return ""
        w = self.spec.worktree
        from memory.instructions import project_root

        root = Path(w.path) if w is not None else project_root(self.spec.workspace)
        try:
            rel = target.relative_to(root.resolve()).as_posix()
        except ValueError:
            return ""
        hits = [i for i in self._path_rules if i.matches(rel)]
        for ins in hits:
            self._path_rules.remove(ins)
            self.rec.emit(RuleApplied(self.id, ins.rel, tool_use_id))
        return "\n\n".join(prompts.rule_text(i) for i in hits)

    async def _turns(self) -> tuple[str, str]:
        """Model turns for one user message. Returns (kind, detail); kind end | max_tokens |
        turn_cap | context_full."""
        cap = self._cfg.max_turns
        system = prompts.system_prompt(self.preseed_enabled)
        tools = tool_definitions(self.spec.tools_style)
        for _ in range(cap):
            await self._budget_gate()  # at a spend cap: pause (headless: end) before the request
            request = self.model.build(system, tools, self.messages, self.instructions_text)
            try:
                msg = await self.model.call(request, lambda d: self._set(S.STREAMING, d))
            except ContextFull as full:
                return self._context_full(str(full))
            self._check_context(msg)
            content = [block_to_param(b) for b in msg.content]
            self.stop_reason = msg.stop_reason
            text = "".join(b["text"] for b in content if b["type"] == "text")
            if msg.stop_reason == "max_tokens":
                content = [b for b in content if b["type"] != "tool_use"] or [
                    {"type": "text", "text": "(output cut at max_tokens)"}
                ]
                self._add_message("assistant", content)
                self.final_text = text
                detail = f"stopped: max_tokens reached ({self._cfg.max_tokens} output tokens)"
                self._set(self.status, detail)
                return "max_tokens", detail
            if not content:
                content = [{"type": "text", "text": "(empty response)"}]
            self._add_message("assistant", content)
            if text:
                self.final_text = text
            calls = [b for b in content if b["type"] == "tool_use"]
            if msg.stop_reason == "tool_use" and calls:
                await self._budget_gate()  # the response that reached a cap: its tools wait too
                await self._run_tools(msg, calls)
                continue
            return "end", ""
        detail = f"turn cap reached ({cap} model turns)"
        self._set(self.status, detail)
        return "turn_cap", detail

    # -- context ----------------------------------------------------------------------------
    def _check_context(self, msg: Any) -> None:
        window = self.acct.context_window
        used = self.acct.context_tokens
        applied = getattr(getattr(msg, "context_management", None), "applied_edits", None)
        if applied:
            cleared = sum(getattr(e, "cleared_input_tokens", 0) or 0 for e in applied)
            self.rec.emit(ContextNotice(self.id, "managed", used, window,
                                        f"the API cleared old tool results ({cleared:,} tokens)"))
        if window and used >= CONTEXT_WARN * window and not self._warned_context:
            self._warned_context = True
            pct = round(100 * used / window)
            self.rec.emit(ContextNotice(self.id, "warn", used, window,
                                        f"context {pct}% full ({used:,} of {window:,} tokens)"))

    def _context_full(self, message: str) -> tuple[str, str]:
        self.context_full = True
        window = self.acct.context_window
        self.rec.emit(ContextNotice(self.id, "full", self.acct.context_tokens, window, one_line(message)))
        detail = "context full: continue in a fresh session with a summary"
        self._set(self.status, detail)
        return "context_full", detail

    # -- tools ------------------------------------------------------------------------------
    async def _run_tools(self, msg: Any, calls: list[dict]) -> None:
        raw_inputs = {b.id: b.input for b in msg.content if getattr(b, "type", None) == "tool_use"}
        results = []
        touched = False
        for call in calls:
            raw = raw_inputs.get(call["id"], call["input"])
            self._set(S.RUNNING_TOOL, call["name"])
            self.rec.emit(ToolCall(self.id, call["id"], call["name"], raw))
            out, changed = await self._one_tool(call["id"], call["name"], raw)
            touched = touched or changed
            self.rec.emit(ToolResult(self.id, call["id"], call["name"], out.content, out.is_error))
            self.note_tool_use(call["name"], raw, out.is_error)
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call["id"], "content": out.content}
            if out.is_error:
                block["is_error"] = True
            results.append(block)
        self._add_message("user", results)
        if touched:
            await self._report_changes()

    async def _one_tool(self, tool_use_id: str, name: str, raw: Any) -> tuple[ToolOutcome, bool]:
        """(outcome, may have changed files)."""
        prepared = await self.tools.prepare_call(name, raw)
        if isinstance(prepared, ToolOutcome):
            return prepared, False
        try:  # a long line takes milliseconds to judge: off the event loop
            decision = await asyncio.to_thread(self.policy.check, prepared.action)
        except Exception as exc:  # never a crash of the turn: the user decides (headless: denied)
            decision = Decision("ask", f"the permission check failed ({type(exc).__name__}: {exc})")
        if decision.verdict == "deny":
            return ToolOutcome(f"Permission denied: {decision.reason}", True), False
        if decision.verdict == "ask":
            allowed, reason = await self._ask(tool_use_id, prepared, decision.reason)
            if not allowed:
                return ToolOutcome(denial_message(reason), True), False
            self._set(S.RUNNING_TOOL, name)
        out = await self.tools.execute(prepared, guarded=decision.by_rule)
        if out.state_changed:  # a rule cannot vouch for a command in a shell the model changed
            allowed, reason = await self._ask(tool_use_id, prepared, STATE_CHANGED)
            if not allowed:
                return ToolOutcome(denial_message(reason), True), False
            self._set(S.RUNNING_TOOL, name)
            out = await self.tools.execute(prepared)
        if self.spec.sandbox == "bubblewrap" and prepared.action.kind == "bash" and not out.state_changed:
            out = await self._blocked(tool_use_id, prepared, out)
        if prepared.action.kind == "bash":
            if self.spec.sandbox == "bubblewrap":  # first: the protected-path check reads the branch's tip
                out = await self._take_in_commits(out)
            out = await self._protected_after(tool_use_id, prepared, out)
        elif prepared.action.kind in ("edit", "create"):  # asked before it was written: known now
            await asyncio.to_thread(self._protected_refresh, prepared.action.target)
        # a command that prints the API key (`env`, `cat /proc/$PPID/environ`) must not hand it to
        # the model, the panes or the transcript
        out = ToolOutcome(self._redact(out.content), out.is_error)
        changed = prepared.action.kind in ("bash", "edit", "create")
        if prepared.name == "str_replace_based_edit_tool" and not out.is_error:
            rules = self._rules_for_path(tool_use_id, str(prepared.data.get("path", "")))
            if rules:
                out = ToolOutcome(out.content + "\n\n" + rules, out.is_error)
        return out, changed

    async def _ask(self, tool_use_id: str, call: PreparedCall, why: str = "",
                   outside: bool = False, summary: str = "") -> tuple[bool, str]:
        """Ask the user (any client) about ``call``; (allowed, reason). ``why``: what the user is
        told first (a protected path, the shell's state, what the sandbox blocked). ``outside``: a
        re-run outside the sandbox — allowed once only, never as a rule."""
        rules = [] if outside else session_rules_for(call.action)
        detail = call.detail or call.summary
        summary = summary or (f"outside the sandbox: {call.summary}" if outside else call.summary)
        ask = ApprovalRequested(self.id, tool_use_id, call.name, call.action.kind, summary,
                                f"{why}\n\n{detail}" if why else detail, rules_text(rules))
        allowed, scope, reason = await self._await_answer(ask)
        if allowed and scope == "session":
            for rule in rules:
                self.policy.add_session_rule(rule)
        return allowed, reason

    async def _take_in_commits(self, out: ToolOutcome) -> ToolOutcome:
        """A commit the session made inside the sandbox lives in its own object store until Cockpit
        takes it in (hashes checked): done after each command, so the repository never holds a
        branch whose objects it lacks (``git log --all``, ``gc`` and IDEs walk every branch)."""
        from cockpit.runtime import worktree as wt

        w = self.spec.worktree
        if w is None:
            return out
        try:
            await asyncio.to_thread(wt.absorb_objects, w)
        except wt.AbsorbRefused as exc:
            # its branch goes back to its base — written by Cockpit's git only once nothing of the
            # session runs (a job left running could plant a link in the reflog folder git follows)
            await self.tools.bash.close()
            await asyncio.to_thread(wt.reset_branch, w)
            return ToolOutcome(out.content + f"\n[Cockpit did not take in this branch's new commits: {exc}; "
                               "the shell was restarted]", out.is_error, exit_code=out.exit_code)
        except wt.WorktreeError as exc:
            return ToolOutcome(out.content + f"\n[Cockpit did not take in this branch's new commits: {exc}]",
                               out.is_error, exit_code=out.exit_code)
        return out

    def _changed_files(self) -> str:
        """The files the session changed in its tree (git status), for an approval's text."""
        import subprocess

        try:
            from cockpit.runtime.protected import NO_HOOKS

            out = subprocess.run(["git", *NO_HOOKS, "-C", str(self._tree()), "status", "--porcelain",
                                  "--untracked-files=all", "--ignore-submodules=all"],
                                 capture_output=True, text=True, timeout=30, errors="replace")
        except (OSError, subprocess.SubprocessError):
            return ""
        names = [line[3:] for line in out.stdout.splitlines() if len(line) > 3]
        return ", ".join(names[:15]) + (f" (+{len(names) - 15} more)" if len(names) > 15 else "")

    def _protected_start(self) -> None:
        """The base commit (the worktree's, else the workspace's HEAD now) and the protected paths'
        state at the start (a fresh worktree holds the base's state)."""
        from cockpit.runtime.protected import ProtectedCheckError, tree_base

        self._protected_git, head = tree_base(self._tree())
        w = self.spec.worktree
        self._protected_base = (w.base_commit or head) if w is not None else head
        try:
            self._protected_seen = self._protected_snapshot()
        except ProtectedCheckError:  # checked (and failing closed) after the first command
            self._protected_seen = {}

    def _protected_snapshot(self) -> dict[str, str]:
        """Fingerprints of the tree's protected paths (outside git: found by walking the folder).
        Raises :class:`~cockpit.runtime.protected.ProtectedCheckError` when git fails in a git tree."""
        from cockpit.runtime.protected import plain_snapshot, protected_snapshot

        if not self._protected_git:
            return plain_snapshot(self._tree(), self.policy.hooks_path, self.policy.protected)
        return protected_snapshot(self._tree(), self.policy.hooks_path, self.policy.protected,
                                  base=self._protected_base)

    def _protected_refresh(self, target: str) -> None:
        """The editor wrote ``target`` (relative to the workspace) after the user was asked: its
        entry only is brought up to date — a change to any other protected path (a command left
        running in the background) is still caught after the next command."""
        from cockpit.runtime.protected import ProtectedCheckError, fingerprint, path_fingerprint, protected_reason

        if not target:
            return
        tree = os.path.realpath(self._tree())
        rel = os.path.relpath(os.path.join(os.path.realpath(self.spec.cwd), target), tree).replace(os.sep, "/")
        if rel.startswith("../") or rel in ("..", ".") or not protected_reason(rel, self.policy.hooks_path,
                                                                               self.policy.protected):
            return
        if not self._protected_git:  # a plain folder: the path and the protected folders it made on the way
            parts = rel.split("/")
            for i in range(1, len(parts) + 1):
                sub = "/".join(parts[:i])
                if protected_reason(sub, self.policy.hooks_path, self.policy.protected):
                    self._protected_seen[sub] = fingerprint(tree, sub)
            return
        try:
            self._protected_seen[rel] = path_fingerprint(tree, rel)
        except ProtectedCheckError:  # git failed: the next command's check asks
            self._protected_seen.pop(rel, None)

    async def _protected_after(self, tool_use_id: str, call: PreparedCall, out: ToolOutcome) -> ToolOutcome:
        """A command changed protected paths (a git hook, ``.envrc``, ``.vscode/``, ``CLAUDE.md``…,
        which run code outside the sandbox later): the user keeps or reverts the change (headless:
        reverted), and the model is told which. Found by git in a git tree, by walking a plain
        folder; every mode, the sandbox on or off."""
        from cockpit.runtime.protected import ProtectedCheckError, changed_paths, revert

        try:
            snap = await asyncio.to_thread(self._protected_snapshot)
        except ProtectedCheckError as exc:  # fail closed: the user decides (headless: denied)
            return await self._protected_unchecked(tool_use_id, call, out, str(exc))
        changed = changed_paths(self._protected_seen, snap)
        if not changed:
            self._protected_seen = snap
            return out
        listed = ", ".join(changed[:20]) + (f" (+{len(changed) - 20} more)" if len(changed) > 20 else "")
        why = (f"This command changed protected paths: {listed}. They steer git, a shell, an editor or an agent "
               "and can run code outside the sandbox later (a git hook at your next commit, .envrc at the next "
               "cd). Keep the change? Deny puts them back as they were.")
        allowed, reason = await self._ask(tool_use_id, call, why, outside=True, summary=f"keep changes to {listed}")
        if allowed:
            self._protected_seen = snap
            return ToolOutcome(out.content + f"\n[the user kept this command's changes to protected paths: {listed}]",
                               out.is_error, exit_code=out.exit_code)
        skipped = await asyncio.to_thread(revert, self._tree(), changed, self._protected_base, not self._protected_git)
        before = self._protected_seen
        try:
            self._protected_seen = await asyncio.to_thread(self._protected_snapshot)
        except ProtectedCheckError:
            self._protected_seen = {**snap, **{p: v for p, v in before.items() if p in changed}}
        for p in changed:  # the revert left it as the command did: not put back
            if p not in skipped and p in snap and self._protected_seen.get(p) == snap[p]:
                skipped[p] = "still as the command left it"
        for p in skipped:  # not put back: raised again after the next command (and at review)
            if p in before:
                self._protected_seen[p] = before[p]
            else:
                self._protected_seen.pop(p, None)
        note = (f"\n[this command changed protected paths ({listed}); they were put back: changing them needs "
                "the user's approval, through the editor tool]")
        if skipped:
            note += " Not put back: " + "; ".join(f"{p} ({why})" for p, why in sorted(skipped.items())[:20]) + "."
        return ToolOutcome(out.content + note + (f" The user said: {reason}" if reason else ""), out.is_error,
                           exit_code=out.exit_code)

    async def _protected_at_rest(self) -> None:
        """After the model's last turn: a protected path changed since the last command's check (a
        job a command left running) is caught as a command's change is — asked, and put back when
        denied. Headless, the session's shell, and every job in its sandbox, is ended first: nothing
        of the session runs on unseen, and the change is put back."""
        from cockpit.runtime.permissions import Action

        if not self.interactive:
            await self.tools.bash.close()
        what = "what the session's commands left running, after its last command"
        call = PreparedCall("bash", {"command": what}, Action("bash", what), what, what)
        await self._protected_after("protected-at-rest", call, ToolOutcome("", False))

    async def _protected_unchecked(self, tool_use_id: str, call: PreparedCall, out: ToolOutcome,
                                   error: str) -> ToolOutcome:
        """git failed after a command, so whether it changed protected paths is unknown: the user
        is asked (headless: denied) and the model told; the paths are checked again after the next
        command, and the diff screen flags them at review."""
        why = (f"Protected paths could not be checked after this command: {error}. It may have changed a git "
               "hook, .envrc, an editor's or an agent's settings, which can run code outside the sandbox later. "
               "Go on anyway?")
        allowed, reason = await self._ask(tool_use_id, call, why, outside=True,
                                          summary="go on without checking protected paths")
        if allowed:
            note = (f"\n[protected paths could not be checked after this command ({error}); the user let the "
                    "session go on]")
            return ToolOutcome(out.content + note, out.is_error, exit_code=out.exit_code)
        note = (f"\n[protected paths could not be checked after this command ({error}): denied — repair the "
                "repository (git status must work) before going on; changing protected paths needs the user's "
                "approval, through the editor tool]")
        return ToolOutcome(out.content + note + (f" The user said: {reason}" if reason else ""), True,
                           exit_code=out.exit_code)

    async def _blocked(self, tool_use_id: str, call: PreparedCall, out: ToolOutcome) -> ToolOutcome:
        """A sandboxed command failed: when its output shows the sandbox stopped it, the user is
        asked whether to run it again outside (an interactive session; headless: the model is
        told), and the model always learns what was blocked."""
        from cockpit.runtime.sandbox import blocked_by

        what = blocked_by(out.content, self.spec.network)
        if not what:
            return out
        note = f"\n[the sandbox blocked {what}]"
        if not out.exit_code:  # a later part of the line went on: no re-run to offer, the model is told
            return ToolOutcome(out.content + note, out.is_error, exit_code=out.exit_code)
        if not self.interactive:
            return ToolOutcome(out.content + note + " The user can allow it by running without the sandbox "
                               "or with network on.", out.is_error, exit_code=out.exit_code)
        changed = await asyncio.to_thread(self._changed_files)
        files = (f" Whatever it runs from the files this session wrote runs unconfined too: {changed}."
                 if changed else "")
        allowed, reason = await self._ask(
            tool_use_id, call, f"The sandbox blocked {what}. Run the command again OUTSIDE the sandbox, as you, "
                               f"with your files and network? It ran once inside already, and its output is the "
                               f"session's to shape: judge the command, not the message.{files}", outside=True)
        if not allowed:
            return ToolOutcome(out.content + note + " The user did not allow running it outside the sandbox."
                               + (f" The user said: {reason}" if reason else ""), out.is_error,
                               exit_code=out.exit_code)
        self._set(S.RUNNING_TOOL, call.name)
        again = await self.tools.run_unconfined(call.data["command"])
        return ToolOutcome(f"{out.content}{note}\n{RAN_OUTSIDE}\n{again.content}", again.is_error,
                           exit_code=again.exit_code)



__all__ = ["Session", "SessionSpec", "SessionFailure", "preseed_query"]
