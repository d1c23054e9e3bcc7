"""One episode under a black-box harness: the real CLI (Claude Code, Codex CLI, OpenClaw) run
once in the task's prepared workspace against a served model, then the task's own checker
on the workspace and the CLI's final answer.

Each CLI runs headless with a fresh home of its own (no user config, no session kept), its
telemetry, updates and feedback off, in a network namespace whose only way out is the served
endpoint (hscale.harness._netns; where none can be made, the proxy variables, which point at
a closed port, are the only fence), and a wall-clock bound (its whole process group is
killed at the end). Its requests carry the episode's session id
(``x-hscale-session``), so the server's record groups them and bounds their number
(:class:`Served`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from hscale.contracts import ErrorKind, Termination, errors_of, join_errors
from hscale.files import cache_dir
from hscale.harness._blackbox import BlackBox, get, require_installed
from hscale.harness._engine import Episode
from hscale.harness._env import Env
from hscale.harness._netns import isolated
from hscale.harness._types import Message
from hscale.harness.tasks import Task, scoring
from hscale.text import printable

SESSION_HEADER = "x-hscale-session"
CLI_ERROR = ErrorKind.CLI.line("")  # the CLI's own failure (cli_failed)
CLOSED_PROXY = "http://127.0.0.1:9"  # the discard port: nothing answers there
SYSTEM = ("You are an agent working on a task in the current folder. Use the shell to "
          "read and change files there. When done, give the final answer as plain text.")


@dataclass
class Served:
    """The model an episode talks to: the base URL (ending in /v1), its name and context,
    and the server's per-session bookkeeping (hscale.train.serving): ``limit(session, n,
    temperature)`` answers a session's requests past ``n`` with a final text (and decodes
    them at ``temperature`` when given), ``requests(session)`` counts them, ``calls(session)``
    hands over what each was (the episode's transcript keeps them)."""

    url: str
    model: str
    context: int | None = None
    limit: Callable[..., None] | None = None
    requests: Callable[[str], int] | None = None
    calls: Callable[[str], list[dict]] | None = None


@dataclass
class Run:
    """How one CLI is started and where its final answer is read from."""

    argv: list[str]
    env: dict[str, str]
    final: Callable[[str], str]  # stdout -> the final answer
    # stdout -> why the CLI says it failed, where it says so there ("" if not)
    why: Callable[[str], str] = lambda out: ""


def run_blackbox(name: str, task: Task, served: Served, *, timeout_s: float = 300.0,
                 max_turns: int = 30, root: str | Path | None = None,
                 greedy: bool | None = None, session: str | None = None) -> Episode:
    """The episode of ``task`` under the black-box harness ``name``; ``greedy`` pins its
    decoding (True: temperature 0, False: 1; None: what the CLI asks for); ``session``
    names its requests in the server's record (a fresh ``bb-...`` id by default)."""
    harness = get(name)
    require_installed([name])
    session = session or new_session()
    if served.limit is not None:
        served.limit(session, max_turns, None if greedy is None else 0.0 if greedy else 1.0)
    home = Path(tempfile.mkdtemp(prefix="hscale-bb-", dir=_homes()))
    env = Env(task, root)
    began = time.monotonic()
    try:
        run = BUILDERS[name](harness, served, session, env.workspace, home, task, max_turns,
                             timeout_s)
        with isolated(run.argv, served.url) as argv:  # no network but the endpoint
            final, termination, said = _execute(replace(run, argv=argv), env.workspace,
                                                timeout_s)
        asked = served.requests(session) if served.requests is not None else None
        error = said if cli_failed(said) else ""
        if asked and cli_failed(error):  # it ran, talked to the model, then gave up: the
            error = error.removeprefix(CLI_ERROR)  # agent's failure (a reply too long, ...)
        if asked == 0 and termination != Termination.ERROR:  # it never reached the model
            what = "ended" if termination == Termination.ANSWER else f"hung {timeout_s:.0f} s"
            termination, error = Termination.ERROR, (f"{CLI_ERROR}{what} without asking the model"
                                           + (f": {said}" if said else ""))
        transcript = [{"role": "user", "content": task.user_query},
                      {"role": "assistant", "content": final}]
        reward = env.score(final, transcript)
        if env.checker_error:
            said = env.checker_error  # "checker: ..." marks it for the callers that count
            said = said if ErrorKind.CHECKER in errors_of(said) else ErrorKind.CHECKER.line(said)
            error = join_errors(error, said)
    finally:
        env.close()
        shutil.rmtree(home, ignore_errors=True)
    turns = served.requests(session) if served.requests is not None else 0
    expected, checked = scoring(task)
    seconds = time.monotonic() - began
    return Episode(task.task_id, name, [Message("user", task.user_query),
                                        Message("assistant", final)],
                   [], [], [], final, reward, turns, termination, 0,
                   error or ("" if termination == Termination.ANSWER else
                             f"{name}: {termination} after {seconds:.0f} s"),
                   seconds, served.calls(session) if served.calls is not None else [],
                   expected=expected, checked=checked)


def new_session() -> str:
    return f"bb-{uuid.uuid4().hex[:16]}"


def _homes() -> Path:
    """Where episode homes go: not under /tmp (Codex refuses its helpers there)."""
    folder = cache_dir() / "bb-homes"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _execute(run: Run, workspace: Path, timeout_s: float) -> tuple[str, str, str]:
    """(final answer, termination, error) of the CLI's run; its process group is killed
    when it ends or runs out of time. Its output is bytes: what is not UTF-8 is replaced,
    never the episode's end; its error is printable (no escape sequence of the CLI's reaches
    a terminal through it)."""
    termination = Termination.ANSWER
    proc = subprocess.Popen(run.argv, cwd=workspace, env=run.env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        raw_out, raw_err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        termination = Termination.TIMEOUT
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    if termination == Termination.TIMEOUT:
        raw_out, raw_err = proc.communicate()
    out, err = (b.decode("utf-8", errors="replace") for b in (raw_out or b"", raw_err or b""))
    try:
        final = run.final(out)
    except (ValueError, KeyError, TypeError, IndexError):
        final = ""
    last = printable(run.why(out)[:300] or _last_line(err) or _last_line(out))
    if termination == Termination.ANSWER and proc.returncode != 0:
        return (final, Termination.ERROR,
                f"{CLI_ERROR}exit {proc.returncode}: {last or '(no output)'}")
    return final, termination, last


def _last_line(text: str) -> str:
    return next((line.strip()[:300] for line in reversed(text.splitlines()) if line.strip()),
                "")


def cli_failed(error: str) -> bool:
    """Whether an episode's error is its CLI's own failure (it crashed, ended or hung before
    asking the model anything): the harness did not run, so the episode measures nothing.
    A CLI that exits with an error after talking to the model is the agent's failure."""
    return error.startswith(CLI_ERROR)


def _base_env(harness: BlackBox, home: Path) -> dict[str, str]:
    return {"PATH": harness.path_env(), "HOME": str(home), "LANG": "C.UTF-8",
            "NO_PROXY": "127.0.0.1,localhost,::1", "no_proxy": "127.0.0.1,localhost,::1",
            "HTTP_PROXY": CLOSED_PROXY, "HTTPS_PROXY": CLOSED_PROXY, "ALL_PROXY": CLOSED_PROXY,
            "http_proxy": CLOSED_PROXY, "https_proxy": CLOSED_PROXY, "CI": "1"}


def _claude(harness: BlackBox, served: Served, session: str, work: Path, home: Path,
            task: Task, max_turns: int, timeout_s: float) -> Run:
    """Claude Code, ``claude -p``: Anthropic messages at ANTHROPIC_BASE_URL, its smallest
    tool surface (``--bare --tools Bash``, a short system prompt)."""
    env = _base_env(harness, home)
    models = {k: served.model for k in (
        "ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL",
        "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL")}
    off = dict.fromkeys((
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER",
        "DISABLE_ERROR_REPORTING", "DISABLE_BUG_COMMAND", "DISABLE_NON_ESSENTIAL_MODEL_CALLS",
        "DISABLE_COST_WARNINGS", "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY",
        "CLAUDE_CODE_DISABLE_AUTO_MEMORY", "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS",
        "IS_SANDBOX"), "1")
    env.update(models, **off, ANTHROPIC_BASE_URL=served.url.removesuffix("/v1"),
               ANTHROPIC_API_KEY="sk-ant-local", CLAUDE_CODE_ENABLE_TELEMETRY="0",
               OTEL_SDK_DISABLED="true", ANTHROPIC_CUSTOM_HEADERS=f"{SESSION_HEADER}: {session}")
    # its own bound one past the server's: the server's final text ends the episode cleanly
    argv = [str(harness.executable), "-p", task.user_query, "--output-format", "json",
            "--max-turns", str(max_turns + 1), "--dangerously-skip-permissions",
            "--no-session-persistence", "--bare", "--tools", "Bash", "--system-prompt", SYSTEM]
    return Run(argv, env, lambda out: str(json.loads(out.strip().splitlines()[-1])["result"]))


def _codex(harness: BlackBox, served: Served, session: str, work: Path, home: Path,
           task: Task, max_turns: int, timeout_s: float) -> Run:
    """Codex CLI, ``codex exec``: the Responses API of a custom provider (its config in a
    fresh CODEX_HOME), the last message written to a file."""
    codex_home = home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(f"""model = "{served.model}"
model_provider = "hscale"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[model_providers.hscale]
name = "hscale"
base_url = "{served.url}"
wire_api = "responses"
env_key = "HSCALE_API_KEY"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = {int(timeout_s * 1000)}
http_headers = {{ "{SESSION_HEADER}" = "{session}" }}
""")
    env = {**_base_env(harness, home), "CODEX_HOME": str(codex_home),
           "HSCALE_API_KEY": "local", "RUST_LOG": "error"}
    last = home / "last-message.txt"
    argv = [str(harness.executable), "exec", "--json", "--skip-git-repo-check", "--ephemeral",
            "--dangerously-bypass-approvals-and-sandbox", "-C", str(work),
            "--disable", "plugins", "--disable", "remote_plugin", "--disable", "apps",
            "-o", str(last), task.user_query]
    return Run(argv, env, lambda out: last.read_text().strip() if last.is_file() else "",
               _codex_error)


def _codex_error(out: str) -> str:
    """The last failure ``codex exec --json`` reported on stdout (``error`` or
    ``turn.failed``); its stderr ends with a banner ("Reading additional input from
    stdin..."), not the reason."""
    for line in reversed(out.splitlines()):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if event.get("type") == "error" and isinstance(event.get("message"), str):
            return " ".join(event["message"].split())
        failed = event.get("error") if event.get("type") == "turn.failed" else None
        if isinstance(failed, dict) and isinstance(failed.get("message"), str):
            return " ".join(failed["message"].split())
    return ""


def _openclaw(harness: BlackBox, served: Served, session: str, work: Path, home: Path,
              task: Task, max_turns: int, timeout_s: float) -> Run:
    """OpenClaw, ``openclaw agent exec`` (embedded, no Gateway): an openai-completions
    provider (it always streams), the model declared with at least the 4,000-token context
    OpenClaw accepts."""
    config = home / "openclaw.json"
    context = max(int(served.context or 0), 32768)
    config.write_text(json.dumps({
        "update": {"checkOnStart": False},
        "models": {"providers": {"hscale": {
            "baseUrl": served.url, "apiKey": "local", "api": "openai-completions",
            "headers": {SESSION_HEADER: session},
            "models": [{"id": served.model, "name": served.model, "reasoning": False,
                        "input": ["text"], "contextWindow": context, "maxTokens": 1024,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}],
        }}},
        "agents": {"defaults": {"model": {"primary": f"hscale/{served.model}"}}},
    }))
    env = {**_base_env(harness, home), "OPENCLAW_HOME": str(home),
           **dict.fromkeys(("OPENCLAW_NO_AUTO_UPDATE", "OPENCLAW_DISABLE_BONJOUR",
                            "OPENCLAW_OFFLINE", "OPENCLAW_SKIP_CHANNELS"), "1")}
    argv = [str(harness.executable), "agent", "exec", "--config", str(config), "--cwd",
            str(work), "--json", "--timeout", str(max(1, int(timeout_s) - 5)),
            task.user_query]
    return Run(argv, env, lambda out: str(_json_in(out).get("final") or ""))


def _json_in(out: str) -> dict:
    """The last JSON object in ``out`` that starts a line (logs may come before it)."""
    decoder, found = json.JSONDecoder(), {}
    for i in (k for k in range(len(out)) if out[k] == "{" and (k == 0 or out[k - 1] == "\n")):
        try:
            value, _ = decoder.raw_decode(out, i)
        except json.JSONDecodeError:
            continue
        found = value if isinstance(value, dict) else found
    return found


BUILDERS = {"bb/claude-code": _claude, "bb/codex": _codex, "bb/openclaw": _openclaw}
