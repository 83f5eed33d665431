"""The chart of ``bench/run.py --plot FILE.svg`` (matplotlib, from bench/requirements.txt).

One panel per protocol the peers run on: client CPU per run of the big stream at
the coalesced framing, median over the rounds with its min-max as a whisker, on a
log scale; each bar is labelled with its multiple of zett's floor (``zett_floor``:
model rows against the one-request floor, agent rows against the two-request one).
"""

from __future__ import annotations

from typing import Any

ROWS = (
    ("floor raw_decode", "floor: httpx + httpx-sse + raw_decode"),
    ("floor bytes raw_decode", "floor: httpx + SSE split by hand + raw_decode"),
    ("zett model", "zett Model.stream()"),
    ("zett-0.2.1 model", "zett-agent 0.2.1 Model.stream()"),
    ("pydantic-ai model", "pydantic-ai model_request_stream"),
    ("litellm model", "LiteLLM acompletion(stream)"),
    ("floor2 raw_decode", "floor (httpx-sse), 2 requests: the agent's work"),
    ("floor2 bytes raw_decode", "floor (split by hand), 2 requests"),
    ("zett agent", "zett agent.stream() (tool + answer)"),
    ("zett-0.2.1 agent", "zett-agent 0.2.1 agent.stream()"),
    ("pydantic-ai agent", "pydantic-ai agent.iter (tool + answer)"),
)
COLOURS = {
    "floor": "#9e9e9e",
    "zett ": "#1f77b4",
    "zett-": "#9ecae1",
    "pydan": "#ff7f0e",
    "litel": "#d62728",
}


def draw(result: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    big = result["streams"]["big"]
    framing = "coalesced" if "coalesced" in big else next(iter(big))
    protocols = [p for p in ("openai-chat", "anthropic") if p in big[framing]]
    fig, axes = plt.subplots(1, len(protocols), figsize=(7.2 * len(protocols), 4.8), squeeze=False)
    n = result["stream"]["big"]["text_deltas"]
    for ax, protocol in zip(axes[0], protocols, strict=True):
        rows = big[framing][protocol]
        shown = [(key, label) for key, label in ROWS if key in rows]
        y = list(range(len(shown)))[::-1]
        med = [rows[k]["cpu_ms"]["median"] for k, _ in shown]
        lo = [m - rows[k]["cpu_ms"]["min"] for (k, _), m in zip(shown, med, strict=True)]
        hi = [rows[k]["cpu_ms"]["max"] - m for (k, _), m in zip(shown, med, strict=True)]
        colours = [COLOURS.get(k[:5], "#666666") for k, _ in shown]
        ax.barh(y, med, xerr=[lo, hi], color=colours, capsize=2)
        ax.set_yticks(y, [label for _, label in shown], fontsize=8)
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("client CPU ms per run, log scale (median; whisker: min-max)")
        ax.set_title(f"{protocol}: {n:,} text deltas, {framing} framing", fontsize=10)
        floors = result.get("zett_floor", {"model": ROWS[0][0], "agent": ROWS[6][0]})
        for yy, (k, _), m in zip(y, shown, med, strict=True):
            agent_row = k.endswith("agent") or k.startswith("floor2")
            floor = rows.get(floors["agent" if agent_row else "model"])
            ratio = m / floor["cpu_ms"]["median"] if floor else None
            label = f"{m:,.0f} ms" if m >= 100 else f"{m:.3g} ms"
            if ratio is not None and abs(ratio - 1) > 1e-9:
                label += f"  {ratio:.2f}x"
            ax.text(m * 1.15, yy, label, va="center", fontsize=7)
        ax.set_xlim(min(med) / 2, max(med) * 12)
    fig.suptitle(
        f"zett-agent bench ({result['mode']}, {result['rounds']} rounds, each client in a "
        f"fresh process; Nx = CPU / zett's floor) — {result['date']}",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None} if path.endswith(".svg") else None)
    plt.close(fig)
