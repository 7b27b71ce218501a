/**
 * The generic mapping engine: a declarative table (renames, ignored keys,
 * per-component parameter sources with expected shapes) applied to a
 * checkpoint's headers. Nothing is read here: unchanged tensors become
 * in-place file references, computed ones lazy tensors that read their
 * sources when the model is saved.
 */
import { lazyTensor, nearestNames, type TensorRef, tensorFromSafetensors, Weights } from '@vlmkit/onnx-graph';
import type { Checkpoint, DType, Tensor } from '@vlmkit/safetensors';
import { MappingError } from './errors.js';
import { loadTyped } from './load.js';
import { describe, fileName, firstTensor, type Plan, resolve, storedRange } from './plan.js';
import type { MappingReport, Mismatch, MissingParameter, ParameterRecord } from './report.js';
import { canonicalNames, matches, type NameMatcher, type RenameRule } from './rules.js';
import type { Source } from './source.js';

export interface ParamSpec {
  /** The component's own name for it (`layers.3.self_attn.qkv_proj.weight`). */
  readonly name: string;
  readonly source: Source;
  /** The shape the component expects (from its config); checked against the checkpoint's. */
  readonly shape?: readonly number[];
  /** Missing optional parameters are reported, never an error. */
  readonly optional?: boolean;
}

export interface MappingTable {
  /** Shown in messages and the report (`ERNIE-4.5-VL`). */
  readonly name: string;
  /** Checkpoint name -> canonical name, applied in order; sources use canonical names. */
  readonly renames: readonly RenameRule[];
  /** Canonical names deliberately left unused (unless a parameter uses them). */
  readonly ignore: readonly NameMatcher[];
  readonly components: Readonly<Record<string, readonly ParamSpec[]>>;
  /**
   * The dtypes a parameter may be stored as (UNSUPPORTED_DTYPE otherwise); default: any. The model tables allow
   * FLOAT_PARAMETER_DTYPES: their graphs cast parameters to float, so an int8 / I32 / U8 tensor would run with wrong numbers.
   */
  readonly dtypes?: readonly DType[];
}

export interface MapOptions {
  /** Return (with the report) instead of throwing when required parameters are missing. Default false. */
  readonly allowMissing?: boolean;
  /**
   * The tables list a subset of the model on purpose: unmapped layers past the last listed one are not an
   * EXTRA_LAYERS error. Default false: a config describing fewer layers than the checkpoint has is refused.
   */
  readonly partial?: boolean;
  /** Throw UNMAPPED_TENSOR when a checkpoint tensor is neither used nor ignored. Default false (reported only). */
  readonly strict?: boolean;
  /**
   * Checkpoint tensors to change as they are read (e.g. a merged LoRA adapter,
   * `loraOverlay`): such a tensor is never referenced in place, and every
   * transform that reads it sees the changed values.
   */
  readonly overlay?: TensorOverlay;
}

/** Changes some checkpoint tensors (by checkpoint name) when they are read. */
export interface TensorOverlay {
  has(checkpointName: string): boolean;
  apply(checkpointName: string, base: Tensor): Promise<Tensor>;
}

export interface Mapped<C extends string = string> {
  readonly components: Record<C, Weights>;
  readonly report: MappingReport;
}

/** A table over named components: each one's parameter list (`C` names them). */
export type ComponentTable<C extends string> = MappingTable & { components: Record<C, readonly ParamSpec[]> };

/** A family's mapper from its table: the checkpoint onto each component's weights, and the report. */
export function tableMapper<C extends string, P>(table: (components: P) => ComponentTable<C>) {
  return async (ckpt: Checkpoint, components: P, opts: MapOptions = {}): Promise<Record<C, Weights> & { report: MappingReport }> => {
    const mapped = mapCheckpoint<C>(ckpt, table(components), opts);
    return { ...mapped.components, report: mapped.report };
  };
}

/** The float types the model graphs read (and cast) exactly: what the model tables allow (`MappingTable.dtypes`). */
export const FLOAT_PARAMETER_DTYPES: readonly DType[] = ['F32', 'F16', 'BF16'];

/** Names the quantization format when the checkpoint carries one's side tensors (no loader for them exists yet). */
function quantizedHint(ckpt: Checkpoint): string {
  const names = ckpt.names();
  if (names.some((n) => n.endsWith('.SCB') || n.endsWith('.weight_format'))) {
    return ' This looks like a bitsandbytes int8 checkpoint (SCB scales): quantized checkpoints are not supported; use the float checkpoint.';
  }
  if (names.some((n) => /\.(qweight|qzeros|scales|g_idx)$/.test(n))) {
    return ' This looks like a GPTQ/AWQ checkpoint (qweight/scales): quantized checkpoints are not supported; use the float checkpoint.';
  }
  return '';
}

const LAYER_INDEX = /^(.*?\.(?:layers|blocks|layer)\.)(\d+)\./;

/**
 * The first unmapped tensor of a layer stack (`model.layers.N.`, `blocks.N.`) past the last layer the mapping
 * uses from that stack: a config describing fewer layers than the checkpoint has.
 */
function layersBeyond(
  used: readonly string[],
  unmapped: readonly string[],
): { prefix: string; index: number; max: number; name: string } | undefined {
  const last = new Map<string, number>();
  for (const n of used) {
    const m = LAYER_INDEX.exec(n);
    if (m) last.set(m[1]!, Math.max(last.get(m[1]!) ?? -1, Number(m[2])));
  }
  for (const name of unmapped) {
    const m = LAYER_INDEX.exec(name);
    const max = m ? last.get(m[1]!) : undefined;
    if (m && max !== undefined && Number(m[2]) > max) return { prefix: m[1]!, index: Number(m[2]), max, name };
  }
  return undefined;
}

/** Missing parameters beyond this many get no nearest names (edit distance over a large checkpoint is slow). */
const NEAREST_LIMIT = 100;
const SHOWN = 5;

export function mapCheckpoint<C extends string>(ckpt: Checkpoint, table: ComponentTable<C>, opts: MapOptions = {}): Mapped<C> {
  const canon = canonicalNames(table.renames, ckpt.names(), ckpt.path);
  const lookup = (name: string) => {
    const original = canon.get(name);
    return original === undefined ? undefined : ckpt.info(original);
  };
  const overlay = opts.overlay;
  const read = async (name: string) => (overlay?.has(name) ? overlay.apply(name, await ckpt.read(name)) : ckpt.read(name));

  const components = {} as Record<C, Weights>;
  const parameters: ParameterRecord[] = [];
  const missing: Array<Omit<MissingParameter, 'nearest'>> = [];
  const mismatched: Mismatch[] = [];
  const consumed = new Set<string>();
  for (const [component, specs] of Object.entries(table.components) as Array<[C, readonly ParamSpec[]]>) {
    const refs = new Map<string, TensorRef>();
    for (const spec of specs) {
      const label = `${component} parameter '${spec.name}'`;
      if (refs.has(spec.name)) throw new MappingError('BAD_TABLE', `${table.name} table: ${label} is listed twice.`);
      let r: ReturnType<typeof resolve>;
      try {
        r = resolve(spec.source, lookup, label);
      } catch (err) {
        if (err instanceof MappingError && (err.code === 'SHAPE_MISMATCH' || err.code === 'DTYPE_MISMATCH')) {
          mismatched.push({ component, name: spec.name, code: err.code, message: err.message });
          continue;
        }
        throw err;
      }
      if (!r.ok) {
        missing.push({ component, name: spec.name, required: spec.optional !== true, tensors: r.missing });
        continue;
      }
      const { plan } = r;
      if (spec.shape !== undefined && !sameShape(spec.shape, plan.shape)) {
        mismatched.push({
          component,
          name: spec.name,
          code: 'SHAPE_MISMATCH',
          message: `${label}: expected [${spec.shape.join(', ')}] (from the config), found ${describe(plan)} in ${firstTensor(plan).file}. Check that config.json belongs to this checkpoint.`,
        });
        continue;
      }
      if (table.dtypes !== undefined && !table.dtypes.includes(plan.dtype)) {
        const t = firstTensor(plan);
        mismatched.push({
          component,
          name: spec.name,
          code: 'UNSUPPORTED_DTYPE',
          message: `${label}: tensor '${t.name}' in ${t.file} is ${plan.dtype}; ${table.name} parameters must be ${table.dtypes.join(', ')} (an integer tensor would be cast to float, not dequantized).${quantizedHint(ckpt)}`,
        });
        continue;
      }
      for (const u of r.used) consumed.add(u);
      refs.set(spec.name, toRef(plan, read, overlay));
      parameters.push({
        component,
        name: spec.name,
        dtype: plan.dtype,
        shape: plan.shape,
        sources: r.used,
        transformed: plan.kind !== 'tensor',
        fallback: r.fallback,
      });
    }
    components[component] = Weights.from(refs);
  }

  const ignored: string[] = [];
  const unmapped: string[] = [];
  for (const [c, original] of canon) {
    if (consumed.has(original)) continue;
    (table.ignore.some((m) => matches(m, c)) ? ignored : unmapped).push(original);
  }
  const extra =
    opts.partial === true
      ? undefined
      : layersBeyond(
          ckpt.names().filter((n) => consumed.has(n)),
          unmapped,
        );
  if (extra !== undefined) {
    throw new MappingError(
      'EXTRA_LAYERS',
      `${table.name}: checkpoint ${ckpt.path} has tensors of ${extra.prefix}${extra.index} (e.g. '${extra.name}') but the config describes ${extra.prefix}0 to ${extra.prefix}${extra.max} only; they would be ignored. Check num_hidden_layers / depth in config.json.`,
      { file: ckpt.path, tensor: extra.name },
    );
  }
  const canonKeys = [...canon.keys()];
  const report: MappingReport = {
    table: table.name,
    checkpoint: ckpt.path,
    parameters,
    consumed: ckpt.names().filter((n) => consumed.has(n)),
    ignored,
    unmapped,
    missing: missing.map((m, i) => ({
      ...m,
      nearest: i < NEAREST_LIMIT ? nearestNames(m.tensors[0]!, canonKeys, 3).map((n) => canon.get(n)!) : [],
    })),
    mismatched,
  };

  const required = report.missing.filter((m) => m.required);
  if (required.length > 0 && opts.allowMissing !== true) {
    const lines = required.slice(0, SHOWN).map((m) => {
      const near = m.nearest.length > 0 ? ` Nearest present: ${m.nearest.map((n) => `'${n}' (${fileOf(ckpt, n)})`).join(', ')}.` : '';
      return `  ${m.component} parameter '${m.name}' needs ${m.tensors
        .slice(0, 3)
        .map((t) => `'${t}'`)
        .join(', ')}${m.tensors.length > 3 ? ` and ${m.tensors.length - 3} more` : ''}.${near}`;
    });
    const more = required.length > SHOWN ? `\n  ... and ${required.length - SHOWN} more (see error.report.missing).` : '';
    throw new MappingError(
      'MISSING_TENSOR',
      `${table.name}: ${required.length} required parameter(s) have no tensor in checkpoint ${ckpt.path}:\n${lines.join('\n')}${more}\n` +
        'Check that the checkpoint is complete (all shards present) and that config.json describes it.',
      { file: ckpt.path, tensor: required[0]!.tensors[0], report },
    );
  }
  if (mismatched.length > 0) {
    const more = mismatched.length > SHOWN ? `\n  ... and ${mismatched.length - SHOWN} more (see error.report.mismatched).` : '';
    const first = mismatched[0]!;
    throw new MappingError(
      first.code,
      `${table.name}: ${mismatched.length} parameter(s) do not fit the checkpoint:\n${mismatched
        .slice(0, SHOWN)
        .map((m) => `  ${m.message}`)
        .join('\n')}${more}`,
      {
        file: ckpt.path,
        report,
      },
    );
  }
  if (unmapped.length > 0 && opts.strict === true) {
    throw new MappingError(
      'UNMAPPED_TENSOR',
      `${table.name}: ${unmapped.length} checkpoint tensor(s) are used by no parameter, e.g. '${unmapped[0]}' (${fileOf(ckpt, unmapped[0]!)}); the table does not know this layout.`,
      { file: ckpt.path, tensor: unmapped[0], report },
    );
  }
  return { components, report };
}

function toRef(plan: Plan, read: (name: string) => ReturnType<Checkpoint['read']>, overlay: TensorOverlay | undefined): TensorRef {
  const inPlace = overlay?.has(firstTensor(plan).name) ? undefined : storedRange(plan);
  if (inPlace !== undefined) return tensorFromSafetensors(inPlace);
  return lazyTensor(plan.dtype, plan.shape, () => loadTyped(plan, read));
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

function fileOf(ckpt: Checkpoint, name: string): string {
  return fileName(ckpt.info(name).file);
}
