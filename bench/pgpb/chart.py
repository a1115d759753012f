"""latest.png: the seconds of every row on a log scale, coloured by kind, extrapolated rows
hatched; top panel the 500-tree model, bottom panel the others."""

from .fmt import fmt_s

COLORS = {"floor": "#888888", "batched": "#1f77b4", "per-row": "#9ecae1", "native": "#ff7f0e",
          "plpy-row": "#98df8a", "plpy-batch": "#2ca02c", "train": "#9467bd", "train-native": "#c5b0d5"}


def chart(rows, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.patches import Patch

    panels = [("XGBoost 500 trees depth 8, higgs (28 columns)",
               [r for r in rows if r.group == "m500"]),
              ("smaller models, wide table, other formats",
               [r for r in rows if r.group != "m500"])]
    panels = [(t, rs) for t, rs in panels if rs]
    heights = [max(3, 0.28 * len(rs) + 1) for _, rs in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, sum(heights)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    axes = axes[:, 0]
    for ax, (ptitle, rs) in zip(axes, panels):
        labels, vals, colors, hatches = [], [], [], []
        for r in rs:
            labels.append(r.label)
            if r.r["status"] == "ok":
                vals.append(r.r["seconds"])
                colors.append(COLORS[r.kind])
                hatches.append("//" if r.r.get("extrapolated") else "")
            else:
                vals.append(0)
                colors.append("white")
                hatches.append("")
        y = np.arange(len(rs))[::-1]
        bars = ax.barh(y, [v if v > 0 else np.nan for v in vals], color=colors,
                       edgecolor="black", linewidth=0.4)
        for b, h in zip(bars, hatches):
            b.set_hatch(h)
        positive = [v for v in vals if v > 0]
        lo = min(positive) if positive else 0.1
        for yi, v, r in zip(y, vals, rs):
            txt = fmt_s(v) + " s" if v > 0 else r.r.get("note", "n/a")[:40]
            ax.text(v if v > 0 else lo, yi, " " + txt, va="center", fontsize=7)
        ax.set_yticks(y)
        ax.set_yticklabels(labels, fontsize=7)
        ax.set_xscale("log")
        ax.set_xlabel("seconds for the whole table (log scale; hatched = extrapolated)")
        ax.set_title(ptitle, fontsize=9)
        if positive:
            ax.set_xlim(lo / 2, max(positive) * 8)
        ax.grid(axis="x", which="both", alpha=0.3)
    handles = [Patch(facecolor=c, edgecolor="black", label=k) for k, c in COLORS.items()]
    axes[0].legend(handles=handles, fontsize=7, loc="lower right")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)
