/** What a mapping did with every checkpoint tensor and every expected parameter. */
import type { DType } from '@vlmkit/safetensors';

export interface ParameterRecord {
  readonly component: string;
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
  /** Checkpoint tensors (their names in the checkpoint) it is made of, in order. */
  readonly sources: readonly string[];
  /** False when it is one checkpoint tensor used unchanged (referenced in place, zero copy). */
  readonly transformed: boolean;
  /** True when a later option of a `firstOf` was taken (an alternative naming). */
  readonly fallback: boolean;
}

export interface MissingParameter {
  readonly component: string;
  readonly name: string;
  readonly required: boolean;
  /** The (canonical) tensor names it needs that the checkpoint lacks. */
  readonly tensors: readonly string[];
  /** The 3 checkpoint names nearest to `tensors[0]` by edit distance (computed for the first 100 missing parameters). */
  readonly nearest: readonly string[];
}

export interface Mismatch {
  readonly component: string;
  readonly name: string;
  readonly code: 'SHAPE_MISMATCH' | 'DTYPE_MISMATCH' | 'UNSUPPORTED_DTYPE';
  readonly message: string;
}

export interface MappingReport {
  /** The table's name (`ERNIE-4.5-VL`). */
  readonly table: string;
  /** The checkpoint's path. */
  readonly checkpoint: string;
  readonly parameters: readonly ParameterRecord[];
  /** Checkpoint names used by at least one parameter. */
  readonly consumed: readonly string[];
  /** Checkpoint names the table ignores on purpose (e.g. `mtp` heads, a tied `lm_head`). */
  readonly ignored: readonly string[];
  /** Checkpoint names neither used nor ignored: a sign of a layout the table does not know. */
  readonly unmapped: readonly string[];
  readonly missing: readonly MissingParameter[];
  readonly mismatched: readonly Mismatch[];
}

/** A human summary: counts, then every missing, mismatched and unmapped name. */
export function formatReport(r: MappingReport): string {
  const lines = [
    `${r.table} mapping of ${r.checkpoint}: ${r.parameters.length} parameters (${r.parameters.filter((p) => p.transformed).length} computed at save time), ` +
      `${r.consumed.length} checkpoint tensors consumed, ${r.ignored.length} ignored, ${r.unmapped.length} unmapped, ${r.missing.length} parameters missing, ${r.mismatched.length} mismatched.`,
  ];
  for (const m of r.missing) {
    const near = m.nearest.length > 0 ? ` Nearest present: ${m.nearest.map((n) => `'${n}'`).join(', ')}.` : '';
    lines.push(
      `  missing ${m.required ? '' : '(optional) '}${m.component} '${m.name}': needs ${m.tensors.map((t) => `'${t}'`).join(', ')}.${near}`,
    );
  }
  for (const m of r.mismatched) lines.push(`  ${m.code}: ${m.message}`);
  for (const u of r.unmapped) lines.push(`  unmapped checkpoint tensor '${u}'`);
  return lines.join('\n');
}
