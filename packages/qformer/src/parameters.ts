import { type Blip2QFormerConfig, validateQFormerConfig } from './qformer-config.js';
import { validateWindowQFormerConfig, type WindowQFormerConfig } from './window-config.js';

/** One parameter a builder reads: its name (relative to the component) and shape (Linear weights in PyTorch [out, in] layout). */
export interface ParameterSpec {
  readonly name: string;
  readonly shape: readonly number[];
}

/**
 * The parameters `buildBlip2QFormer` reads, under HF's module names inside
 * Blip2QFormerModel (docs/parameter-names.md): `layernorm.*`,
 * `encoder.layer.{i}.attention.*`, `encoder.layer.{i}.crossattention.*`
 * (layers i with i % crossAttentionFrequency == 0), `encoder.layer.{i}.intermediate_query.*`,
 * `encoder.layer.{i}.output_query.*`. The text path (`intermediate`, `output`,
 * only with use_qformer_text_input) is not read.
 */
export function qformerExpectedParameters(config: Blip2QFormerConfig): ParameterSpec[] {
  const {
    hiddenSize: h,
    encoderHiddenSize: e,
    intermediateSize: i,
    numHiddenLayers,
    crossAttentionFrequency,
  } = validateQFormerConfig(config);
  const attention = (prefix: string, kvIn: number): ParameterSpec[] => [
    ...linear(`${prefix}.attention.query`, h, h),
    ...linear(`${prefix}.attention.key`, h, kvIn),
    ...linear(`${prefix}.attention.value`, h, kvIn),
    ...linear(`${prefix}.output.dense`, h, h),
    ...norm(`${prefix}.output.LayerNorm`, h),
  ];
  const specs: ParameterSpec[] = [...norm('layernorm', h)];
  for (let layer = 0; layer < numHiddenLayers; layer++) {
    const p = `encoder.layer.${layer}`;
    specs.push(...attention(`${p}.attention`, h));
    if (layer % crossAttentionFrequency === 0) specs.push(...attention(`${p}.crossattention`, e));
    specs.push(
      ...linear(`${p}.intermediate_query.dense`, i, h),
      ...linear(`${p}.output_query.dense`, h, i),
      ...norm(`${p}.output_query.LayerNorm`, h),
    );
  }
  return specs;
}

/**
 * The parameters `buildWindowQFormerDownsampler` reads, under HF's module
 * names inside Granite4VisionWindowQFormerDownsampler (the same in vLLM):
 * `norm.*`, `query` [1, q*q, Dv], `image_positions` [1, w*w, Dv],
 * `qformer.*` (see `qformerExpectedParameters`), `out_linear.*`. The same
 * names for every mode: deepstack and spatial projectors differ only in weights.
 */
export function expectedParameters(config: WindowQFormerConfig): ParameterSpec[] {
  const cfg = validateWindowQFormerConfig(config);
  const dv = cfg.visionHiddenSize;
  return [
    ...norm('norm', dv),
    { name: 'query', shape: [1, cfg.querySide ** 2, dv] },
    { name: 'image_positions', shape: [1, cfg.windowSide ** 2, dv] },
    ...qformerExpectedParameters(cfg.qformer).map((s) => ({ name: `qformer.${s.name}`, shape: s.shape })),
    ...linear('out_linear', cfg.textHiddenSize, dv),
  ];
}

function linear(name: string, out: number, inp: number): ParameterSpec[] {
  return [
    { name: `${name}.weight`, shape: [out, inp] },
    { name: `${name}.bias`, shape: [out] },
  ];
}

function norm(name: string, d: number): ParameterSpec[] {
  return [
    { name: `${name}.weight`, shape: [d] },
    { name: `${name}.bias`, shape: [d] },
  ];
}
