"""``hscale view``'s pages: the episodes as a filtered, paged table; one episode as the model
saw it, turn by turn; two side by side with what tells them apart marked; and one
self-contained HTML file of a selection (``--export``). Pages are rendered on the server
(Starlette), so a filter is a link, works without scripts and can be shared.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

import pandas as pd

from hscale.analysis._view_data import BEHAVIOURS, PAGE, Study, marked_lines
from hscale.contracts import COST, transcript_views

esc = html.escape
PORT = 8777  # hscale view's default port; the report's "episodes" links point there
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


def page(title: str, body: str, root: str = "") -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>"
            f"<style>{STYLE}</style></head><body><header><a href='/'>hscale view</a> · "
            f"{esc(root)}</header><main>{body}</main></body></html>")


def table_page(study: Study, query: Mapping[str, str]) -> str:
    """The filter form, a summary of what matches and one page of rows."""
    rows = study.select(query)
    pages = max(1, math.ceil(len(rows) / PAGE))
    number = min(max(_int(query.get("page"), 1), 1), pages)
    shown = rows.iloc[(number - 1) * PAGE:number * PAGE]
    solved = float(rows["success"].mean() * 100) if len(rows) else float("nan")
    rate = "Pass@1" if (query.get("source") or "eval") == "eval" else "solved"
    cost = "".join(f", {rows[c].mean():,.0f} {c.replace('_', ' ')}/episode"
                   for c in ("prompt_tokens", "completion_tokens") if rows[c].notna().any())
    source = query.get("source") or "eval"
    total = int((study.frame["source"] == source).sum())
    what = "evaluated episodes" if source == "eval" else "kept training rollouts"
    summary = (f"<p id='summary'><b>{len(rows):,}</b> of {total:,} {what}"
               + (f"; {rate} {solved:.1f}%{cost}" if len(rows) else "") + "</p>")
    body = [_filters(study, query), summary, _pager(query, number, pages),
            episode_table(shown, lambda i: f"/episode/{i}"), _pager(query, number, pages)]
    return page("hscale view", "".join(body), str(study.root))


def episode_table(rows: pd.DataFrame, link) -> str:
    head = ("<table id='episodes'><thead><tr><th></th><th>arm</th><th>seed</th><th>step</th>"
            "<th>setting</th><th>harness</th><th>task</th><th>run</th><th>outcome</th>"
            "<th>turns</th><th>tool calls</th><th>errors</th><th>tokens</th></tr></thead><tbody>")
    out = [head]
    for i, r in rows.iterrows():
        tokens = r["prompt_tokens"] + r["completion_tokens"]
        out.append(
            f"<tr class='episode'><td><a href='{link(i)}'>#{i}</a></td><td>{esc(str(r.arm))}"
            f"</td><td>{r.seed}</td><td>{r.step}</td><td>{esc(str(r.setting))}</td>"
            f"<td>{esc(str(r.harness))}</td><td>{esc(str(r.task_id))}</td>"
            f"<td>{r.run} {esc(str(r.decoding))}</td><td>{_outcome(r.success)}</td>"
            f"<td>{r.turns}</td><td>{_num(r.tool_calls)}</td><td>{_num(r.tool_errors)}</td>"
            f"<td>{_num(tokens)}</td></tr>")
    return "".join(out) + "</tbody></table>"


def _filters(study: Study, query: Mapping[str, str]) -> str:
    out = ["<form class='filters' method='get' action='/'>"]
    for key, values in study.choices().items():
        if len(values) < 2 and key not in ("arm", "setting"):
            continue
        options = "".join(f"<option{' selected' if query.get(key) == v else ''}>{esc(v)}"
                          f"</option>" for v in values[:400])
        first = "" if key == "source" else "<option value=''>any</option>"  # eval unless asked
        out.append(f"<label>{key}<select name='{key}'>{first}{options}</select></label>")
    out.append(_select("outcome", {"solved": "solved", "failed": "failed"}, query))
    out.append(_select("behaviour", {k: v[0] for k, v in BEHAVIOURS.items()}, query))
    out.append(f"<label>task<input name='task' size='14' value='{esc(query.get('task', ''))}'>"
               "</label><button type='submit'>filter</button> <a href='/'>clear</a></form>")
    return "".join(out)


def _select(key: str, values: dict[str, str], query: Mapping[str, str]) -> str:
    options = "".join(f"<option value='{esc(k)}'{' selected' if query.get(key) == k else ''}>"
                      f"{esc(v)}</option>" for k, v in values.items())
    return (f"<label>{key}<select name='{key}'><option value=''>any</option>{options}"
            "</select></label>")


def _pager(query: Mapping[str, str], number: int, pages: int) -> str:
    if pages == 1:
        return ""
    base = {k: v for k, v in query.items() if k != "page" and v}

    def link(n: int, text: str) -> str:
        return f"<a href='/?{esc(urlencode({**base, 'page': n}))}'>{text}</a>"

    prev = link(number - 1, "&larr; previous") if number > 1 else ""
    nxt = link(number + 1, "next &rarr;") if number < pages else ""
    return f"<div class='pager'>{prev} page {number} of {pages:,} {nxt}</div>"


# --- one episode -----------------------------------------------------------------------
def episode_page(study: Study, index: int) -> str:
    ep = study.episode(index)
    others = study.siblings(index)
    compare = episode_table(others, lambda i: f"/compare?a={index}&b={i}") if len(others) \
        else "<p>No other episode of this task.</p>"
    group = study.group(index)
    told = GROUP_TOLD.get(str(ep["role"]), "")
    kin = (f"<h3>{told}</h3>" + episode_table(group, lambda i: f"/compare?a={index}&b={i}")
           if len(group) else "")
    body = (episode_body(ep) + kin + "<h3>Compare with the same task in evaluations</h3>"
            + compare)
    return page(f"episode #{index}", body, str(study.root))


# a kept training rollout's role -> what its group's other rollouts are to it
GROUP_TOLD = {
    "zero-signal": "Its group: every rollout failed (zero signal); the siblings' rollouts "
                   "that replaced it were trained on instead",
    "rescue": "The zero-signal group it rescued, and the other siblings' rollouts",
    "sampled": "The other rollouts of its group",
}


def episode_body(ep: dict[str, Any], other: dict[str, Any] | None = None) -> str:
    """The episode's identity and cost, then its history turn by turn (with, folded, what the
    model saw before each of its turns); lines of a message the ``other`` episode's matching
    message lacks are marked."""
    record = ep["transcript"]
    meta = [("arm", ep["arm"]), ("seed", ep["seed"]), ("step", ep["step"]),
            ("setting", ep["setting"]), ("harness", ep["harness"]), ("task", ep["task_id"]),
            ("run", f"{ep['run']} ({ep['decoding']})"), ("reward", ep["reward"]),
            ("turns", ep["turns"]),
            *[(c.replace("_", " "), _num(ep[c])) for c in COST],
            ("seconds", "—" if not _finite(ep["seconds"]) else f"{ep['seconds']:.2f}")]
    if record:
        meta += [("termination", record["termination"]), ("answer", record["final_answer"])]
    if ep["source"] == "rollout":
        meta[3] = ("setting", f"training rollout, group {ep['group']} ({ep['role']})")
    if ep["error"]:
        meta.append(("error", ep["error"]))
    out = [f"<h2 class='title'>#{ep['id']} {_outcome(ep['success'])}</h2><table class='meta'>"
           + "".join(f"<tr><td>{esc(k)}</td><td>{esc(str(v))}</td></tr>" for k, v in meta)
           + "</table>"]
    if record is None:
        return out[0] + "<p>No transcript kept for this episode (a run from before hscale " \
                        "kept them).</p>"
    theirs = other["transcript"]["messages"] if other and other.get("transcript") else []
    seen = iter(transcript_views(record))
    for i, (role, content) in enumerate(record["messages"]):
        fold = ""
        if role == "assistant":
            view = next(seen, [])
            fold = ("<details><summary>what the model saw before this turn "
                    f"({len(view)} messages)</summary>"
                    + "".join(_message(r, c) for r, c in view) + "</details>")
        match = theirs[i][1] if i < len(theirs) and theirs[i][0] == role else None
        out.append(fold + _message(role, content, match))
    for n, call in enumerate(record.get("model_calls") or []):
        out.append(f"<h4>model call {n + 1}: {call.get('prompt_tokens')} prompt tokens, "
                   f"{call.get('completion_tokens')} completion, "
                   f"{_num(call.get('seconds'), 2)} s</h4>"
                   + "".join(_message(str(m.get("role", "?")), _text(m.get("content")))
                             for m in call.get("new", []) if isinstance(m, dict))
                   + _message("assistant", str(call.get("reply", "")))
                   + "".join(_message("tool call", str(c)) for c in call.get("tool_calls", [])))
    return "".join(out)


def compare_page(study: Study, a: int, b: int) -> str:
    left, right = study.episode(a), study.episode(b)
    diffs = study.differences(left, right) or ["nothing: the same setting (another draw)"]
    body = ("<h3>What differs</h3><ul class='diffs'>"
            + "".join(f"<li>{esc(d)}</li>" for d in diffs) + "</ul>"
            + f"<div class='pair'><div id='left'>{episode_body(left, right)}</div>"
            + f"<div id='right'>{episode_body(right, left)}</div></div>")
    return page(f"#{a} and #{b}", body, str(study.root))


def export_html(study: Study, query: Mapping[str, str], limit: int = 200) -> str:
    """One self-contained file: the selection's table, then each episode (up to ``limit``),
    linked by anchors."""
    rows = study.select(query)
    shown = rows.head(limit)
    told = ", ".join(f"{k}={v}" for k, v in query.items() if v) or "all episodes"
    head = (f"<p id='summary'><b>{len(rows):,}</b> episodes match ({esc(told)})"
            + (f"; the first {limit} are included" if len(rows) > limit else "") + "</p>")
    bodies = "".join(f"<section id='e{i}'>{episode_body(study.episode(int(i)))}</section><hr>"
                     for i in shown.index)
    return page("hscale view: export", head + episode_table(shown, lambda i: f"#e{i}")
                + bodies, str(study.root))


def _message(role: str, content: str, other: str | None = None) -> str:
    kind = role if role in ("assistant", "tool", "system", "user") else "tool"
    if other is None or other == content:
        text = esc(content)
    else:
        text = "\n".join(f"<span class='changed'>{esc(line.text)}</span>" if line.changed
                         else esc(line.text) for line in marked_lines(content, other))
    return (f"<div class='msg {kind}'><div class='role'><span>{esc(role)}</span></div>"
            f"<pre>{text}</pre></div>")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", p)) if isinstance(p, dict) else str(p)
                         for p in content)
    return str(content)


def _outcome(success: Any) -> str:
    return "<span class='ok'>solved</span>" if bool(success) else "<span class='bad'>failed</span>"


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
        if component[:1].isalpha() and level.isdigit():  # the in-space table of levels
            query.update(level=f"{component[:1]}{level}", setting="in_space")
        return f"http://127.0.0.1:{port}/?{urlencode(query)}" if query else None
    return link


def build_view_app(study: Study):
    """The Starlette app over ``study`` (read-only: GET pages, nothing written)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    def missing(what: str) -> HTMLResponse:
        return HTMLResponse(page("not found", f"<p>{esc(what)}</p>"), status_code=404)

    async def table(request: Request) -> HTMLResponse:
        return HTMLResponse(table_page(study, dict(request.query_params)))

    async def episode(request: Request) -> HTMLResponse:
        index = _int(request.path_params["index"], -1)
        if not 0 <= index < len(study):
            return missing(f"no episode #{request.path_params['index']}")
        return HTMLResponse(episode_page(study, index))

    async def compare(request: Request) -> HTMLResponse:
        a, b = (_int(request.query_params.get(k), -1) for k in ("a", "b"))
        if not (0 <= a < len(study) and 0 <= b < len(study)):
            return missing("compare needs two episode numbers: /compare?a=1&b=2")
        return HTMLResponse(compare_page(study, a, b))

    return Starlette(routes=[Route("/", table), Route("/episode/{index}", episode),
                             Route("/compare", compare)])
