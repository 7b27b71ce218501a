// `vlmkit export`'s manifest (./export.node.ts writes it, Node only): its format and types, platform-free so that
// a port or a page can read an export's manifest.json with these types.
import type { KvCacheDType } from '@vlmkit/moe-decoder';
import type { ComputeDType, QuantizeRequest } from '@vlmkit/onnx-graph';
import type { ComputeDtypeOption } from './decoder-model.js';
import type { ConfigOptions } from './family.js';

export const EXPORT_FORMAT = 'vlmkit-export';
export const EXPORT_VERSION = 1;

export interface ExportOptions extends ComputeDtypeOption, ConfigOptions {
  /** A PEFT LoRA adapter merged into the exported weights (families with `supports.adapter`). */
  adapter?: string | undefined;
  /** Initializers of at least this many bytes go to `<graph>.onnx.data` (default 1 KiB). */
  externalThreshold?: number | undefined;
  /** The decoder's weights block-quantized (com.microsoft MatMulNBits): 'int8' or 'int4' (see `LoadOptions.quantize`). */
  quantize?: QuantizeRequest | undefined;
}

/** A graph input or output: dims are numbers or symbolic names (`batch`, `seq`, `past`, `total`, ...). */
export interface ManifestTensor {
  name: string;
  dtype: string;
  dims: (number | string)[];
}

export interface ManifestGraph {
  file: string;
  /** The external data file next to it (ORT finds it by the name the graph records), or null. */
  external_data: string | null;
  sha256: Record<string, string>;
  inputs: ManifestTensor[];
  outputs: ManifestTensor[];
}

/** manifest.json, version 1. Snake case, as read from other languages. */
export interface ExportManifest {
  format: typeof EXPORT_FORMAT;
  version: number;
  model_type: string;
  source: { checkpoint: string; adapter: string | null; files: Record<string, { size: number; sha256: string }> };
  /**
   * The float type the graphs compute in (`ComputeDtypeOption.computeDtype`): weights are stored in it; graph
   * inputs, vision features and logits are float32 whatever it is; the KV cache's is `decoder.kv_cache.dtype`.
   */
  compute_dtype: ComputeDType;
  /** Run order: `vision_encoder` (when the prompt has images or videos), then `decoder` once per step. */
  graphs: { vision_encoder: ManifestGraph; decoder: ManifestGraph };
  /**
   * ORT session config entries vlmkit creates its sessions with (`SessionOptionsAppendConfigEntry`; in Node,
   * `extra`): with them, plain ORT gives vlmkit's numbers exactly (ORT's weight prepacking changes the
   * float32 summation order of MatMul, ~1e-5 relative).
   */
  session_config: Record<string, string>;
  decoder: {
    vocab_size: number;
    hidden_size: number;
    kv_cache: {
      num_layers: number;
      num_kv_heads: number;
      head_dim: number;
      /** float16 for compute_dtype float16; float32 otherwise (bfloat16 graphs: float32 holding bfloat16 values). */
      dtype: KvCacheDType;
      layout: ['batch', 'num_kv_heads', 'past', 'head_dim'];
      /** Per layer i: feed `past_key` / `past_value`, read `present_key` / `present_value`. */
      layers: { past_key: string; past_value: string; present_key: string; present_value: string }[];
      initial: string;
      update: string;
    };
    attention_mask: string;
    logits: string;
    /** Greedy / sampled decoding as `generate` does it: eos from config.json, pad for finished rows. */
    generation: { eos_token_ids: number[]; pad_token_id: number; rule: string };
  };
  /** The family's host-side inputs and their rules, under its `manifest.key` ('ernie', 'granite'). */
  readonly [family: string]: unknown;
}

export interface ExportResult {
  manifest: ExportManifest;
  manifestPath: string;
  /** Every file written, relative to the output directory. */
  files: string[];
}
