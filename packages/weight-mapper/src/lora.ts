import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { nearestNames } from '@vlmkit/onnx-graph';
import { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16, SafetensorsFile, type Tensor } from '@vlmkit/safetensors';
import { MappingError } from './errors.js';
import type { TensorOverlay } from './mapping.js';

/** A PEFT LoRA adapter, read: per target weight (checkpoint name), its A [r, in] and B [out, r] and the scale alpha / r. */
export interface LoraAdapter {
  readonly dir: string;
  readonly rank: number;
  readonly alpha: number;
  readonly scale: number;
  /** Checkpoint weight name (`model.language_model.layers.0.self_attn.q_proj.weight`) -> the adapter's A and B tensor names. */
  readonly targets: ReadonlyMap<string, { a: string; b: string }>;
}

interface AdapterConfig {
  r?: unknown;
  lora_alpha?: unknown;
  use_rslora?: unknown;
  use_dora?: unknown;
}

const PEFT_PREFIX = 'base_model.model.';

/**
 * Reads `adapter_config.json` and the names in `adapter_model.safetensors`
 * (PEFT's layout: `base_model.model.<module>.lora_A.weight` [r, in],
 * `...lora_B.weight` [out, r]). Each module is matched to the base
 * checkpoint's `<module>.weight`; `renames` turn adapter module paths into
 * checkpoint paths where the two differ.
 */
export async function readLoraAdapter(
  dir: string,
  checkpointNames: readonly string[],
  renames: readonly [from: string, to: string][] = [],
): Promise<LoraAdapter> {
  const configPath = join(dir, 'adapter_config.json');
  let cfg: AdapterConfig;
  try {
    cfg = JSON.parse(await readFile(configPath, 'utf8')) as AdapterConfig;
  } catch (e) {
    throw new MappingError('CONFIG_INVALID', `cannot read the LoRA adapter config ${configPath}: ${(e as Error).message}`, {
      file: configPath,
    });
  }
  const rank = cfg.r;
  const alpha = cfg.lora_alpha ?? rank;
  if (!Number.isInteger(rank) || (rank as number) <= 0 || typeof alpha !== 'number') {
    throw new MappingError(
      'CONFIG_INVALID',
      `${configPath}: r must be a positive integer and lora_alpha a number, got r=${JSON.stringify(rank)}, lora_alpha=${JSON.stringify(alpha)}`,
      { file: configPath },
    );
  }
  if (cfg.use_dora === true)
    throw new MappingError('CONFIG_INVALID', `${configPath}: DoRA adapters are not supported (use_dora: true)`, { file: configPath });
  // rsLoRA scales by alpha / sqrt(r) (PEFT LoraLayer.update_layer).
  const scale = cfg.use_rslora === true ? alpha / Math.sqrt(rank as number) : alpha / (rank as number);
  const file = join(dir, 'adapter_model.safetensors');
  const st = await SafetensorsFile.open(file);
  const known = new Set(checkpointNames);
  const targets = new Map<string, { a: string; b: string }>();
  try {
    for (const name of st.names()) {
      const m = /^(.*)\.lora_A(?:\.[^.]+)?\.weight$/.exec(name);
      if (!m) continue;
      let module = m[1]!.startsWith(PEFT_PREFIX) ? m[1]!.slice(PEFT_PREFIX.length) : m[1]!;
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
      targets.set(weight, { a: name, b });
    }
  } finally {
    await st.close();
  }
  if (targets.size === 0) throw new MappingError('MISSING_TENSOR', `${file}: no lora_A/lora_B tensors found`, { file });
  return { dir, rank: rank as number, alpha, scale, targets };
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
 * PEFT's merge_and_unload; the seed's full-merge mode): pass the result as
 * `MapOptions.overlay`. Computed in float32, stored back in the base dtype.
 */
export function loraOverlay(adapter: LoraAdapter): TensorOverlay {
  const file = join(adapter.dir, 'adapter_model.safetensors');
  return {
    has: (name) => adapter.targets.has(name),
    apply: async (name, base) => {
      const t = adapter.targets.get(name)!;
      const st = await SafetensorsFile.open(file);
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
          const s = adapter.scale * bf[i * r + k]!;
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
