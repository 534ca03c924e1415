"""An update's dataflow graph, laid out left to right and drawn as inline SVG.

A report must open anywhere, offline, years later: no graph library in the page, no
script to run. So the layout is computed here, in Python, by the classic layered
(Sugiyama-style) recipe kept small: layers by longest path from the sources, a virtual
point per layer an edge skips (so long edges route between nodes, not through them), and
a few barycenter sweeps to untangle crossings. Good enough for the tens of datasets a
pipeline has; nothing here needs to be optimal, only readable.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from headwater.event_log_format import FlowStatus
from headwater.pipelines.report.model import FlowState, UpdateSummary

NODE_W = 252
NODE_H = 66
VIRTUAL_H = 18
GAP_X = 58
GAP_Y = 22
MARGIN = 16
SWEEPS = 8

KIND_LABELS = {
    "STREAMING_TABLE": "streaming table",
    "MATERIALIZED_VIEW": "materialized view",
    "TEMPORARY_VIEW": "temporary view",
    "SINK": "sink",
    "TABLE": "table",
    "EXTERNAL": "external source",
    "FLOW": "flow",
}
REFRESH_LABELS = {
    "NO_OP": "unchanged",
    "APPEND": "new rows appended",
    "GROUP_AGGREGATE": "groups merged",
    "PARTITION_OVERWRITE": "partitions recomputed",
    "FULL_RECOMPUTE": "recomputed",
}
# A flow's states, and an update's (CANCELED, INITIALIZING, SETTING_UP_TABLES).
STATUS_COLOURS: dict[str, str] = {
    FlowStatus.COMPLETED: "#1a7f37",
    FlowStatus.FAILED: "#cf222e",
    FlowStatus.SKIPPED: "#8c959f",
    FlowStatus.STOPPED: "#8c959f",
    "CANCELED": "#8c959f",
    FlowStatus.RETRYING: "#bf8700",
    FlowStatus.RESTARTING: "#bf8700",
    FlowStatus.RUNNING: "#0969da",
    FlowStatus.STARTING: "#0969da",
    FlowStatus.QUEUED: "#0969da",
    "INITIALIZING": "#0969da",
    "SETTING_UP_TABLES": "#0969da",
}
NEUTRAL = "#57606a"
# worst first: a dataset fed by several flows shows the worst of their states
SEVERITY: list[str] = [
    FlowStatus.FAILED,
    FlowStatus.RETRYING,
    FlowStatus.RESTARTING,
    FlowStatus.STOPPED,
    FlowStatus.RUNNING,
    FlowStatus.STARTING,
    FlowStatus.QUEUED,
    FlowStatus.COMPLETED,
    FlowStatus.SKIPPED,
]


@dataclass(frozen=True)
class Node:
    """A box of the drawing: a dataset, a flow drawn apart from its dataset, or a virtual
    point an edge passes through."""

    id: str
    label: str
    title: str
    kind: str
    status: str | None = None
    rows_out: int | None = None
    rows_in: int | None = None
    seconds: float | None = None
    virtual: bool = False
    upserted: int | None = None  # AUTO CDC's changes to its target
    deleted: int | None = None
    refresh: str | None = None  # a materialized view's refresh technique, and why
    refresh_reason: str | None = None


@dataclass(frozen=True)
class Placed:
    node: Node
    layer: int
    x: float
    y: float

    @property
    def height(self) -> int:
        return VIRTUAL_H if self.node.virtual else NODE_H


@dataclass(frozen=True)
class Edge:
    points: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class GraphLayout:
    nodes: tuple[Placed, ...]
    edges: tuple[Edge, ...]
    width: float
    height: float


def graph(update: UpdateSummary) -> tuple[list[Node], list[tuple[str, str]]]:
    """Nodes and edges: inputs -> flow -> output, or inputs -> output for the flow a
    dataset's own query defines (its status is then the dataset's)."""
    prefix = _common_prefix([d.key for d in update.datasets if not d.external])
    by_output: dict[str, list[FlowState]] = {}
    for f in update.flows:
        by_output.setdefault(f.output, []).append(f)
    nodes: list[Node] = []
    edges: list[tuple[str, str]] = []
    for d in update.datasets:
        flows = by_output.get(d.key, [])
        own = [f for f in flows if f.implicit]
        shown = own if len(own) == 1 else flows
        nodes.append(
            Node(
                id=f"d:{d.key}",
                label=_short(d.key, prefix),
                title=d.key,
                kind=d.kind,
                status=_worst(f.status for f in shown),
                rows_out=_sum(f.rows_out for f in shown),
                rows_in=_sum(f.rows_in for f in shown),
                seconds=max((f.seconds for f in shown if f.seconds is not None), default=None),
                upserted=_sum(f.upserted for f in shown),
                deleted=_sum(f.deleted for f in shown),
                refresh=next((f.refresh for f in shown if f.refresh), None),
                refresh_reason=next((f.refresh_reason for f in shown if f.refresh), None),
            )
        )
    for f in update.flows:
        target = f"d:{f.output}"
        own = [g for g in by_output.get(f.output, []) if g.implicit]
        if f.implicit and len(own) == 1:
            edges.extend((f"d:{source}", target) for source in f.inputs)
            continue
        flow_id = f"f:{f.name}"
        nodes.append(
            Node(
                flow_id,
                f.name,
                f"flow {f.name} into {f.output}",
                "FLOW",
                f.status,
                f.rows_out,
                f.rows_in,
                f.seconds,
                upserted=f.upserted,
                deleted=f.deleted,
            )
        )
        edges.extend((f"d:{source}", flow_id) for source in f.inputs)
        edges.append((flow_id, target))
    return nodes, list(dict.fromkeys(edges))


def layout(nodes: Sequence[Node], edges: Sequence[tuple[str, str]]) -> GraphLayout:
    """Layers by longest path, virtual points on long edges, barycenter ordering."""
    ids = [n.id for n in nodes]
    known = set(ids)
    edges = [(a, b) for a, b in edges if a in known and b in known and a != b]
    layer = _layers(ids, edges)
    all_nodes = {n.id: n for n in nodes}
    chains: list[list[str]] = []
    for a, b in edges:
        chain = [a]
        for i, between in enumerate(range(layer[a] + 1, layer[b])):
            vid = f"v:{a}->{b}:{i}"
            all_nodes[vid] = Node(vid, "", "", "", virtual=True)
            layer[vid] = between
            chain.append(vid)
        chains.append([*chain, b])
    layers: list[list[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for nid in all_nodes:
        layers[layer[nid]].append(nid)
    preds: dict[str, list[str]] = {nid: [] for nid in all_nodes}
    succs: dict[str, list[str]] = {nid: [] for nid in all_nodes}
    for chain in chains:
        for a, b in zip(chain[:-1], chain[1:], strict=True):
            succs[a].append(b)
            preds[b].append(a)
    best, fewest = [list(col) for col in layers], _crossings(layers, succs)
    for sweep in range(SWEEPS):
        down = sweep % 2 == 0
        indices = range(1, len(layers)) if down else range(len(layers) - 2, -1, -1)
        for i in indices:
            _barycenter(layers, i, preds if down else succs)
        crossings = _crossings(layers, succs)
        if crossings < fewest:  # a sweep can make things worse: keep the best seen
            best, fewest = [list(col) for col in layers], crossings
    return _place(best, all_nodes, layer, chains)


def _crossings(layers: list[list[str]], succs: dict[str, list[str]]) -> int:
    """Pairs of edges that cross between adjacent layers (quadratic; graphs are small)."""
    position = {n: p for col in layers for p, n in enumerate(col)}
    total = 0
    for col in layers:
        pairs = [(position[a], position[b]) for a in col for b in succs[a]]
        total += sum(
            1
            for i, (a1, b1) in enumerate(pairs)
            for a2, b2 in pairs[i + 1 :]
            if (a1 - a2) * (b1 - b2) < 0
        )
    return total


def _layers(ids: Sequence[str], edges: Sequence[tuple[str, str]]) -> dict[str, int]:
    """Longest path from a source (Kahn's order); edges closing a cycle are ignored."""
    incoming = {n: 0 for n in ids}
    out: dict[str, list[str]] = {n: [] for n in ids}
    for a, b in edges:
        incoming[b] += 1
        out[a].append(b)
    layer = dict.fromkeys(ids, 0)
    ready = [n for n in ids if incoming[n] == 0]
    done: set[str] = set()
    while len(done) < len(ids):
        if not ready:  # a cycle: release its first node
            ready = [next(n for n in ids if n not in done)]
        n = ready.pop(0)
        if n in done:
            continue
        done.add(n)
        for m in out[n]:
            if m not in done:
                layer[m] = max(layer[m], layer[n] + 1)
                incoming[m] -= 1
                if incoming[m] <= 0:
                    ready.append(m)
    return layer


def _barycenter(layers: list[list[str]], i: int, neighbours: dict[str, list[str]]) -> None:
    """Order layer ``i`` by the mean position of each node's neighbours in the layer
    just swept (a node with none keeps its place); stable, so ties keep the order."""
    positions = {n: p for layer in layers for p, n in enumerate(layer)}
    keys: dict[str, float] = {}
    for p, n in enumerate(layers[i]):
        near = [positions[m] for m in neighbours[n] if m in positions]
        keys[n] = sum(near) / len(near) if near else float(p)
    layers[i].sort(key=lambda n: keys[n])


def _place(
    layers: list[list[str]],
    nodes: dict[str, Node],
    layer: dict[str, int],
    chains: list[list[str]],
) -> GraphLayout:
    def height(nid: str) -> int:
        return VIRTUAL_H if nodes[nid].virtual else NODE_H

    columns = [sum(height(n) + GAP_Y for n in col) - GAP_Y for col in layers]
    tallest = max(columns, default=0)
    placed: dict[str, Placed] = {}
    for i, col in enumerate(layers):
        y = MARGIN + (tallest - columns[i]) / 2
        for nid in col:
            placed[nid] = Placed(nodes[nid], i, MARGIN + i * (NODE_W + GAP_X), y)
            y += height(nid) + GAP_Y
    drawn = []
    for chain in chains:
        points: list[tuple[float, float]] = []
        for k, nid in enumerate(chain):
            p = placed[nid]
            mid = p.y + p.height / 2
            if p.node.virtual:
                points += [(p.x, mid), (p.x + NODE_W, mid)]
            elif k == 0:
                points.append((p.x + NODE_W, mid))
            else:
                points.append((p.x, mid))
        drawn.append(Edge(tuple(points)))
    width = MARGIN * 2 + max(len(layers), 1) * (NODE_W + GAP_X) - GAP_X
    return GraphLayout(
        tuple(placed[n] for n in placed if not nodes[n].virtual),
        tuple(drawn),
        width,
        MARGIN * 2 + max(tallest, NODE_H),
    )


# -- drawing ------------------------------------------------------------------------------


def svg(update: UpdateSummary) -> str:
    """The graph of ``update`` as an ``<svg>`` element (sized; scrolls in its box)."""
    nodes, edges = graph(update)
    placed = layout(nodes, edges)
    parts = [
        f'<svg class="graph" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'width="{placed.width:.0f}" height="{placed.height:.0f}" '
        # shrinks to fit its box, down to 70% (text stays legible); scrolls beyond
        f'style="width:100%;height:auto;max-width:{placed.width:.0f}px;'
        f'min-width:{0.7 * placed.width:.0f}px" '
        f'viewBox="0 0 {placed.width:.0f} {placed.height:.0f}" '
        f'aria-label="Dataflow graph of update {_e(update.id)}">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#8c959f"/></marker></defs>',
    ]
    parts += [_edge(e) for e in placed.edges]
    parts += [_node(p, dry=update.dry_run) for p in placed.nodes]
    parts.append("</svg>")
    return "\n".join(parts)


def _edge(edge: Edge) -> str:
    (x, y), *rest = edge.points
    d = [f"M{x:.1f},{y:.1f}"]
    for nx, ny in rest:
        if abs(ny - y) < 0.5:
            d.append(f"L{nx:.1f},{ny:.1f}")
        else:
            bend = (nx - x) / 2
            d.append(f"C{x + bend:.1f},{y:.1f} {nx - bend:.1f},{ny:.1f} {nx:.1f},{ny:.1f}")
        x, y = nx, ny
    return (
        f'<path class="edge" d="{" ".join(d)}" fill="none" stroke="#8c959f" '
        'stroke-width="1.5" marker-end="url(#arrow)"/>'
    )


def _node(p: Placed, *, dry: bool) -> str:
    n = p.node
    colour = STATUS_COLOURS.get(n.status or "", NEUTRAL)
    flow = n.kind == "FLOW"
    external = n.kind == "EXTERNAL"
    dash = ' stroke-dasharray="5 3"' if external or n.kind == "TEMPORARY_VIEW" else ""
    fill = "#f6f8fa" if external else ("#fff5f5" if n.status == FlowStatus.FAILED else "#ffffff")
    radius = 22 if flow else 6
    x, y = p.x, p.y
    if n.status:
        state = n.status
    elif external:
        state = "read by the pipeline"
    elif n.kind == "TEMPORARY_VIEW":
        state = "evaluated in its readers"
    else:
        state = "defined (dry run)" if dry else "did not run"
    stats = [state]
    if n.rows_out is not None:
        stats.append(f"{n.rows_out:,} out")
    if n.rows_in is not None:
        stats.append(f"{n.rows_in:,} in")
    if n.upserted is not None or n.deleted is not None:
        stats.append(f"{n.upserted or 0:,} upserted, {n.deleted or 0:,} deleted")
    if n.refresh is not None:
        stats.append(REFRESH_LABELS.get(n.refresh, n.refresh.lower()))
    if n.seconds is not None:
        stats.append(duration(n.seconds))
    line = " · ".join(stats)
    lines = [n.title, KIND_LABELS.get(n.kind, n.kind.lower()), line]
    if n.refresh is not None:
        lines.append(f"refreshed by {n.refresh}: {n.refresh_reason or 'no reason given'}")
    title = "\n".join(lines)
    stripe = (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="6" height="{NODE_H}" rx="3" '
        f'fill="{colour if n.status else "#afb8c1"}"/>'
        if not flow
        else ""
    )
    status_colour = colour if n.status else "#6e7781"
    return (
        f'<g class="node" data-status="{_e(n.status or "")}" data-kind="{_e(n.kind)}">'
        f"<title>{_e(title)}</title>"
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{NODE_W}" height="{NODE_H}" rx="{radius}" '
        f'fill="{fill}" stroke="{colour if n.status else "#afb8c1"}" stroke-width="1.5"{dash}/>'
        f"{stripe}"
        f'<text x="{x + 16:.1f}" y="{y + 21:.1f}" class="n-name">{_e(_fit(n.label, 27))}</text>'
        f'<text x="{x + 16:.1f}" y="{y + 37:.1f}" class="n-kind">'
        f"{_e(KIND_LABELS.get(n.kind, n.kind.lower()))}</text>"
        f'<text x="{x + 16:.1f}" y="{y + 55:.1f}" class="n-stat" fill="{status_colour}">'
        f"{_e(_fit(line, 41))}</text></g>"
    )


def duration(seconds: float) -> str:
    """A duration as people read one: ``850 ms``, ``12.3 s``, ``4 min 05 s``, ``2 h 03 min``."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = int(round(seconds))
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def _fit(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _worst(states: Iterable[str | None]) -> str | None:
    found = [s for s in states if s]
    if not found:
        return None
    return min(found, key=lambda s: SEVERITY.index(s) if s in SEVERITY else len(SEVERITY))


def _sum(values: Iterable[int | None]) -> int | None:
    found = [v for v in values if v is not None]
    return sum(found) if found else None


def _common_prefix(keys: Sequence[str]) -> str:
    """The database part every defined dataset shares (``db.``), left out of labels."""
    prefixes = {k.rsplit(".", 1)[0] + "." if "." in k else "" for k in keys}
    return prefixes.pop() if len(prefixes) == 1 else ""


def _short(key: str, prefix: str) -> str:
    return key[len(prefix) :] if prefix and key.startswith(prefix) else key
