"""Panning and zooming a graph view with ~10,000 visible nodes in a real JupyterLab (headless
Chromium): frames per second and the tab's memory (prints figures; not a test).

    flock /tmp/nbgrad-browser.lock python tests/benchmarks/browser_pan_zoom.py
    ... browser_pan_zoom.py --branches 40 --steps 25 --seconds 2 --repeats 5

A cell draws ``--branches`` chains of ``--steps`` calls ``h = (h * 1.01).tanh()`` summed into
one loss (``branches * (2 * steps + 1) + 2`` nodes, 10,102 by default: a grid of 100 x 101
boxes; ``--max-nodes`` is raised for a bigger one); the next cell expands it (``expand_all``:
no series folded). The page then zooms out with Ctrl + wheel until the whole graph is in view,
and each phase, ``--seconds`` long and ``--repeats`` times (alternated), drives the view with
CDP input events as a user would:

- ``pan``: a drag (pointer down, moves around a circle, up where it began: no click, which
  on the overview would zoom to the box there; until the widget told them apart it did, and
  the phases after the first far pan ran at a readable zoom);
- ``zoom``: Ctrl + wheel at the canvas's centre, 5 steps out and 5 back in, again and again;
- ``idle``: no input (what the page does alone);
- ``pan near`` (first): the drag at NEAR_STEPS wheel steps out from the open view, a zoom
  where labels are still drawn (NOTE [Big graphs drawn in bulk] in widgets/graph_bulk.js);
- ``zoom near`` (second): Ctrl + wheel there, 5 steps in and 5 back out, again and again:
  the SVG elements of what leaves the view reused for what comes in (NOTE [Elements reused]
  in widgets/graph_bulk.js), with no text while the wheel zooms (NOTE [No text while the
  wheel zooms] in widgets/graph_view.js).

Printed per phase: frames per second (requestAnimationFrame callbacks over the phase's time,
median and each run), the longest frame (ms), the input events sent per second and the
renderer's resident memory after each run. Memory:
the JS heap (CDP ``Performance.getMetrics``: used and total), the DOM's element count, and the
tab's renderer process's resident memory (VmRSS of the Chromium renderer processes started
under this script), after the open and after the phases. Needs what the browser tests need
(tests/notebook/test_browser.py). Run it under the browser-test lock: other browsers on the
machine change the figures.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "notebook"))

from playwright import sync_api  # noqa: E402
from test_browser import CHROMIUM, Notebook, run_lab  # noqa: E402 - the lab and page helpers
from test_browser_shapes import renderer_rss_mb  # noqa: E402

NEAR_STEPS = 4  # wheel steps out from zoom 1: 1 / 1.15**4 = 0.57
FRAMES = """() => {
  const f = window.__nbgFrames = { n: 0, last: 0, longest: 0, start: performance.now() };
  const tick = (t) => {
    if (f.last) f.longest = Math.max(f.longest, t - f.last);
    f.last = t;
    f.n += 1;
    if (!f.stop) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""
STOP = """() => { const f = window.__nbgFrames; f.stop = true;
  return { n: f.n, seconds: (performance.now() - f.start) / 1000, longest: f.longest }; }"""
CUE = """() => { const t = document.querySelector('.nbg-graph .nbg-cue')?.textContent || '';
  const m = /(\\d+) of (\\d+) boxes out of view/.exec(t) || /\\((\\d+) boxes\\)/.exec(t);
  if (!m) return null;
  return m.length === 3 ? { out: +m[1], all: +m[2] } : { out: 0, all: +m[1] }; }"""


class _Folders:
    """What ``run_lab`` needs of pytest's ``tmp_path_factory``."""

    def __init__(self, root):
        self.root, self.n = Path(root), 0

    def mktemp(self, name):
        self.n += 1
        path = self.root / f"{name}{self.n}"
        path.mkdir()
        return path


def cells(branches, steps):
    return [
        "%load_ext nbgrad\nimport nbgrad as ng",
        f"%%autograd -o s --max-nodes {max(20_000, branches * (2 * steps + 1) + 2)}\n"
        "hs = []\n"
        f"for j in range({branches}):\n"
        "    h = ng.randn(4, requires_grad=True)\n"
        f"    for i in range({steps}):\n"
        "        h = (h * 1.01).tanh()\n"
        "    hs.append(h)\n"
        "loss = ng.stack(hs).sum()",
        "s.graph.expand_all()",
    ]


def memory(page, cdp):
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    elements = page.evaluate("document.getElementsByTagName('*').length")
    return (
        f"JS heap {metrics['JSHeapUsedSize'] / 2**20:.0f} MB used of "
        f"{metrics['JSHeapTotalSize'] / 2**20:.0f} MB, {elements:,} elements, "
        f"renderer RSS {renderer_rss_mb():.0f} MB"
    )


def drive(page, cdp, phase, seconds, centre):
    """One phase: input events for ``seconds``; returns (fps, longest frame ms, events/s)."""
    x, y = centre
    page.evaluate(FRAMES)
    t0, events = time.perf_counter(), 0
    if phase == "pan":
        cdp.send(
            "Input.dispatchMouseEvent",
            {"type": "mousePressed", "x": x, "y": y, "button": "left", "clickCount": 1},
        )
    while time.perf_counter() - t0 < seconds:
        t = time.perf_counter() - t0
        if phase == "pan":  # around a circle of 150 px, once a second
            a = 2 * math.pi * t
            event = {
                "type": "mouseMoved",
                "x": x + 150 * math.cos(a) - 150,
                "y": y + 150 * math.sin(a),
                "button": "left",
                "buttons": 1,
            }
            cdp.send("Input.dispatchMouseEvent", event)
        elif phase.startswith("zoom"):  # 5 steps out, 5 back in (near: in, then out)
            dy = 60 if (events // 5) % 2 == (phase == "zoom near") else -60
            event = {"type": "mouseWheel", "x": x, "y": y, "deltaX": 0, "deltaY": dy}
            cdp.send("Input.dispatchMouseEvent", {**event, "modifiers": 2})  # Ctrl
        events += phase != "idle"
        time.sleep(max(0.0, 1 / 60 - (time.perf_counter() - t0 - t)))
    if phase == "pan":
        cdp.send(
            "Input.dispatchMouseEvent",
            {"type": "mouseReleased", "x": x, "y": y, "button": "left"},
        )
    f = page.evaluate(STOP)
    rate = events / (time.perf_counter() - t0)
    return f["n"] / f["seconds"], f["longest"], rate, renderer_rss_mb()


def zoom_out(page, cdp, centre, steps=60):
    """Ctrl + wheel out ``steps`` times, or until the whole graph is in view."""
    for _ in range(steps):
        cue = page.evaluate(CUE)
        if cue and cue["out"] == 0:
            break
        cdp.send(
            "Input.dispatchMouseEvent",
            {
                "type": "mouseWheel",
                "x": centre[0],
                "y": centre[1],
                "deltaX": 0,
                "deltaY": 100,
                "modifiers": 2,
            },
        )
        page.wait_for_timeout(100)
    return page.evaluate(CUE)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--branches", type=int, default=100)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--shots", help="save screenshots (at open, zoomed out) in this folder")
    args = p.parse_args()
    boxes = args.branches * (2 * args.steps + 1) + 2
    with (
        tempfile.TemporaryDirectory() as tmp,
        run_lab(_Folders(tmp), {"pan.ipynb": cells(args.branches, args.steps)}) as lab,
        sync_api.sync_playwright() as pw,
    ):
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        book = Notebook(page, Path(tmp))
        t0 = time.perf_counter()
        book.open_and_run(lab, "pan.ipynb")
        page.evaluate(FRAMES)
        book.wait_all_run(timeout=600_000)
        page.wait_for_function(f"() => (({CUE})() || {{all: 0}}).all >= {boxes}", timeout=600_000)
        page.wait_for_timeout(500)
        longest = page.evaluate(STOP)["longest"]
        print(
            f"{boxes:,} boxes drawn {time.perf_counter() - t0:.1f} s after the notebook opened; "
            f"the page's longest frame meanwhile {longest:.0f} ms"
        )
        graph = book.cell(1).locator(".nbg-graph")
        graph.scroll_into_view_if_needed()
        if args.shots:
            graph.screenshot(path=f"{args.shots}/pan-zoom-open.png")
        r = graph.locator(".nbg-canvas").bounding_box()
        centre = (r["x"] + r["width"] / 2, r["y"] + r["height"] / 2)
        graph.locator(".nbg-minimap").click()  # the graph's middle in the view's
        cue = zoom_out(page, cdp, centre, NEAR_STEPS)
        near = f"pan near ({cue['all'] - cue['out']:,} boxes in view)"
        runs = {near: [drive(page, cdp, "pan", args.seconds, centre) for _ in range(args.repeats)]}
        runs["zoom near"] = [
            drive(page, cdp, "zoom near", args.seconds, centre) for _ in range(args.repeats)
        ]
        cue = zoom_out(page, cdp, centre)
        print(f"zoomed out: {cue['all'] - cue['out']:,} of {cue['all']:,} boxes in view")
        print("zoomed out:", memory(page, cdp))
        if args.shots:
            graph.screenshot(path=f"{args.shots}/pan-zoom-out.png")
        far = {"pan": [], "zoom": [], "idle": []}
        for _ in range(args.repeats):
            for phase in far:
                far[phase].append(drive(page, cdp, phase, args.seconds, centre))
        runs.update(far)
        for phase, got in runs.items():
            fps = [f for f, *_ in got]
            print(
                f"{phase}: {statistics.median(fps):5.1f} fps median "
                f"({', '.join(f'{f:.1f}' for f in fps)}); longest frame "
                f"{max(x[1] for x in got):.0f} ms; {statistics.median(x[2] for x in got):.0f} "
                f"input events/s; renderer RSS after it {', '.join(f'{x[3]:.0f}' for x in got)} MB"
            )
        print("after the phases:", memory(page, cdp))
        print("page errors:", book.errors or "none")
        browser.close()


if __name__ == "__main__":
    main()
