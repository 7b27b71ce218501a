"""Scaling curves of `pnpm bench --curves` as PNG files (matplotlib; tools/bench/requirements.txt).

usage: python plot.py CURVES_JSON OUT_DIR   (bench.mjs writes CURVES_JSON and runs this)
Writes OUT_DIR/{vision-vs-patches,prefill-vs-length,decode-vs-context}.png; prints one JSON line with the files.
       python plot.py --serve SERVE_JSON OUT.png   (`pnpm bench --serve`, serve-bench.mjs, runs this)
Aggregate decode tokens/s against concurrent streams, one line per mode and arrival pattern.
"""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {"pytorch": ("PyTorch float32", "k", "o"), "float32": ("vlmkit float32", "tab:blue", "s"),
         "int8": ("vlmkit int8", "tab:orange", "^"), "int4": ("vlmkit int4", "tab:green", "v")}


def serve(src: str, dst: str) -> None:
    data = json.loads(Path(src).read_text())
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    top = 1
    for m in data["modes"]:
        color = STYLE.get(m["mode"], (m["mode"], None, "x"))[1]
        one = [r for r in m["runs"] if r["concurrency"] == 1]
        for pattern, style, marker in (("burst", "-", "o"), ("closed", "--", "s")):
            runs = one + [r for r in m["runs"] if r["pattern"] == pattern and r["concurrency"] > 1]
            runs = [r for r in runs if r["decodeTokensPerSecond"] is not None]
            if len(runs) < 2:
                continue
            xs = [r["concurrency"] for r in runs]
            top = max(top, *xs)
            label = f"{m['mode']}, {'burst of N' if pattern == 'burst' else 'N clients, closed loop'}"
            ax.plot(xs, [r["decodeTokensPerSecond"] for r in runs], style, marker=marker, color=color, label=label)
        if one:
            base = one[0]["decodeTokensPerSecond"]
            ax.plot([1, top], [base, top * base], ":", color=color, alpha=0.5, label=f"{m['mode']}, N x one stream")
    # Both axes log 2: N x one stream is a diagonal, and the measured lines stay readable beside it.
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks([1, 2, 4, 8, 16])
    ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.get_yaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.set_xlabel("concurrent streams")
    ax.set_ylabel("aggregate decode tokens / s")
    sub = f"vlmkit serve, {data['model']} ERNIE-4.5-VL, {data['promptTokens']}-token image prompts, {data['newTokens']} new tokens"
    ax.set_title(f"{sub}\n{data['cpu']}, {data['cores']} CPUs, commit {data['commit']}", fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(dst)
    plt.close(fig)
    print(json.dumps({"files": [dst]}))


def main() -> None:
    if sys.argv[1] == "--serve":
        serve(sys.argv[2], sys.argv[3])
        return
    data = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    m = data["machine"]
    sub = f"medium ERNIE-4.5-VL, {m['cpu']}, 2 threads, commit {m['commit'].split(' ')[0]}"
    series = {"pytorch": data["pytorch"], **data["vlmkit"]}
    plots = [
        ("vision", "patches", "vision-vs-patches.png", "image patches (one image)", "vision tower + resampler, ms"),
        ("prefill", "tokens", "prefill-vs-length.png", "prompt tokens (text)", "prefill, ms"),
        ("decode", "context", "decode-vs-context.png", "context length (prompt tokens)", "decode, ms / token"),
    ]
    files = []
    for key, x, name, xlabel, ylabel in plots:
        fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
        for sname, res in series.items():
            if not isinstance(res, dict) or "error" in res or key not in res:
                continue
            label, color, marker = STYLE.get(sname, (sname, None, "x"))
            xs = [p[x] for p in res[key]]
            ys = [p["ms"] for p in res[key]]
            ax.plot(xs, ys, marker=marker, color=color, label=label)
        ax.set_xscale("log", base=2)
        ax.set_xticks([p[x] for p in data["pytorch"].get(key, [])] or ax.get_xticks())
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        if key != "decode":
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(sub, fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / name)
        plt.close(fig)
        files.append(str(out / name))
    print(json.dumps({"files": files}))


if __name__ == "__main__":
    main()
