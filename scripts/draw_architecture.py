"""Draw docs/architecture.svg from the code: zoo_lite's layers, the imports between its packages,
and the path of one ``fit``.

    .venv/bin/python scripts/draw_architecture.py [--output docs/architecture.svg] [--allow-missing]

Every ``.py`` file under ``zoo_lite/`` is parsed with ``ast`` (nothing is imported). The import
graph holds module-level and function-level imports between zoo_lite modules (not those under
``if TYPE_CHECKING:``). Modules are grouped into packages and the packages into layers (PACKAGES
below); each layer is a band, each module a box, and an arrow between two packages carries the
number of module-to-module imports it stands for. The numbered badges follow one ``fit`` (FIT_PATH
below); every module and name in it is looked up in the parsed code.

Exit status 1, and nothing written, when:
- the graph has an import cycle (the cycle is printed);
- a module is in no package of PACKAGES, or a module named in FIT_PATH does not exist;
- a function or class named in FIT_PATH does not exist (``--allow-missing`` draws it flagged instead).

The output depends only on the code: the same sources give the same file, byte for byte.
"""

from __future__ import annotations

import argparse
import ast
import math
import sys
import textwrap
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import import_graph  # scripts/import_graph.py, beside this script

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIR = ROOT / "zoo_lite"
DEFAULT_OUTPUT = ROOT / "docs" / "architecture.svg"

# -- the layers: (layer title, [(package label, rule)]) from top to bottom -------------------------
# A rule is "=name" (that module only), "name.*" (the package and everything under it) or a
# "|"-separated list of "=name" rules. A module matched by no rule stops the script: place it here.
LAYERS: list[tuple[str, list[tuple[str, str]]]] = [
    ("user API (facades)", [("zoo_lite", "=zoo_lite|=zoo_lite.import_hooks"),
                            ("learn", "=zoo_lite.learn|=zoo_lite.learn.inference"), ("learn/tf (Orca's)", "zoo_lite.learn.tf.*")]),
    ("frameworks", [("learn/pytorch", "zoo_lite.learn.pytorch.*"), ("learn/tf2", "zoo_lite.learn.tf2.*")]),
    ("shared learn machinery: no ML framework", [("learn/base", "zoo_lite.learn.base.*"), ("learn/metrics", "=zoo_lite.learn.metrics|=zoo_lite.learn.metric_implementations")]),
    ("data: nothing from learn", [("data", "zoo_lite.data.*"), ("data/shard_methods", "zoo_lite.data.shard_methods.*"),
                                  ("data/convert", "zoo_lite.data.convert.*"), ("data/ray_xshards", "zoo_lite.data.ray_xshards.*"),
                                  ("data/pandas", "zoo_lite.data.pandas.*"), ("data/image", "zoo_lite.data.image.*")]),
    ("context: owns Spark's and Ray's lifetime", [("context", "=zoo_lite.context")]),
    ("ray_on_spark: no ML framework", [("ray_on_spark", "zoo_lite.ray_on_spark.*")]),
    ("foundation: imports no other layer",
     [("foundation", "=zoo_lite.errors|=zoo_lite.env_packing|=zoo_lite.host_unpack|=zoo_lite.executor_python|=zoo_lite.keywords|=zoo_lite.waiting|=zoo_lite.user_code|=zoo_lite.spark_settings|=zoo_lite.spark_connect|"
                     "=zoo_lite.spark_daemon|=zoo_lite.standalone|=zoo_lite.lazy_exports")]),
]


@dataclass(frozen=True)
class Step:
    """One hop of a fit: where it runs, what it does, and the (module, name) pairs it is made of."""

    where: str          # "driver", "executors" or "actors" (the badge colour)
    title: str
    text: str
    names: tuple[tuple[str, str], ...]


# -- the path of one fit; every module must exist, every name is checked in the code ---------------
FIT_PATH: list[Step] = [
    Step("driver", "TorchEstimator.fit", "the user's call: a FitRequest with Columns.of(feature_cols, label_cols)",
         (("zoo_lite.learn.pytorch.estimator", "TorchEstimator.fit"),)),
    Step("driver", "GroupEstimator._fit", "starts the worker group (and Ray, on first use), loads the data, runs the epochs",
         (("zoo_lite.learn.base.estimator", "GroupEstimator._fit"),)),
    Step("driver", "data_inputs.rows_in_ray", "XShards or Spark DataFrame -> model arrays in Ray; no rows is an error",
         (("zoo_lite.learn.base.data_inputs", "rows_in_ray"),)),
    Step("executors", "shard.model_arrays_of -> SparkXShards.to_model_arrays",
         "lazy; each Spark task turns its partition into {'x': (ndarray, ...), 'y': ndarray} via Arrow "
         "(a DataFrame: convert.spark_df_to_model_arrays_rdd, columns checked on the driver from the schema)",
         (("zoo_lite.data.shard", "model_arrays_of"), ("zoo_lite.data.shard_methods.conversions", "ConversionMethods.to_model_arrays"),
          ("zoo_lite.data.convert.shard_model_arrays", "shard_to_model_arrays"), ("zoo_lite.data.convert.from_spark", "spark_df_to_model_arrays_rdd"))),
    Step("executors", "SparkXShards.to_ray", "each task puts its arrays into its own Ray node's object store (never via the driver)",
         (("zoo_lite.data.shard_methods.conversions", "ConversionMethods.to_ray"), ("zoo_lite.data.ray_xshards.transfer", "spark_to_ray"))),
    Step("driver", "WorkerGroup.call_each", "tells each actor which row ranges it holds (local partitions first): refs, not rows",
         (("zoo_lite.learn.base.worker_group", "WorkerGroup.call_each"),)),
    Step("actors", "RunnerBase.load_rows", "the actor reads its ranges from the object store, casts the labels, builds its feed",
         (("zoo_lite.learn.base.runner", "RunnerBase.load_rows"),)),
    Step("actors", "RunnerBase.train_epoch -> TorchRunner.train_step",
         "the shared epoch loop; the framework's step over the worker's share of each global batch",
         (("zoo_lite.learn.base.runner", "RunnerBase.train_epoch"), ("zoo_lite.learn.pytorch.runner", "TorchRunner.train_step"))),
    Step("actors", "gradient exchange", "gradients summed over the workers: shared memory on one host, else the gloo all-reduce",
         (("zoo_lite.learn.pytorch.exchange", "gradient_exchange"), ("zoo_lite.learn.base.host_exchange", "host_sum_if_one_host"))),
    Step("driver", "state back through the StateCodec",
         "after every epoch rank 0's state bytes (Runner.get_state) come to the driver, decoded by the Framework's StateCodec",
         (("zoo_lite.learn.base.estimator", "GroupEstimator._pull_state"), ("zoo_lite.learn.base.framework", "StateCodec"))),
]

WHERE_COLOURS = {"driver": "#d95f02", "executors": "#1b9e77", "actors": "#7570b3"}
WHERE_LABELS = {"driver": "on the driver", "executors": "in Spark tasks on the executors", "actors": "in the Ray actors (workers)"}


# =================================================================================================
# the code: modules, imports, names
# =================================================================================================

@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    is_package: bool


def read_modules(root: Optional[Path] = None) -> dict[str, Module]:
    root = root or PACKAGE_DIR
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        source = path.read_text(encoding="utf-8")
        modules[name] = Module(name, path, ast.parse(source, str(path)), is_package)
    return modules


def import_edges(modules: dict[str, Module]) -> dict[str, set[str]]:
    """module -> the zoo_lite modules it imports (see :mod:`import_graph`)."""
    return import_graph.import_edges({name: (str(m.path), m.path.read_text(encoding="utf-8")) for name, m in modules.items()})


def defined_names(module: Module) -> set[str]:
    """Top-level functions and classes of a module, and ``Class.method`` for their methods."""
    names = set()
    for node in module.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names.update(f"{node.name}.{item.name}" for item in node.body
                         if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return names


def _matches(rule: str, module: str) -> bool:
    if rule.endswith(".*"):
        return module == rule[:-2] or module.startswith(rule[:-1])
    return any(module == part.lstrip("=") for part in rule.split("|"))


def package_of(modules: dict[str, Module]) -> dict[str, str]:
    """module -> its package label; the most specific rule wins. Exits if a module has none."""
    rules = [(label, rule) for _, packages in LAYERS for label, rule in packages]
    found, orphans = {}, []
    for name in modules:
        matching = [(len(rule), label) for label, rule in rules if _matches(rule, name)]
        if not matching:
            orphans.append(name)
        else:
            found[name] = max(matching)[1]
    if orphans:
        sys.exit(f"draw_architecture: module(s) {orphans} are in no package of LAYERS; place them in scripts/draw_architecture.py")
    return found


def short_name(module: str, is_package: bool) -> str:
    parts = module.split(".")[1:] + (["__init__"] if is_package else [])
    return "zoo_lite/__init__" if module == "zoo_lite" else "/".join(parts[-2:])


# =================================================================================================
# layout (inches; y grows downwards)
# =================================================================================================

BOX_W, BOX_H, BOX_GX, BOX_GY = 1.62, 0.30, 0.10, 0.09
PAD, FRAME_TITLE, BAND_TITLE = 0.11, 0.44, 0.30
CONTENT_W, PACKAGE_GAP, LANE_GAP, TRACK_GAP = 12.4, 0.6, 0.16, 0.105
MARGIN, PANEL_W, TOP = 0.25, 5.3, 0.75


@dataclass
class Frame:
    label: str
    layer: int
    modules: list[str]
    cols: int
    x: float = 0.0
    y: float = 0.0
    w: float = 0.0
    h: float = 0.0
    boxes: dict[str, tuple[float, float]] = field(default_factory=dict)   # module -> box's top-left

    @property
    def rows(self) -> int:
        return math.ceil(len(self.modules) / self.cols)


@dataclass
class Edge:
    source: str
    target: str
    count: int
    up: bool = False
    points: list[tuple[float, float]] = field(default_factory=list)


def frame_size(cols: int, rows: int) -> tuple[float, float]:
    return cols * BOX_W + (cols - 1) * BOX_GX + 2 * PAD, FRAME_TITLE + rows * BOX_H + (rows - 1) * BOX_GY + PAD


def place_columns(layers: list[list[Frame]]) -> None:
    """Columns per package (fewest rows that fit the width), and the frames' x positions."""
    for frames in layers:
        for rows in range(1, 50):
            cols = [max(1, math.ceil(len(frame.modules) / rows)) for frame in frames]
            width = sum(frame_size(c, 1)[0] for c in cols) + PACKAGE_GAP * (len(frames) - 1)
            if width <= CONTENT_W:
                break
        for frame, c in zip(frames, cols):
            frame.cols = c
            frame.w, frame.h = frame_size(c, frame.rows)
        spare = CONTENT_W - sum(frame.w for frame in frames)
        if len(frames) == 1:
            frames[0].x = (CONTENT_W - frames[0].w) / 2
        else:
            x = 0.0
            for frame in frames:
                frame.x = x
                x += frame.w + spare / (len(frames) - 1)


def route(frames: dict[str, Frame], layers: list[list[Frame]], edges: list[Edge], left0: float) -> tuple[float, float]:
    """Orthogonal routes: down (or up) out of the source frame into the gap beside its band, along
    the gap, through a gutter lane at the side when the target's band is not the next one, along
    the gap beside the target's band, into the target frame. Returns the gutters' widths; sets
    each band's y (the gaps grow to hold their tracks)."""
    for frame in frames.values():
        frame.x += left0
    centre = left0 + CONTENT_W / 2
    outgoing: dict[str, list[Edge]] = defaultdict(list)
    incoming: dict[str, list[Edge]] = defaultdict(list)
    tracks: dict[int, list[tuple[Edge, str]]] = defaultdict(list)   # gap index (below band k) -> segments
    lanes: dict[str, list[Edge]] = {"left": [], "right": []}
    for edge in edges:
        s, t = frames[edge.source], frames[edge.target]
        edge.up = t.layer < s.layer
        outgoing[edge.source].append(edge)
        incoming[edge.target].append(edge)
        if t.layer == s.layer:
            tracks[s.layer].append((edge, "same"))
        elif abs(t.layer - s.layer) == 1:
            tracks[min(s.layer, t.layer)].append((edge, "direct"))
        else:
            tracks[s.layer if not edge.up else s.layer - 1].append((edge, "leave"))
            tracks[t.layer - 1 if not edge.up else t.layer].append((edge, "enter"))
            side = "left" if s.x + s.w / 2 <= centre else "right"
            lanes[side].append(edge)
    # lanes: the longer the jump, the further out
    lane_x: dict[int, float] = {}
    for side, lane_edges in lanes.items():
        lane_edges.sort(key=lambda e: (abs(frames[e.target].layer - frames[e.source].layer), e.source, e.target))
        for i, edge in enumerate(lane_edges):
            lane_x[id(edge)] = left0 - LANE_GAP * (i + 1) if side == "left" else left0 + CONTENT_W + LANE_GAP * (i + 1)
    # the bands' y, with gaps tall enough for their tracks
    y = TOP
    gap_top: dict[int, float] = {}
    for k, band in enumerate(layers):
        band_h = BAND_TITLE + max(frame.h for frame in band) + 0.12
        for frame in band:
            frame.y = y + BAND_TITLE
        y += band_h
        gap_top[k] = y
        y += max(0.42, (len(tracks[k]) + 1) * TRACK_GAP)
    # anchors on the frames' edges, ordered by where the other end goes
    def other_x(edge: Edge, end: str) -> float:
        frame = frames[edge.target if end == "source" else edge.source]
        return lane_x.get(id(edge), frame.x + frame.w / 2)

    anchor: dict[tuple[int, str], float] = {}
    for name, frame in frames.items():
        for end, group in (("source", outgoing[name]), ("target", incoming[name])):
            group = sorted(group, key=lambda e: (other_x(e, end), e.source, e.target))
            for i, edge in enumerate(group):
                anchor[(id(edge), end)] = frame.x + frame.w * (i + 1) / (len(group) + 1)
    track_y: dict[tuple[int, str], float] = {}
    for k, segments in tracks.items():
        segments.sort(key=lambda item: ({"leave": 0, "same": 1, "direct": 2, "enter": 3}[item[1]],
                                        anchor[(id(item[0]), "source")]))
        for i, (edge, kind) in enumerate(segments):
            track_y[(id(edge), kind)] = gap_top[k] + TRACK_GAP * (i + 1)
    for edge in edges:
        s, t = frames[edge.source], frames[edge.target]
        sx, tx = anchor[(id(edge), "source")], anchor[(id(edge), "target")]
        s_out = s.y + s.h if not edge.up else s.y
        t_in = t.y if not edge.up else t.y + t.h
        if t.layer == s.layer:
            ty = track_y[(id(edge), "same")]
            edge.points = [(sx, s.y + s.h), (sx, ty), (tx, ty), (tx, t.y + t.h)]
        elif abs(t.layer - s.layer) == 1:
            ty = track_y[(id(edge), "direct")]
            edge.points = [(sx, s_out), (sx, ty), (tx, ty), (tx, t_in)]
        else:
            y1, y2, lx = track_y[(id(edge), "leave")], track_y[(id(edge), "enter")], lane_x[id(edge)]
            edge.points = [(sx, s_out), (sx, y1), (lx, y1), (lx, y2), (tx, y2), (tx, t_in)]
    return LANE_GAP * (len(lanes["left"]) + 1), LANE_GAP * (len(lanes["right"]) + 1)


# =================================================================================================
# drawing
# =================================================================================================

def draw(modules: dict[str, Module], edges_by_module: dict[str, set[str]], output: Path, missing: set[tuple[str, str]]) -> None:
    import matplotlib

    matplotlib.use("agg" if output.suffix == ".png" else "svg")
    matplotlib.rcParams.update({"svg.hashsalt": "zoo_lite-architecture", "svg.fonttype": "none",
                                "font.family": ["DejaVu Sans", "sans-serif"], "path.simplify": False})
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Rectangle
    from matplotlib.path import Path as MplPath

    package = package_of(modules)
    layers = [[Frame(label, k, sorted(m for m in modules if package[m] == label), 1) for label, _ in packages]
              for k, (_, packages) in enumerate(LAYERS)]
    layers = [[frame for frame in band if frame.modules] for band in layers]
    frames = {frame.label: frame for band in layers for frame in band}
    place_columns(layers)

    counts: dict[tuple[str, str], int] = defaultdict(int)
    for source, targets in edges_by_module.items():
        for target in targets:
            if package[source] != package[target]:
                counts[(package[source], package[target])] += 1
    edges = [Edge(s, t, n) for (s, t), n in sorted(counts.items())]
    # a first pass gives the gutters' widths, the second places everything after the left gutter
    probe = {label: Frame(f.label, f.layer, f.modules, f.cols, f.x, 0, f.w, f.h) for label, f in frames.items()}
    left_gutter, right_gutter = route(probe, [[probe[f.label] for f in band] for band in layers],
                                      [Edge(e.source, e.target, e.count) for e in edges], 0.0)
    left0 = MARGIN + left_gutter + 0.2
    route(frames, layers, edges, left0)
    diagram_right = left0 + CONTENT_W + right_gutter + 0.1
    bottom = max(frame.y + frame.h for frame in frames.values()) + 0.35

    for frame in frames.values():
        for i, module in enumerate(frame.modules):
            row, col = divmod(i, frame.cols)
            frame.boxes[module] = (frame.x + PAD + col * (BOX_W + BOX_GX), frame.y + FRAME_TITLE + row * (BOX_H + BOX_GY))

    panel_x = diagram_right + 0.35
    width = panel_x + PANEL_W + MARGIN
    height = max(bottom + 1.0, 10.5)
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.axis("off")

    ax.text(MARGIN, 0.32, "zoo_lite: layers, imports between packages, and one fit", fontsize=15, weight="bold", va="center")
    up = sum(edge.count for edge in edges if edge.up)
    ax.text(MARGIN, 0.58, "drawn from zoo_lite/**.py by scripts/draw_architecture.py; " +
            (f"{up} import(s) point UP the layers (red)" if up else "every import between packages points down the layers"),
            fontsize=8.5, color="#d62728" if up else "#555555", va="center")

    # bands
    for k, band in enumerate(layers):
        top = band[0].y - BAND_TITLE
        band_h = BAND_TITLE + max(frame.h for frame in band) + 0.12
        ax.add_patch(Rectangle((MARGIN, top), diagram_right - MARGIN, band_h, facecolor="#f3f3f3" if k % 2 else "#e9eef5",
                               edgecolor="none", zorder=0))
        ax.text(MARGIN + 0.08, top + 0.15, f"{k + 1}  {LAYERS[k][0]}", fontsize=8.5, color="#333333", va="center",
                style="italic", zorder=1)

    # packages and modules
    fit_modules = defaultdict(list)
    for number, step in enumerate(FIT_PATH, 1):
        for module, _ in step.names:
            if (number, step.where) not in fit_modules[module]:
                fit_modules[module].append((number, step.where))
    for frame in frames.values():
        ax.add_patch(FancyBboxPatch((frame.x, frame.y), frame.w, frame.h, boxstyle="round,pad=0,rounding_size=0.06",
                                    facecolor="white", edgecolor="#555555", linewidth=1.0, zorder=2))
        ax.text(frame.x + PAD, frame.y + 0.15, frame.label, fontsize=9.5, weight="bold", va="center", zorder=3)
        ax.text(frame.x + PAD, frame.y + 0.32, f"{len(frame.modules)} module{'s' if len(frame.modules) > 1 else ''}",
                fontsize=6.5, color="#666666", va="center", zorder=3)
        for module, (bx, by) in frame.boxes.items():
            on_path = module in fit_modules
            ax.add_patch(Rectangle((bx, by), BOX_W, BOX_H, facecolor="#fff4e8" if on_path else "#f7f7f7",
                                   edgecolor="#d95f02" if on_path else "#9a9a9a", linewidth=1.1 if on_path else 0.6, zorder=3))
            ax.text(bx + 0.07, by + BOX_H / 2 + 0.005, short_name(module, modules[module].is_package), fontsize=7.5,
                    va="center", family=["DejaVu Sans Mono", "monospace"], zorder=4)
            for i, (number, where) in enumerate(reversed(fit_modules.get(module, []))):
                cx, cy = bx + BOX_W - 0.12 - i * 0.23, by + BOX_H / 2
                ax.add_patch(Circle((cx, cy), 0.105, facecolor=WHERE_COLOURS[where], edgecolor="white", linewidth=0.8, zorder=6))
                ax.text(cx, cy + 0.005, str(number), fontsize=6.5, color="white", weight="bold", ha="center", va="center", zorder=7)

    # package imports
    palette = ["#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#ff7f0e", "#393b79"]
    colour = {label: palette[i % len(palette)] for i, label in enumerate(frames)}
    for edge in edges:
        col = "#d62728" if edge.up else colour[edge.source]
        path = MplPath(edge.points, [MplPath.MOVETO] + [MplPath.LINETO] * (len(edge.points) - 1))
        ax.add_patch(FancyArrowPatch(path=path, arrowstyle="-|>,head_length=4,head_width=2.2", color=col,
                                     linewidth=2.2 if edge.up else 1.1, shrinkA=0, shrinkB=0, zorder=5, joinstyle="miter"))
        (x0, y0), (x1, y1) = edge.points[-2], edge.points[-1]
        ax.text(x1 + 0.03, (y0 + y1) / 2 if abs(y1 - y0) > 0.25 else y0, str(edge.count), fontsize=6.5, color=col,
                ha="left", va="center", weight="bold", zorder=6,
                bbox=dict(boxstyle="round,pad=0.08", facecolor="white", edgecolor="none", alpha=0.85))

    # legend under the bands
    y = bottom + 0.05
    ax.add_patch(FancyArrowPatch((MARGIN + 0.1, y + 0.1), (MARGIN + 0.6, y + 0.1), arrowstyle="-|>,head_length=4,head_width=2.2",
                                 color="#444444", linewidth=1.1))
    ax.text(MARGIN + 0.7, y + 0.1, "package imports package; the number counts the module-to-module imports it stands for "
            "(module and function level, not under TYPE_CHECKING). Imports inside a package are not drawn; "
            "an import up the layers would be red.", fontsize=7.5, va="center", color="#333333")
    module_edges = sum(len(t) for t in edges_by_module.values())
    ax.text(MARGIN + 0.7, y + 0.35, f"{len(modules)} modules, {module_edges} module imports, {len(edges)} package arrows, "
            "no import cycle.", fontsize=7.5, va="center", color="#333333")

    # the fit, step by step
    px, py = panel_x, TOP
    ax.add_patch(FancyBboxPatch((px, py), PANEL_W, bottom - TOP - 0.1, boxstyle="round,pad=0,rounding_size=0.08",
                                facecolor="#fffaf4", edgecolor="#d95f02", linewidth=1.0, zorder=1))
    ax.text(px + 0.15, py + 0.25, "One fit: est.fit(shards, feature_cols=..., label_cols=...)", fontsize=10, weight="bold",
            va="center", zorder=2)
    y = py + 0.55
    for where, label in WHERE_LABELS.items():
        ax.add_patch(Circle((px + 0.25, y), 0.09, facecolor=WHERE_COLOURS[where], edgecolor="none", zorder=2))
        ax.text(px + 0.42, y, label, fontsize=7.5, va="center", zorder=2)
        y += 0.24
    y += 0.12
    for number, step in enumerate(FIT_PATH, 1):
        ax.add_patch(Circle((px + 0.25, y + 0.02), 0.11, facecolor=WHERE_COLOURS[step.where], edgecolor="none", zorder=2))
        ax.text(px + 0.25, y + 0.025, str(number), fontsize=7, color="white", weight="bold", ha="center", va="center", zorder=3)
        ax.text(px + 0.45, y, step.title, fontsize=8.5, weight="bold", va="center", family=["DejaVu Sans Mono", "monospace"], zorder=2)
        y += 0.2
        for line in textwrap.wrap(step.text, 78):
            ax.text(px + 0.45, y, line, fontsize=7.5, va="center", color="#333333", zorder=2)
            y += 0.17
        where_in_code = ", ".join(short_name(module, modules[module].is_package) for module in
                                  dict.fromkeys(module for module, _ in step.names))
        ax.text(px + 0.45, y, where_in_code, fontsize=7, va="center", color="#777777", family=["DejaVu Sans Mono", "monospace"], zorder=2)
        y += 0.17
        for module, name in step.names:
            if (module, name) in missing:
                ax.text(px + 0.45, y, f"not in the code: {short_name(module, modules[module].is_package)}: {name}",
                        fontsize=7, va="center", color="#d62728", weight="bold", zorder=2)
                y += 0.17
        y += 0.1

    if output.suffix == ".png":   # a preview
        fig.savefig(output, dpi=110)
    else:
        fig.savefig(output, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)


def check_fit_path(modules: dict[str, Module]) -> set[tuple[str, str]]:
    """The (module, name) pairs of FIT_PATH not defined in the code; exits if a module is missing."""
    names = {name: defined_names(module) for name, module in modules.items()}
    absent = sorted({module for step in FIT_PATH for module, _ in step.names if module not in modules})
    if absent:
        sys.exit(f"draw_architecture: FIT_PATH names module(s) {absent} that do not exist; update FIT_PATH")
    return {(module, name) for step in FIT_PATH for module, name in step.names if name not in names[module]}


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--allow-missing", action="store_true",
                        help="draw a fit step whose function or class is not in the code, flagged, instead of failing")
    args = parser.parse_args(argv)
    modules = read_modules()
    edges = import_edges(modules)
    cycle = import_graph.find_cycle(edges)
    if cycle:
        print("draw_architecture: import cycle: " + " -> ".join(cycle), file=sys.stderr)
        return 1
    package_of(modules)
    missing = check_fit_path(modules)
    for module, name in sorted(missing):
        print(f"draw_architecture: FIT_PATH names {module}.{name}, which the code does not define", file=sys.stderr)
    if missing and not args.allow_missing:
        print("draw_architecture: update FIT_PATH to the code (or pass --allow-missing to draw them flagged); nothing written",
              file=sys.stderr)
        return 1
    draw(modules, edges, args.output, missing)
    print(f"wrote {args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
