"""Every figure of the report is drawn whole: no title, label, tick or legend text runs past
the figure's edge (a title cut at "rolling mean of 3 ste" was one), on the demo's shape of
results; the component-effects figure keeps its legend off the data."""

from __future__ import annotations

import pytest

from hscale.analysis import FIGURES, NoData, Options, demo_like, load_results


def clipped(fig) -> list[str]:
    """The visible texts of ``fig`` that run past its edge, once drawn."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer, edge = canvas.get_renderer(), fig.bbox
    undrawn = set()  # tick labels matplotlib keeps for ticks outside the view: never drawn
    for ax in fig.axes:
        for axis, limits in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            low, high = sorted(limits)
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not low - 1e-9 <= tick.get_loc() <= high + 1e-9:
                    undrawn.update({id(tick.label1), id(tick.label2)})
    out = []
    for text in fig.findobj(Text):
        if not text.get_visible() or not text.get_text().strip() or id(text) in undrawn:
            continue
        box = text.get_window_extent(renderer)
        if box.x0 < edge.x0 - 1 or box.x1 > edge.x1 + 1 or box.y0 < edge.y0 - 1 \
                or box.y1 > edge.y1 + 1:
            out.append(text.get_text())
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = demo_like(tmp_path_factory.mktemp("figures") / "runs", tasks=6, steps=8)
    return load_results(root)


@pytest.mark.parametrize("name", list(FIGURES.names()))
def test_no_figure_text_runs_past_the_edge(results, name):
    spec = FIGURES.get(name)
    try:
        fig = spec.draw(spec.data(results, Options(n_boot=100)))
    except NoData:
        pytest.skip(f"{name}: nothing to draw on these results")
    assert clipped(fig) == [], name


def test_the_effects_legend_is_beside_the_panels(results):
    spec = FIGURES.get("main_effects")
    fig = spec.draw(spec.data(results, Options(n_boot=100)))
    assert not any(ax.get_legend() for ax in fig.axes)  # none inside a panel
    assert fig.legends and clipped(fig) == []
