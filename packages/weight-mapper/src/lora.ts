import { nearestNames } from '@vlmkit/onnx-graph';
import {
  bf16ToF32,
  f16ToF32,
  f32ToBf16,
  f32ToF16,
  type ModelFiles,
  readRegularTextFile,
  readTextFile,
  SafetensorsError,
  SafetensorsFile,
  type Tensor,
} from '@vlmkit/safetensors';
import { MappingError } from './errors.js';
import type { TensorOverlay } from './mapping.js';

/** One adapted weight: its A [rank, in] and B [out, rank] tensor names, and its own rank, alpha and scale. */
export interface LoraTarget {
  readonly a: string;
  readonly b: string;
  /** `rank_pattern`'s rank for this module, else `r`. */
  readonly rank: number;
  /** `alpha_pattern`'s alpha for this module, else `lora_alpha`. */
  readonly alpha: number;
  /** alpha / rank (alpha / sqrt(rank) with rsLoRA), as PEFT's LoraLayer.update_layer. */
  readonly scale: number;
}

/** A PEFT LoRA adapter, read and checked against its tensors: per target weight (checkpoint name), its A, B and scale. */
export interface LoraAdapter {
  /** The adapter directory: its path, or `ModelFiles.root` (a URL, a picked folder). */
  readonly dir: string;
  /** The files it was read through, when it was given as `ModelFiles` rather than a path: the merge reads them again. */
  readonly files?: ModelFiles;
  /** The config's `r`, `lora_alpha` and their scale: what modules without a pattern use. */
  readonly rank: number;
  readonly alpha: number;
  readonly scale: number;
  /** Checkpoint weight name (`model.language_model.layers.0.self_attn.q_proj.weight`) -> its adapter tensors and scale. */
  readonly targets: ReadonlyMap<string, LoraTarget>;
}

/** What readLoraAdapter needs of the base checkpoint: its names, and (to check shapes at read time) each one's shape. */
export interface LoraBase {
  names(): string[];
  info(name: string): { readonly shape: readonly number[] };
}

const PEFT_PREFIX = 'base_model.model.';
const FLOAT = new Set(['F32', 'F16', 'BF16']);

/** The config fields this reader acts on, checked for type; others that would change the weights are refused by name. */
interface AdapterConfig {
  r: number;
  alpha: number;
  rslora: boolean;
  rankPattern: [key: string, value: number][];
  alphaPattern: [key: string, value: number][];
  targetModules: string | string[] | undefined;
  excludeModules: string | string[] | undefined;
}

function readConfig(file: string, json: unknown): AdapterConfig {
  const bad = (field: string, expected: string, found: unknown): never => {
    throw new MappingError('CONFIG_INVALID', `${file}: ${field} must be ${expected}, got ${JSON.stringify(found)}`, { file });
  };
  if (typeof json !== 'object' || json === null || Array.isArray(json)) bad('the file', 'a JSON object', json);
  const c = json as Record<string, unknown>;
  const r = c.r;
  if (!Number.isInteger(r) || (r as number) <= 0) bad('r', 'a positive integer', r);
  const alpha = c.lora_alpha ?? r;
  if (typeof alpha !== 'number' || !Number.isFinite(alpha)) bad('lora_alpha', 'a number', alpha);
  // PEFT options that change what the merged weight is; none of them is implemented here, so each is refused by name.
  const refused: [field: string, ok: (v: unknown) => boolean, why: string][] = [
    ['use_dora', (v) => v == null || v === false, 'DoRA adapters are not supported'],
    ['fan_in_fan_out', (v) => v == null || v === false, 'fan_in_fan_out (Conv1D weights stored [in, out]) is not supported'],
    ['bias', (v) => v == null || v === 'none', 'trained biases are not supported (bias must be "none")'],
    ['lora_bias', (v) => v == null || v === false, 'LoRA biases are not supported'],
    [
      'modules_to_save',
      (v) => v == null || (Array.isArray(v) && v.length === 0),
      'whole saved modules (modules_to_save) are not supported',
    ],
    [
      'target_parameters',
      (v) => v == null || (Array.isArray(v) && v.length === 0),
      'LoRA on parameters (target_parameters) is not supported',
    ],
    ['peft_type', (v) => v == null || v === 'LORA', 'only LORA adapters are supported'],
  ];
  for (const [field, ok, why] of refused) if (!ok(c[field])) bad(field, `unset (${why})`, c[field]);
  const pattern = (field: string, isValue: (v: unknown) => boolean, expected: string): [string, number][] => {
    const v = c[field] ?? {};
    if (typeof v !== 'object' || Array.isArray(v)) return bad(field, 'an object of module pattern -> value', v);
    return Object.entries(v as Record<string, unknown>).map(([k, x]) => {
      if (!isValue(x)) bad(`${field}[${JSON.stringify(k)}]`, expected, x);
      return [k, x as number];
    });
  };
  const modules = (field: string): string | string[] | undefined => {
    const v = c[field];
    if (v == null) return undefined;
    if (typeof v === 'string' || (Array.isArray(v) && v.every((x) => typeof x === 'string'))) return v as string | string[];
    return bad(field, 'a regex string or a list of module names', v);
  };
  return {
    r: r as number,
    alpha: alpha as number,
    rslora: c.use_rslora === true,
    rankPattern: pattern('rank_pattern', (x) => Number.isInteger(x) && (x as number) > 0, 'a positive integer'),
    alphaPattern: pattern('alpha_pattern', (x) => typeof x === 'number' && Number.isFinite(x), 'a number'),
    targetModules: modules('target_modules'),
    excludeModules: modules('exclude_modules'),
  };
}

/**
 * A Python `re` pattern from the config, placed in `frame` (`{}` marks where), as a JS RegExp: the common subset
 * is the same; a pattern JS cannot read is refused, naming the config's pattern.
 */
function regex(file: string, field: string, pattern: string, frame: string): RegExp {
  try {
    return new RegExp(frame.replace('{}', () => pattern));
  } catch (e) {
    throw new MappingError(
      'CONFIG_INVALID',
      `${file}: ${field} pattern ${JSON.stringify(pattern)} is not a regular expression this reader can use: ${(e as Error).message}`,
      { file },
    );
  }
}

/** PEFT get_pattern_key: the first key that matches the end of the module path at a dot boundary (`(.*\.)?(key)$`). */
function patternValue(file: string, field: string, patterns: readonly [string, number][], module: string): [string, number] | undefined {
  return patterns.find(([key]) => regex(file, field, key, '^(?:.*\\.)?(?:{})$').test(module));
}

/** PEFT check_target_module_exists (without layers_to_transform): is `module` one the config adapts? */
function isTarget(file: string, cfg: AdapterConfig, module: string): boolean {
  const inList = (list: string[]) => list.some((t) => module === t || module.endsWith(`.${t}`));
  const full = (field: string, p: string) => regex(file, field, p, '^(?:{})$').test(module);
  const ex = cfg.excludeModules;
  if (ex !== undefined && (typeof ex === 'string' ? full('exclude_modules', ex) : inList(ex))) return false;
  const t = cfg.targetModules;
  // Unset or 'all-linear': PEFT picks the modules from the model type / layer types; every linear is possible.
  if (t === undefined || t === 'all-linear') return true;
  return typeof t === 'string' ? full('target_modules', t) : inList(t);
}

/**
 * Reads `adapter_config.json` and the headers of `adapter_model.safetensors`
 * (PEFT's layout: `base_model.model.<module>.lora_A.weight` [r, in],
 * `...lora_B.weight` [out, r]) and checks one against the other: each module
 * is one `target_modules` names (and `exclude_modules` does not), its rank is
 * `rank_pattern`'s for it or `r`, its alpha `alpha_pattern`'s or `lora_alpha`
 * (PEFT's get_pattern_key), A and B are float and fit the base weight's shape
 * (when `base` gives shapes), and the file holds nothing else. Each module is
 * matched to the base checkpoint's `<module>.weight`; `renames` turn adapter
 * module paths into checkpoint paths where the two differ.
 */
export async function readLoraAdapter(
  from: string | ModelFiles,
  base: readonly string[] | LoraBase,
  renames: readonly [from: string, to: string][] = [],
): Promise<LoraAdapter> {
  const dir = typeof from === 'string' ? from : from.root;
  const configPath = inDir(dir, 'adapter_config.json');
  let json: unknown;
  try {
    json = JSON.parse(typeof from === 'string' ? await readRegularTextFile(configPath) : await adapterText(from));
  } catch (e) {
    throw new MappingError('CONFIG_INVALID', `cannot read the LoRA adapter config ${configPath}: ${(e as Error).message}`, {
      file: configPath,
    });
  }
  const cfg = readConfig(configPath, json);
  // rsLoRA scales by alpha / sqrt(r) (PEFT LoraLayer.update_layer).
  const scaleOf = (alpha: number, rank: number) => (cfg.rslora ? alpha / Math.sqrt(rank) : alpha / rank);
  const checkpointNames = Array.isArray(base) ? (base as readonly string[]) : (base as LoraBase).names();
  const shapeOf = Array.isArray(base) ? undefined : (name: string) => (base as LoraBase).info(name).shape;
  const file = inDir(dir, 'adapter_model.safetensors');
  const st = await openWeights(from);
  const known = new Set(checkpointNames);
  const targets = new Map<string, LoraTarget>();
  try {
    for (const name of st.names()) {
      if (/\.lora_B(?:\.[^.]+)?\.weight$/.test(name)) continue;
      const m = /^(.*)\.lora_A(?:\.[^.]+)?\.weight$/.exec(name);
      if (!m) {
        throw new MappingError(
          'UNMAPPED_TENSOR',
          `${file}: '${name}' is not a lora_A / lora_B weight; expected only those (embedding LoRA, DoRA magnitudes, biases and saved modules are not supported)`,
          { file, tensor: name },
        );
      }
      const peftModule = m[1]!.startsWith(PEFT_PREFIX) ? m[1]!.slice(PEFT_PREFIX.length) : m[1]!;
      let module = peftModule;
      for (const [from, to] of renames) if (module.startsWith(from)) module = to + module.slice(from.length);
      const weight = `${module}.weight`;
      const b = name.replace('.lora_A', '.lora_B');
      if (!st.has(b)) throw new MappingError('MISSING_TENSOR', `${file}: '${name}' has no matching '${b}'`, { file, tensor: name });
      if (!known.has(weight)) {
        const near = nearestNames(weight, checkpointNames, 3).join("', '");
        throw new MappingError(
          'MISSING_TENSOR',
          `${file}: adapter tensor '${name}' targets '${weight}', which the base checkpoint does not have (nearest: '${near}'). Is this adapter for another model?`,
          { file, tensor: name },
        );
      }
      if (!isTarget(configPath, cfg, peftModule)) {
        throw new MappingError(
          'CONFIG_INVALID',
          `${configPath}: the adapter has tensors for '${peftModule}', which target_modules ${JSON.stringify(cfg.targetModules)}${cfg.excludeModules ? ` / exclude_modules ${JSON.stringify(cfg.excludeModules)}` : ''} does not select; expected config and tensors to agree`,
          { file: configPath, tensor: name },
        );
      }
      const rankKey = patternValue(configPath, 'rank_pattern', cfg.rankPattern, peftModule);
      const alphaKey = patternValue(configPath, 'alpha_pattern', cfg.alphaPattern, peftModule);
      const rank = rankKey?.[1] ?? cfg.r;
      const alpha = alphaKey?.[1] ?? cfg.alpha;
      const [ai, bi] = [st.info(name), st.info(b)];
      for (const [n, info] of [
        [name, ai],
        [b, bi],
      ] as const) {
        if (!FLOAT.has(info.dtype))
          throw new MappingError('UNSUPPORTED_DTYPE', `${file}: '${n}' is ${info.dtype}; expected F32, F16 or BF16`, { file, tensor: n });
      }
      const rankFrom = rankKey ? `rank_pattern[${JSON.stringify(rankKey[0])}] = ${rank}` : `r = ${rank}`;
      if (ai.shape.length !== 2 || bi.shape.length !== 2 || ai.shape[0] !== rank || bi.shape[1] !== rank) {
        throw new MappingError(
          'SHAPE_MISMATCH',
          `${file}: '${name}' is [${ai.shape.join(', ')}] and its lora_B [${bi.shape.join(', ')}], but ${configPath} gives '${peftModule}' ${rankFrom}; expected A [${rank}, in] and B [out, ${rank}]`,
          { file, tensor: name },
        );
      }
      const baseShape = shapeOf?.(weight);
      if (baseShape && (baseShape.length !== 2 || ai.shape[1] !== baseShape[1] || bi.shape[0] !== baseShape[0])) {
        throw new MappingError(
          'SHAPE_MISMATCH',
          `${file}: '${name}' [${ai.shape.join(', ')}] / lora_B [${bi.shape.join(', ')}] do not fit '${weight}' [${baseShape.join(', ')}]; expected A [${rank}, ${baseShape[1]}] and B [${baseShape[0]}, ${rank}]`,
          { file, tensor: name },
        );
      }
      targets.set(weight, { a: name, b, rank, alpha, scale: scaleOf(alpha, rank) });
    }
    // A lora_B without its lora_A.
    for (const name of st.names()) {
      if (/\.lora_B(?:\.[^.]+)?\.weight$/.test(name) && !st.has(name.replace('.lora_B', '.lora_A')))
        throw new MappingError('MISSING_TENSOR', `${file}: '${name}' has no matching '${name.replace('.lora_B', '.lora_A')}'`, {
          file,
          tensor: name,
        });
    }
  } finally {
    await st.close();
  }
  if (targets.size === 0) throw new MappingError('MISSING_TENSOR', `${file}: no lora_A/lora_B tensors found`, { file });
  const read = { dir, rank: cfg.r, alpha: cfg.alpha, scale: scaleOf(cfg.alpha, cfg.r), targets };
  return typeof from === 'string' ? read : { ...read, files: from };
}

function toF32(t: Tensor): Float32Array {
  if (t.dtype === 'F32') return t.data as Float32Array;
  if (t.dtype === 'BF16') return bf16ToF32(t.data as Uint16Array);
  if (t.dtype === 'F16') return f16ToF32(t.data as Uint16Array);
  throw new MappingError('DTYPE_MISMATCH', `LoRA merge needs float tensors, got ${t.dtype}`);
}

function fromF32(x: Float32Array, like: Tensor): Tensor {
  const data = like.dtype === 'BF16' ? f32ToBf16(x) : like.dtype === 'F16' ? f32ToF16(x) : x;
  return { dtype: like.dtype, shape: [...like.shape], data };
}

/**
 * Merges the adapter into the base weights as they are read (W + scale * B A,
 * PEFT's merge_and_unload; vLLM granite4_vision's full merge): pass the result as
 * `MapOptions.overlay`. Computed in float32, stored back in the base dtype.
 */
export function loraOverlay(adapter: LoraAdapter): TensorOverlay {
  const file = inDir(adapter.dir, 'adapter_model.safetensors');
  return {
    has: (name) => adapter.targets.has(name),
    apply: async (name, base) => {
      const t = adapter.targets.get(name)!;
      const st = await openWeights(adapter.files ?? adapter.dir);
      let a: Tensor;
      let b: Tensor;
      try {
        [a, b] = [await st.read(t.a), await st.read(t.b)];
      } finally {
        await st.close();
      }
      const [out, inp] = base.shape as [number, number];
      const r = a.shape[0]!;
      if (base.shape.length !== 2 || a.shape[1] !== inp || b.shape[0] !== out || b.shape[1] !== r) {
        throw new MappingError(
          'SHAPE_MISMATCH',
          `${file}: ${t.a} [${a.shape}] / ${t.b} [${b.shape}] do not fit '${name}' [${base.shape}]`,
          { file, tensor: t.a },
        );
      }
      const w = Float32Array.from(toF32(base));
      const af = toF32(a);
      const bf = toF32(b);
      for (let i = 0; i < out; i++) {
        for (let k = 0; k < r; k++) {
          const s = t.scale * bf[i * r + k]!;
          if (s === 0) continue;
          const row = i * inp;
          const arow = k * inp;
          for (let j = 0; j < inp; j++) w[row + j] = w[row + j]! + s * af[arow + j]!;
        }
      }
      return fromF32(w, base);
    },
  };
}

/** A file in the adapter directory: '/' joins on every platform (Node accepts it on Windows too). */
function inDir(dir: string, name: string): string {
  return /[\\/]$/.test(dir) ? `${dir}${name}` : `${dir}/${name}`;
}

async function adapterText(files: ModelFiles): Promise<string> {
  const text = await readTextFile(files, 'adapter_config.json');
  if (text === undefined) throw new Error('expected the file, found nothing');
  return text;
}

/** adapter_model.safetensors by path (Node), or through the adapter's files. */
async function openWeights(from: string | ModelFiles): Promise<SafetensorsFile> {
  if (typeof from === 'string') return SafetensorsFile.open(inDir(from, 'adapter_model.safetensors'));
  const source = await from.open('adapter_model.safetensors');
  if (source === undefined) {
    const file = inDir(from.root, 'adapter_model.safetensors');
    throw new SafetensorsError('FILE_NOT_FOUND', `${file}: expected a file here, found nothing.`, { file });
  }
  return SafetensorsFile.fromSource(source);
}
