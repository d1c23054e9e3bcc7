"""``hscale view``'s pages: the episodes as a filtered, paged table; one episode as the model
saw it, turn by turn; two side by side with what tells them apart marked; and one
self-contained HTML file of a selection (``--export``). Pages are rendered on the server
(Starlette), so a filter is a link, works without scripts and can be shared.

Every value on a page comes from a run folder, which may be shared or downloaded, so pages
are Jinja2 templates (templates/view/) with autoescaping on: nothing a run folder holds is
ever written into a page as markup, and its control characters are shown as pictures
(hscale.text.visible). No page carries a script; the Content-Security-Policy says so.
"""

from __future__ import annotations

import base64
import hashlib
import math
import sys
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pandas as pd

from hscale.analysis._load import split_decoding
from hscale.analysis._view_data import BEHAVIOURS, PAGE, Study, marked_lines
from hscale.contracts import COST, Setting, transcript_views
from hscale.errors import HscaleError, reason
from hscale.text import printable, visible
from hscale.web import LocalOnly

PORT = 8777  # hscale view's default port; the report's "episodes" links point there
GENERATOR = "hscale view"  # an export's <meta name=generator>: how hscale knows its own file
STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2125;background:#fafafa}
header{background:#23395d;color:#fff;padding:8px 16px}header a{color:#fff}
main{padding:12px 16px}table{border-collapse:collapse;width:100%;background:#fff}
th,td{border-bottom:1px solid #e3e3e3;padding:3px 6px;text-align:left;font-size:13px}
th{background:#f0f2f5;position:sticky;top:0}tr:hover td{background:#f5f8ff}
form.filters{display:flex;flex-wrap:wrap;gap:6px 12px;margin-bottom:10px;align-items:end}
form.filters label{display:flex;flex-direction:column;font-size:12px;color:#555}
.ok{color:#11772f;font-weight:600}.bad{color:#b3261e;font-weight:600}
.msg{border:1px solid #ddd;border-radius:6px;margin:6px 0;background:#fff}
.msg .role{font-size:11px;text-transform:uppercase;color:#666;padding:2px 8px;
  border-bottom:1px solid #eee;display:flex;justify-content:space-between}
.msg pre{margin:0;padding:6px 8px;white-space:pre-wrap;word-break:break-word;font-size:12.5px}
.assistant{border-color:#7aa2e3;background:#f3f7ff}.tool{border-color:#c9b458;background:#fffbea}
.system{background:#f4f4f4}.changed{background:#ffe3e3}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:12px}.diffs li{color:#8a1c1c}
table.meta{width:auto;background:none}.meta td{border:none;padding:1px 12px 1px 0}
.pager{margin:8px 0}
details summary{cursor:pointer;color:#23395d;font-size:12px}
"""
# no script, no fetch, no frame; the one inline style by its hash; forms and links only here
_STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()
POLICY = (f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; img-src data:; "
          "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
EXPORT_POLICY = f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; img-src data:"
# a kept training rollout's role -> what its group's other rollouts are to it
GROUP_TOLD = {
    "zero-signal": "Its group: every rollout failed (zero signal); the siblings' rollouts "
                   "that replaced it were trained on instead",
    "rescue": "The zero-signal group it rescued, and the other siblings' rollouts",
    "sampled": "The other rollouts of its group",
}


@cache
def _templates() -> Any:
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
    from markupsafe import Markup

    def shown(value: Any) -> Any:  # every {{ value }}: None as nothing, control chars seen
        if value is None:
            return ""
        if isinstance(value, str) and not isinstance(value, Markup):  # a macro's is markup
            return visible(value)
        return value

    return Environment(loader=PackageLoader("hscale.analysis", "templates/view"),
                       autoescape=select_autoescape(default=True, default_for_string=True),
                       undefined=StrictUndefined, finalize=shown, trim_blocks=True,
                       lstrip_blocks=True)


def render(name: str, title: str, root: str = "", export: bool = False, **context: Any) -> str:
    """A page from ``templates/view/NAME`` (autoescaped)."""
    return _templates().get_template(name).render(
        title=title, root=root, style=STYLE, generator=GENERATOR, export=export,
        policy=EXPORT_POLICY, **context)


def table_page(study: Study, query: Mapping[str, str]) -> str:
    """The filter form, a summary of what matches and one page of rows."""
    rows = study.select(query, strict=False)
    pages = max(1, math.ceil(len(rows) / PAGE))
    number = min(max(_int(query.get("page"), 1), 1), pages)
    shown = rows.iloc[(number - 1) * PAGE:number * PAGE]
    source = query.get("source") or "eval"
    cost = "".join(f", {_num(rows[c].mean())} {c.replace('_', ' ')}/episode"
                   for c in ("prompt_tokens", "completion_tokens")
                   if pd.to_numeric(rows[c], errors="coerce").notna().any())
    rate = (_pass1(rows) if source == "eval" else
            f"solved {rows['success'].astype(bool).mean() * 100:.1f}%") + cost if len(rows) \
        else ""
    total = int((study.frame["source"] == source).sum())
    base = {k: v for k, v in query.items() if k != "page" and v}
    return render("table.html", "hscale view", str(study.root),
                  filters=_filters(study, query), task=query.get("task", ""),
                  count_text=f"{len(rows):,}", total_text=f"{total:,}",
                  what="evaluated episodes" if source == "eval" else "kept training rollouts",
                  rate=rate, rows=table_rows(shown, lambda i: f"/episode/{i}"),
                  pages=pages, pages_text=f"{pages:,}", number=number,
                  previous=f"/?{urlencode({**base, 'page': number - 1})}" if number > 1
                  else "",
                  next=f"/?{urlencode({**base, 'page': number + 1})}" if number < pages
                  else "")


def _pass1(rows: pd.DataFrame) -> str:
    """The selection's Pass@1 as the report computes it: over the sampled evaluation runs
    (a greedy pass apart, unless a run has greedy rows alone: hscale.analysis._load's
    split_decoding); over several arms it says so, since the report's number is an arm's."""
    sampled, greedy = split_decoding(rows)
    said = []
    if len(sampled):
        kind = "sampled" if (sampled["decoding"].astype(str) == "sampled").all() else \
            "evaluated"
        said.append(f"Pass@1 {sampled['success'].astype(bool).mean() * 100:.1f}% over "
                    f"{len(sampled):,} {kind} episodes")
    if len(greedy):
        said.append(f"greedy {greedy['success'].astype(bool).mean() * 100:.1f}%")
    arms = rows["arm"].astype(str).nunique()
    if arms > 1:
        said.append(f"pooled over {arms} arms: pick one arm (and setting) for a number the "
                    "report shows")
    return "; ".join(said)


def table_rows(rows: pd.DataFrame, link: Callable[[int], str]) -> list[dict[str, Any]]:
    """What the episode table shows of each row (values as text: autoescaped in the page)."""
    out = []
    for i, r in rows.iterrows():
        tokens = _sum(r["prompt_tokens"], r["completion_tokens"])
        out.append({"id": i, "link": link(int(i)), "arm": r["arm"], "seed": r["seed"],
                    "step": r["step"], "setting": r["setting"], "harness": r["harness"],
                    "task": r["task_id"], "run": r["run"], "decoding": r["decoding"],
                    "success": _truth(r["success"]), "turns": r["turns"],
                    "tool_calls": _num(r["tool_calls"]), "tool_errors": _num(r["tool_errors"]),
                    "tokens": _num(tokens)})
    return [{k: _text(v) if k not in ("id", "success") else v for k, v in row.items()}
            for row in out]


def _filters(study: Study, query: Mapping[str, str]) -> list[dict[str, Any]]:
    out = []
    for key, values in study.choices().items():
        if len(values) < 2 and key not in ("arm", "setting"):
            continue
        out.append({"key": key, "any": key != "source", "chosen": query.get(key, ""),
                    "options": [(v, v) for v in values[:400]]})
    out.append({"key": "outcome", "any": True, "chosen": query.get("outcome", ""),
                "options": [("solved", "solved"), ("failed", "failed")]})
    out.append({"key": "behaviour", "any": True, "chosen": query.get("behaviour", ""),
                "options": [(k, v[0]) for k, v in BEHAVIOURS.items()]})
    return out


# --- one episode -----------------------------------------------------------------------
def episode_page(study: Study, index: int) -> str:
    ep = study.episode(index, strict=False)
    others = study.siblings(index)
    group = study.group(index)
    compare = lambda i: f"/compare?a={index}&b={i}"  # noqa: E731
    told = GROUP_TOLD.get(str(ep["role"]), "") if len(group) else ""
    return render("episode.html", f"episode #{index}", str(study.root),
                  ep=episode_view(ep), group_told=told, group=table_rows(group, compare),
                  others=table_rows(others, compare))


def episode_view(ep: dict[str, Any], other: dict[str, Any] | None = None) -> dict[str, Any]:
    """The episode's identity and cost, then its history turn by turn (with, folded, what
    the model saw before each of its turns); lines of a message the ``other`` episode's
    matching message lacks are marked. A transcript that breaks its contract is named as
    damaged and shown without its history."""
    record = ep["transcript"]
    meta = [("arm", ep["arm"]), ("seed", ep["seed"]), ("step", ep["step"]),
            ("setting", ep["setting"]), ("harness", ep["harness"]), ("task", ep["task_id"]),
            ("run", f"{_text(ep['run'])} ({_text(ep['decoding'])})"),
            ("reward", ep["reward"]), ("turns", ep["turns"]),
            *[(c.replace("_", " "), _num(ep[c])) for c in COST],
            ("seconds", _num(ep["seconds"], 2))]
    if record:
        meta += [("termination", record.get("termination")),
                 ("answer", record.get("final_answer"))]
        if record.get("expected") is not None:
            meta.append(("expected", record["expected"]))
        if record.get("checked"):
            meta.append(("scored by", record["checked"]))
    if ep["source"] == "rollout":
        meta[3] = ("setting", f"training rollout, group {_text(ep['group'])} "
                              f"({_text(ep['role'])})")
    if ep["error"]:
        meta.append(("error", ep["error"]))
    view = {"id": ep["id"], "success": _truth(ep["success"]),
            "meta": [(k, _text(v)) for k, v in meta], "problem": ep.get("problem", ""),
            "provenance": [(k, _text(v)) for k, v in ep.get("provenance", [])],
            "messages": [], "calls": []}
    if not record:
        return view
    theirs = other["transcript"]["messages"] if other and other.get("transcript") else []
    seen = iter(transcript_views(record))
    for i, (role, content) in enumerate(record["messages"]):
        match = theirs[i][1] if i < len(theirs) and theirs[i][0] == role else None
        message = _message(role, content, match)
        if role == "assistant":
            message["view"] = [_message(r, c) for r, c in next(seen, [])]
        view["messages"].append(message)
    for call in record.get("model_calls") or []:
        messages = [_message(str(m.get("role", "?")), _content(m.get("content")))
                    for m in call.get("new", []) if isinstance(m, dict)]
        messages.append(_message("assistant", str(call.get("reply", ""))))
        messages += [_message("tool call", str(c)) for c in call.get("tool_calls", [])]
        view["calls"].append({"prompt": _text(call.get("prompt_tokens")),
                              "completion": _text(call.get("completion_tokens")),
                              "seconds": _num(call.get("seconds"), 2), "messages": messages})
    return view


def compare_page(study: Study, a: int, b: int) -> str:
    left, right = study.episode(a, strict=False), study.episode(b, strict=False)
    diffs = study.differences(left, right) or ["nothing: the same setting (another draw)"]
    return render("compare.html", f"#{a} and #{b}", str(study.root), diffs=diffs,
                  left=episode_view(left, right), right=episode_view(right, left))


def export_html(study: Study, query: Mapping[str, str], limit: int = 200) -> str:
    """One self-contained file: the selection's table, then each episode (up to ``limit``),
    linked by anchors. A damaged transcript among them is a Damaged error (nothing is
    written); a query that names no known filter or value is refused (Study.select)."""
    rows = study.select(query)
    shown = rows.head(limit)
    told = ", ".join(f"{k}={v}" for k, v in query.items() if v) or "all episodes"
    episodes = [episode_view(study.episode(int(i))) for i in shown.index]
    return render("export.html", "hscale view: export", str(study.root), export=True,
                  count=len(rows), count_text=f"{len(rows):,}", limit=limit, told=told,
                  rows=table_rows(shown, lambda i: f"#e{i}"), episodes=episodes)


def is_export(path: Path) -> bool:
    """Whether the file at ``path`` is an export hscale wrote (its generator meta tag in the
    first kilobyte): the only file ``--export`` replaces."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(1024)
    except OSError:
        return False
    return f'<meta name="generator" content="{GENERATOR}">'.encode() in head


def message_page(text: str, title: str = "not found") -> str:
    return render("message.html", title, text=text)


def _message(role: str, content: str, other: str | None = None) -> dict[str, Any]:
    kind = role if role in ("assistant", "tool", "system", "user") else "tool"
    if other is None or other == content:
        lines = [{"text": line, "changed": False} for line in content.split("\n")]
    else:
        lines = [{"text": line.text, "changed": line.changed}
                 for line in marked_lines(content, other)]
    return {"role": role, "kind": kind, "lines": lines, "view": None}


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", p)) if isinstance(p, dict) else str(p)
                         for p in content)
    return str(content)


def _text(value: Any) -> str:
    """A cell as text: a whole number without its ``.0``, NaN and None as a dash."""
    if value is None or isinstance(value, float) and math.isnan(value):
        return "—"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _truth(value: Any) -> bool:
    return value is True or isinstance(value, (int, float)) and not isinstance(value, bool) \
        and value == 1 or str(value).strip().lower() in ("true", "1")


def _sum(*values: Any) -> float:
    try:
        return float(sum(float(v) for v in values))
    except (TypeError, ValueError):
        return math.nan


def _num(value: Any, digits: int = 0) -> str:
    return "—" if not _finite(value) else f"{float(value):,.{digits}f}"


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def view_link(episodes: pd.DataFrame, port: int = PORT) -> Callable[[dict], str | None]:
    """A report table's display row -> the viewer page of its episodes (None: a row of no
    measured episodes), from the method, setting, harness and component level it names;
    ``episodes``: the report's (method, experiment, arm)."""
    from hscale.analysis._naming import SETTING_LABELS

    arms = {str(m): (str(e), str(a)) for m, e, a in episodes[["method", "experiment", "arm"]]
            .drop_duplicates().itertuples(index=False)}
    settings = {label: key for key, label in SETTING_LABELS.items() if key != "overall"}

    def link(row: dict) -> str | None:
        if str(row.get("source", "measured")) != "measured":
            return None
        query: dict[str, str] = {}
        if "method" in row:
            if str(row["method"]) not in arms:
                return None
            query["experiment"], query["arm"] = arms[str(row["method"])]
            query["decoding"] = "sampled"  # what the tables average
        setting = str(row.get("setting", ""))
        if setting in settings:
            query["setting"] = settings[setting]
        if row.get("harness") not in (None, "", "—") and "-" in str(row["harness"]):
            query["harness"] = str(row["harness"])
        component, level = str(row.get("component", "")), str(row.get("level", ""))
        if component[:1].isalpha() and level.isascii() and level.isdecimal():  # levels
            query.update(level=f"{component[:1]}{level}", setting=Setting.IN_SPACE)
        return f"http://127.0.0.1:{port}/?{urlencode(query)}" if query else None
    return link


def build_view_app(study: Study):
    """The Starlette app over ``study`` (read-only: GET pages, nothing written), behind
    hscale.web.LocalOnly: it answers only requests that name this machine and come from its
    own pages, and every response carries :data:`POLICY`."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    def missing(what: str) -> HTMLResponse:
        return HTMLResponse(message_page(what), status_code=404)

    def page(make: Callable[[Request], HTMLResponse]):
        """A route whose page, if it cannot be made (a file damaged since the viewer read
        it), says why in one line: no traceback, in the page or on the terminal."""
        async def route(request: Request) -> HTMLResponse:
            try:
                return make(request)
            except Exception as exc:  # noqa: BLE001 -- every failure is one page and one line
                what = exc.one_line() if isinstance(exc, HscaleError) else \
                    f"this page could not be made ({reason(exc)})"
                print(printable(f"hscale view: {request.url.path}: {what}"), file=sys.stderr)
                return HTMLResponse(message_page(what, "cannot show this"), status_code=500)
        return route

    def table(request: Request) -> HTMLResponse:
        return HTMLResponse(table_page(study, dict(request.query_params)))

    def episode(request: Request) -> HTMLResponse:
        index = _int(request.path_params["index"], -1)
        if not 0 <= index < len(study):
            return missing(f"no episode #{request.path_params['index']}")
        return HTMLResponse(episode_page(study, index))

    def compare(request: Request) -> HTMLResponse:
        a, b = (_int(request.query_params.get(k), -1) for k in ("a", "b"))
        if not (0 <= a < len(study) and 0 <= b < len(study)):
            return missing("compare needs two episode numbers: /compare?a=1&b=2")
        return HTMLResponse(compare_page(study, a, b))

    return Starlette(routes=[Route("/", page(table)), Route("/episode/{index}", page(episode)),
                             Route("/compare", page(compare))],
                     middleware=[Middleware(LocalOnly, policy=POLICY)])
