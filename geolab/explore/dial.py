"""A direction you drag: notebook 01's vector k as an arrow on the unit circle (an anywidget).

Direct manipulation instead of a slider: drag the arrow's tip and k = (cos φ, sin φ) follows;
focused, ←/→ (or ↓/↑) turn it one 0.02-rad step, so it also works from the keyboard and reads as
a slider to assistive tools (``role="slider"``, ``aria-valuenow``). The JavaScript is inline (no
network; ``marimo run`` pages stay on 127.0.0.1). marimo shows it with ``mo.ui.anywidget``, whose
``value["phi"]`` the next cell reads.
"""

from __future__ import annotations

import math

import anywidget
import traitlets

PHI_STEP = 0.02  # the step of the slider this dial replaced
PHI_MAX = 3.14

_ESM = r"""
const NS = "http://www.w3.org/2000/svg";
function node(tag, attrs, parent) {
  const n = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
  parent.appendChild(n);
  return n;
}
function render({ model, el }) {
  const size = 200, r = 80, c = size / 2, step = STEP, max = MAX;
  const svg = node("svg", {
    width: size, height: size, role: "slider", tabindex: "0",
    "aria-label": "direction of k: angle φ (drag the tip, or use the arrow keys)",
    "aria-valuemin": (-max).toFixed(2), "aria-valuemax": max.toFixed(2),
  }, el);
  svg.style.cursor = "grab";
  svg.style.touchAction = "none";
  node("circle", { cx: c, cy: c, r: r, fill: "none", stroke: "lightgray" }, svg);
  node("line", { x1: c - r - 8, y1: c, x2: c + r + 8, y2: c, stroke: "#eee" }, svg);
  node("line", { x1: c, y1: c - r - 8, x2: c, y2: c + r + 8, stroke: "#eee" }, svg);
  const arrow = node("line", { x1: c, y1: c, stroke: "black", "stroke-width": 3 }, svg);
  const tip = node("circle", { r: 9, fill: "black" }, svg);
  const text = node("text", { x: 4, y: size - 6, "font-size": 13 }, svg);
  function draw() {
    const phi = model.get("phi");
    const x = c + r * Math.cos(phi), y = c - r * Math.sin(phi);
    arrow.setAttribute("x2", x); arrow.setAttribute("y2", y);
    tip.setAttribute("cx", x); tip.setAttribute("cy", y);
    svg.setAttribute("aria-valuenow", phi.toFixed(2));
    text.textContent = "k at φ = " + phi.toFixed(2) + " (drag the dot)";
  }
  function set(phi) {
    phi = Math.max(-max, Math.min(max, Math.round(phi / step) * step));
    model.set("phi", Number(phi.toFixed(2)));
    model.save_changes();
    draw();
  }
  let dragging = false;
  function follow(e) {
    const box = svg.getBoundingClientRect();
    set(Math.atan2(c - (e.clientY - box.top), e.clientX - box.left - c));
  }
  svg.addEventListener("pointerdown", (e) => {
    dragging = true; svg.setPointerCapture(e.pointerId); follow(e);
  });
  svg.addEventListener("pointermove", (e) => { if (dragging) follow(e); });
  svg.addEventListener("pointerup", () => { dragging = false; });
  svg.addEventListener("keydown", (e) => {
    const d = { ArrowRight: step, ArrowUp: step, ArrowLeft: -step, ArrowDown: -step }[e.key];
    if (d !== undefined) { e.preventDefault(); set(model.get("phi") + d); }
  });
  model.on("change:phi", draw);
  draw();
}
export default { render };
""".replace("STEP", repr(PHI_STEP)).replace("MAX", repr(PHI_MAX))


class DirectionDial(anywidget.AnyWidget):
    """k = (cos φ, sin φ) drawn on the unit circle; ``phi`` in [−3.14, 3.14], 0.02-rad steps."""

    _esm = _ESM
    phi = traitlets.Float(0.5).tag(sync=True)

    def __init__(self, phi: float = 0.5):
        if not (isinstance(phi, int | float) and math.isfinite(phi) and abs(phi) <= PHI_MAX):
            raise ValueError(f"phi={phi!r} is not allowed; expected a number in [-3.14, 3.14]")
        super().__init__(phi=float(phi))
