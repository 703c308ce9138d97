"""``wsd bootstrap``: the Python half of deploying to a Sprite, idempotent.

deploy/bootstrap.sh creates or upgrades the virtual environment, then calls
this, which: creates the layout and migrates both databases (init_workspace),
installs the deploy-managed templates (soul.md, os.md), renders the
supervisord program definition (and, with ``standalone``, a whole
supervisord.conf), and writes ``.os/VERSION`` — last, because a changed
VERSION is what makes a running daemon exit for supervisord to restart it
on the new code. Every step compares before writing, so a second run with
the same inputs changes nothing, and no user data is ever touched.
"""

from __future__ import annotations

import glob
import json
import os
import shlex
import subprocess
from pathlib import Path

from wsd.daemon.memory.md.files import LINE_LIMITS
from wsd.daemon.ops import deploy_paths
from wsd.daemon.ops.bootstrap import init_workspace, render_template
from wsd.daemon.ops.deploy_paths import MAX_SHEBANG, shell_word
from wsd.daemon.runtime.fsio import atomic_write, read_small
from wsd.daemon.runtime.heartbeat import pid_alive
from wsd.schema.layout import DEPLOY_FILES, Layout


class DeployError(ValueError):
    """A deploy input is unusable (the message names it)."""


def _install(path: Path, content: str, mode: int, changes: list[str]) -> None:
    try:
        if path.read_text(encoding="utf-8") == content:
            if (path.stat().st_mode & 0o777) != mode:
                os.chmod(path, mode)
                changes.append(f"chmod {mode:04o} {path}")
            return
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(str(path), content, mode=mode)
    changes.append(f"installed {path}")


#: Where the packaged deploy assets live (deploy/ of the checkout, installed as wsd/deploy).
ASSETS = Path(__file__).resolve().parent.parent.parent / "deploy"
#: Claude Code names a plugin's MCP tools mcp__plugin_<plugin>_<server>__<tool>.
PLUGIN_NAME = "workspace-memory"
PLUGIN_TOOL_PREFIX = f"mcp__plugin_{PLUGIN_NAME}_memory__"


def hook_launcher(script: Path, changes: list[str]) -> None:
    """Make the installed ``wsd-hook`` start from any venv path. pip writes a plain script's
    ``#!`` line with the interpreter's path as it is; the kernel splits that line at a space
    (and older kernels read only its first 127 bytes), so from ``/w/my ws/.os/.venv`` every
    hook run failed with status 127 and every turn was lost, unseen (issue 45; ``wsd``, a
    console script, starts: pip gives those a ``/bin/sh`` trampoline). Such a line becomes
    the same trampoline, the path quoted for the shell; any other is left as pip wrote it."""
    try:
        text = script.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return  # not installed by pip here (a test's venv of links): nothing to mend
    first, newline, rest = text.partition("\n")
    python = first[2:].strip()
    fits = not any(c.isspace() for c in python) and len(first.encode()) <= MAX_SHEBANG
    if not first.startswith("#!") or first == "#!/bin/sh" or fits or not newline:
        return
    # Read by sh as `exec '<python>' "$0" "$@"`, by Python as a string, then the script.
    launcher = "#!/bin/sh\n'''exec' " + shlex.quote(python) + ' "$0" "$@"\n' + "' '''\n"
    _install(script, launcher + rest, 0o755, changes)


def render_plugin(
    source: Path, dest: Path, *, venv: Path, workspace: str, version: str, changes: list[str]
) -> None:
    """Write the Claude Code plugin (manifest, hooks, MCP server) with the deployed paths:
    every event to ``wsd-hook``, the boot context at SessionStart, ``wsd mcp`` always loaded."""
    wsd = str(venv / "bin" / "wsd")
    where = f"--workspace {shlex.quote(workspace)}"
    quoted = f"{shlex.quote(wsd)} {where}"
    values = {
        "@HOOK@": f"{shlex.quote(str(venv / 'bin' / 'wsd-hook'))} {where}",
        "@BOOT@": f"{quoted} boot-context --hook --tool-prefix {PLUGIN_TOOL_PREFIX}",
        "@WSD@": wsd,
        "@WORKSPACE@": workspace,
        "@VERSION@": version,
    }
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8")
        for token, value in values.items():
            text = text.replace(token, json.dumps(value)[1:-1])  # inside JSON strings
        _install(dest / path.relative_to(source), text, 0o600, changes)


def bootstrap(
    layout: Layout,
    *,
    version: str,
    templates: Path = ASSETS / "templates",
    supervisor: Path = ASSETS / "supervisor",
    plugin: Path = ASSETS / "claude-plugin",
    venv: Path,
    standalone: bool = False,
    reload_supervisor: bool = True,
) -> list[str]:
    """Bring a workspace to the deployed state; returns what changed (empty: nothing)."""
    if not version.strip() or "\n" in version.strip():
        raise DeployError(f"version {version!r}: expected one non-empty line")
    # Absolute: supervisord runs the program from elsewhere than this shell.
    layout, venv = Layout(os.path.abspath(layout.root)), Path(os.path.abspath(venv))
    os_dir = Path(layout.os_dir)
    # Refused before anything is made (deploy/bootstrap.sh asks the same before the venv).
    refused = deploy_paths.deploy_problem(layout.root, str(venv), standalone=standalone)
    if refused:
        raise DeployError(refused)
    # A bare `wsd bootstrap` keeps a stand-alone deploy stand-alone (its conf holds the program).
    standalone = standalone or supervisord_conf(layout).exists()
    changes = init_workspace(layout, templates=None)
    for name in DEPLOY_FILES:
        source = templates / name
        try:
            content = source.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise DeployError(f"template {source} is missing") from None
        lines = len(content.splitlines())
        if lines > LINE_LIMITS[name]:
            raise DeployError(f"template {source}: {lines} lines, limit {LINE_LIMITS[name]}")
        _install(Path(layout.md(name)), render_template(content, layout), 0o600, changes)
    for folder in ("logs", "run", "supervisor/conf.d"):
        path = os_dir / folder
        if not path.is_dir():
            path.mkdir(parents=True, mode=0o700)
            changes.append(f"created {path}")
    _create_settings(layout, standalone, changes)
    program = render_program(supervisor, layout, venv)
    before = len(changes)
    _install(os_dir / "supervisor" / "conf.d" / "wsd.conf", program, 0o600, changes)
    if standalone:
        main = render_supervisord(supervisor, layout) + program
        _install(supervisord_conf(layout), main, 0o600, changes)
    program_changed = len(changes) > before
    hook_launcher(venv / "bin" / "wsd-hook", changes)
    render_plugin(
        plugin,
        os_dir / "claude-plugin",
        venv=venv,
        workspace=layout.root,
        version=version.strip(),
        changes=changes,
    )
    if program_changed and reload_supervisor:
        changes += _reload_supervisor(os_dir, venv)
    _install(Path(layout.version_file), version.strip() + "\n", 0o600, changes)
    return changes


def _ini(path: str, expansions: int = 1) -> str:
    """A path as a supervisord ini value: supervisord expands %(...)s in every value, and a
    program's stdout_logfile twice (supervisor 4.2: once as read, once more for the log)."""
    return path.replace("%", "%" * 2**expansions)


def render_program(supervisor: Path, layout: Layout, venv: Path) -> str:
    """The supervisord program of this workspace (wsd.conf.in with its paths written so that
    supervisord reads them back as they are; deploy_paths refuses those it cannot)."""
    command = [str(venv / "bin" / "wsd"), "--workspace", layout.root, "run"]
    command += ["--settings", str(settings_path(layout))]
    return (
        (supervisor / "wsd.conf.in")
        .read_text(encoding="utf-8")
        .format(
            command=_ini(shlex.join(command)),
            directory=_ini(layout.root.rstrip("/") + "/"),
            wsd_log=_ini(os.path.join(layout.os_dir, "logs", "wsd.log"), expansions=2),
        )
    )


def render_supervisord(supervisor: Path, layout: Layout) -> str:
    """A stand-alone supervisord.conf's own sections (the program follows them)."""
    run = os.path.join(layout.os_dir, "run")
    return (
        (supervisor / "supervisord.conf.in")
        .read_text(encoding="utf-8")
        .format(
            conf_shell=shell_word(str(supervisord_conf(layout))),
            sock=_ini(os.path.join(run, "supervisor.sock")),
            supervisord_log=_ini(os.path.join(layout.os_dir, "logs", "supervisord.log")),
            pidfile=_ini(os.path.join(run, "supervisord.pid")),
        )
    )


def include_pattern(layout: Layout) -> str:
    """What a system supervisord's ``[include] files =`` takes to load this program: the
    folder glob-escaped (a [ in it is a character class otherwise), % doubled."""
    folder = os.path.join(layout.os_dir, "supervisor", "conf.d")
    return _ini(os.path.join(glob.escape(folder), "*.conf"))


def settings_path(layout: Layout) -> Path:
    """The operator's settings file: WSD_* lines the supervisord program reads at each start."""
    return Path(layout.os_dir) / "settings.env"


def _create_settings(layout: Layout, standalone: bool, changes: list[str]) -> None:
    """Create the settings file, commented, if nothing is at its path; never change one that
    is there (it is the operator's: that is what makes a setting last across deploys)."""
    path = settings_path(layout)
    if os.path.lexists(path):
        return
    conf = shell_word(str(supervisord_conf(layout)))
    restart = f"supervisorctl -c {conf} restart wsd" if standalone else "supervisorctl restart wsd"
    atomic_write(
        str(path),
        "# Settings of this workspace's daemon, one NAME=value a line, e.g.\n"
        "#   WSD_DAILY_BUDGET_USD=5\n"
        "# As in sh, but read without a shell: quote a value with spaces ('...' or \"...\"),\n"
        "# no $ expansion. A line the daemon cannot read stops it from starting: `wsd doctor`\n"
        "# names it. The supervisord program reads this file each time it starts the daemon,\n"
        f"# so after an edit: {restart}\n"
        "# A value here wins over supervisord's environment. `wsd bootstrap`\n"
        "# (deploy/bootstrap.sh) created this file and never changes it.\n"
        "# Every setting: README.md, Settings.\n",
        mode=0o600,
    )
    changes.append(f"created {path}")


def settings_hint(layout: Layout, name: str) -> str:
    """Where an operator sets ``name`` so that it lasts, and how it takes effect."""
    path = settings_path(layout)
    if os.path.lexists(path):  # deployed by bootstrap
        return (
            f"set {name} in {shell_word(str(path))} and restart the daemon"
            f" (`{supervisorctl(layout)} restart wsd`)"
        )
    return f"set {name} in the environment of `wsd run` and restart it"


def supervisord_conf(layout: Layout) -> Path:
    """Where ``wsd bootstrap --standalone`` writes a stand-alone supervisord.conf."""
    return Path(layout.os_dir) / "supervisor" / "supervisord.conf"


def supervisorctl(layout: Layout) -> str:
    """The supervisorctl command that reaches this workspace's supervisord: a stand-alone
    deploy's own (``-c`` its conf, which exists only there), else the system's."""
    conf = supervisord_conf(layout)
    return f"supervisorctl -c {shell_word(str(conf))}" if conf.exists() else "supervisorctl"


def start_hint(layout: Layout) -> str:
    """How an operator starts this workspace's daemon, in words and a command."""
    conf = supervisord_conf(layout)
    if not (conf.parent / "conf.d" / "wsd.conf").exists():
        return (
            f"not deployed: start it with `wsd --workspace {shell_word(layout.root)} run`"
            " (or deploy it: deploy/bootstrap.sh)"
        )
    if conf.exists() and not supervisord_running(layout):
        return (
            f"start its supervisord, which starts wsd: `supervisord -c {shell_word(str(conf))}`"
            " with ANTHROPIC_BASE_URL and WSD_BRIDGE_TOKEN in its environment"
        )
    return f"start it: `{supervisorctl(layout)} start wsd`"


def supervisord_running(layout: Layout) -> bool:
    """Whether this workspace's stand-alone supervisord runs (its pid file names a live pid)."""
    pid = (read_small(os.path.join(layout.os_dir, "run", "supervisord.pid")) or "").strip()
    return pid.isdigit() and pid_alive(int(pid))


def _reload_supervisor(os_dir: Path, venv: Path) -> list[str]:
    """Tell a running stand-alone supervisord about a changed program (if it runs)."""
    conf = os_dir / "supervisor" / "supervisord.conf"
    if not (os_dir / "run" / "supervisor.sock").exists() or not conf.exists():
        return []
    ctl = venv / "bin" / "supervisorctl"
    result = subprocess.run(
        [str(ctl), "-c", str(conf), "update"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return [f"supervisorctl update: {(result.stdout or result.stderr).strip() or 'ok'}"]
