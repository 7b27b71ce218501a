// `pnpm bench --qwen3vl` (issue 20): the Qwen3-VL configs' checkpoint folders, their JSON summary and goals.
// The checkpoints and PyTorch's side: qwen3vl_side.py (through torch_side.py); the measurement is bench.mjs's.
import { join } from 'node:path';

/** qwen3vl-2b: Qwen3-VL-2B's widths, 4 of 28 text layers, 8 of 24 vision blocks; qwen3vl-moe: 30B-A3B's, 3 of 48, 9 of 27. */
export const QWEN3VL_CONFIGS = ['qwen3vl-2b', 'qwen3vl-moe'];
const DEFAULT_LAYERS = { 'qwen3vl-2b': ['4', '8'], 'qwen3vl-moe': ['3', '9'] };

/** The checkpoint folder and `torch_side.py make` arguments; --qwen3vl-layers / --qwen3vl-vision-layers override both configs'. */
export function qwen3vlConfigDir(name, cache, o) {
  const l = o['qwen3vl-layers'] ?? DEFAULT_LAYERS[name][0];
  const v = o['qwen3vl-vision-layers'] ?? DEFAULT_LAYERS[name][1];
  return { dir: join(cache, `${name}-l${l}-v${v}`), make: ['--config', name, '--layers', l, '--vision-layers', v] };
}

const ratio = (a, b) => (a === undefined || b === undefined || a === null || b === null || !b ? null : a / b);
const sameIds = (a, b) => Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => x === b[i]);

/** Per Qwen3-VL config: vlmkit / PyTorch float32 ratios (quantized vlmkit over float32 PyTorch), logits agreement. */
export function qwen3vlSummary(results) {
  const out = {};
  for (const r of results.filter((x) => QWEN3VL_CONFIGS.includes(x.name))) {
    const pt = r.pytorch.error ? {} : r.pytorch;
    const v = (q, key) => {
      const run = r.vlmkit[q]?.run;
      return run && !run.error ? run[key] : null;
    };
    const cold = r.vlmkit.float32?.cold ?? {};
    out[r.name] = {
      text_layers: r.info.text_layers,
      vision_layers: r.info.vision_layers,
      prompt_tokens: r.info.seq,
      vision_ratio: ratio(v('float32', 'vision_ms'), pt.vision_ms),
      prefill_ratio: ratio(v('float32', 'prefill_ms'), pt.prefill_ms),
      decode_ratio: ratio(v('float32', 'decode_ms'), pt.decode_ms),
      rss_ratio: ratio(v('float32', 'peak_rss_mb'), pt.peak_rss_mb),
      prefill_int8_ratio: ratio(v('int8', 'prefill_ms'), pt.prefill_ms),
      decode_int8_ratio: ratio(v('int8', 'decode_ms'), pt.decode_ms),
      decode_int4_ratio: ratio(v('int4', 'decode_ms'), pt.decode_ms),
      rss_int4_ratio: ratio(v('int4', 'peak_rss_mb'), pt.peak_rss_mb),
      ids_identical: sameIds(v('float32', 'ids'), pt.ids),
      logits_max_diff: cold.logits_max_diff ?? null,
      logits_max_ref: cold.logits_max_ref ?? null,
      teacher_forced_top1: cold.teacher_forced_top1 ?? null,
    };
  }
  return out;
}

/** Issue 20's goals per Qwen3-VL config (markdown), from qwen3vlSummary's object. */
export function qwen3vlGoals(summary) {
  const goals = [
    ['float32 vision', 'vision_ratio', 1],
    ['float32 prefill', 'prefill_ratio', 1],
    ['float32 decode', 'decode_ratio', 1],
    ['int4 decode', 'decode_int4_ratio', 0.3],
  ];
  return Object.entries(summary).map(([name, s]) =>
    [
      `### Goals (issue 20), ${name}`,
      '',
      '| goal | measured | target | met |',
      '|---|---|---|---|',
      ...goals.map(([label, key, target]) => {
        const x = s[key];
        return `| ${label} | ${x === null ? '-' : x.toFixed(2)} | <= ${target} | ${x === null ? 'not measured' : x <= target ? 'yes' : 'no'} |`;
      }),
    ].join('\n'),
  );
}
