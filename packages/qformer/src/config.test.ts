import { ConfigError } from '@vlmkit/config';
import { describe, expect, it } from 'vitest';
import { BLIP2_QFORMER_DEFAULTS, qformerFromHfConfig, validateQFormerConfig } from './qformer-config.js';
import { GRANITE_TINY, readJson } from './test-utils/fixtures.js';
import { derivedQFormer, fromHfConfig, parseDownsampleRate, validateWindowQFormerConfig, windowGeometry } from './window-config.js';

// A config.json whose top-level values the tests spread (sub-configs).
type Json = Record<string, Record<string, unknown>>;

/** `CODE field: message` of the ConfigError `fn` throws (another error fails the test). */
function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return `${err.code} ${err.field}: ${err.message}`;
    throw err;
  }
  return 'no error';
}

const granite = () => JSON.parse(JSON.stringify(readJson(`${GRANITE_TINY}config.json`))) as Json;

describe('fromHfConfig (Granite 4 Vision config.json)', () => {
  it('reads the granite-tiny config', () => {
    const c = fromHfConfig(granite());
    expect(c).toEqual({
      visionHiddenSize: 32,
      textHiddenSize: 64,
      imageSide: 8, // 64 px / patch 8
      querySide: 2,
      windowSide: 4,
      normEps: 1e-6,
      qformer: {
        hiddenSize: 32,
        numHiddenLayers: 1,
        numAttentionHeads: 2,
        intermediateSize: 64,
        hiddenAct: 'gelu',
        layerNormEps: 1e-12,
        crossAttentionFrequency: 1,
        encoderHiddenSize: 32,
      },
    });
    // 8x8 patches, "2/4": 2x2 windows per tile, each 2x2 queries -> a 4x4 grid = 16 tokens (image_seq_length).
    expect(windowGeometry(c)).toEqual({ numWindows: 2, downsampledSide: 4, tokensPerTile: 16 });
  });

  it('the real granite-4.0-3b-vision shape: no qformer_config -> 1 layer, 1152/64 = 18 heads, intermediate 3072 (HF default = vLLM)', () => {
    const c = fromHfConfig({
      downsample_rate: '4/8',
      vision_config: { model_type: 'siglip_vision_model', hidden_size: 1152, image_size: 384, patch_size: 16 },
      text_config: { hidden_size: 2560 },
    });
    expect(c.imageSide).toBe(24);
    expect(windowGeometry(c)).toEqual({ numWindows: 3, downsampledSide: 12, tokensPerTile: 144 });
    expect(c.qformer).toEqual({
      ...BLIP2_QFORMER_DEFAULTS,
      hiddenSize: 1152,
      encoderHiddenSize: 1152,
      numHiddenLayers: 1,
      numAttentionHeads: 18,
      intermediateSize: 3072,
      crossAttentionFrequency: 1,
    });
  });

  it("reference 'vllm' ignores qformer_config as vLLM does (and fails where vLLM would: Dv/64 = 0 heads)", () => {
    const big = {
      ...granite(),
      vision_config: { ...granite()['vision_config'], hidden_size: 128 },
      qformer_config: { ...granite()['qformer_config'], hidden_size: 128, encoder_hidden_size: 128 },
    };
    expect(fromHfConfig(big).qformer.numAttentionHeads).toBe(2);
    expect(fromHfConfig(big, { reference: 'vllm' }).qformer).toEqual(derivedQFormer(128));
    expect(fromHfConfig(big, { reference: 'vllm' }).qformer.numAttentionHeads).toBe(2); // 128 / 64
    expect(code(() => fromHfConfig(granite(), { reference: 'vllm' }))).toMatch(
      /^INVALID_CONFIG numAttentionHeads: Q-Former config: numAttentionHeads must be a positive integer, got 0/,
    );
  });

  it('vision defaults follow the vision model type (SigLIP patch 16; a dict without model_type is CLIP, patch 32)', () => {
    const base = { downsample_rate: '1/2', text_config: { hidden_size: 8 } };
    expect(fromHfConfig({ ...base, vision_config: { model_type: 'siglip_vision_model' } })).toMatchObject({
      imageSide: 14,
      visionHiddenSize: 768,
    }); // 224 / 16
    expect(fromHfConfig({ ...base, downsample_rate: '1/7', vision_config: {} }).imageSide).toBe(7); // 224 / 32
  });

  const bad: [string, (c: Json) => unknown, RegExp][] = [
    ['not an object', () => 'granite', /^INVALID_CONFIG : Granite 4 Vision projector config: expected a JSON object, found "granite"/],
    [
      'no downsample_rate',
      (c) => ({ ...c, downsample_rate: undefined }),
      /^MISSING_CONFIG_FIELD downsample_rate: .*downsample_rate is missing/,
    ],
    ['rate not q/w', (c) => ({ ...c, downsample_rate: '0.5' }), /^INVALID_CONFIG downsample_rate: .*"q\/w".*found "0\.5"/],
    ['rate zero', (c) => ({ ...c, downsample_rate: '0/4' }), /^INVALID_CONFIG downsample_rate: .*"q\/w"/],
    [
      'rate above 1',
      (c) => ({ ...c, downsample_rate: '4/2' }),
      /^INCONSISTENT_CONFIG querySide: .*querySide 4 is larger than the key window side 2/,
    ],
    [
      'side not a multiple of w',
      (c) => ({ ...c, downsample_rate: '1/3' }),
      /^INCONSISTENT_CONFIG windowSide: .*windowSide 3 \(the key window side of downsample_rate 1\/3\) does not divide the image side 8/,
    ],
    [
      'no text hidden size',
      (c) => ({ ...c, text_config: {} }),
      /^MISSING_CONFIG_FIELD text_config.hidden_size: .*text_config.hidden_size is missing/,
    ],
    ['text_config not an object', (c) => ({ ...c, text_config: [64] }), /^INVALID_CONFIG text_config: .*text_config must be a JSON object/],
    [
      'qformer width != vision width',
      (c) => ({ ...c, qformer_config: { ...c['qformer_config'], hidden_size: 64 } }),
      /^INCONSISTENT_CONFIG qformer_config.hidden_size: .*\(64\) must equal vision_config.hidden_size \(32\)/,
    ],
    [
      'heads do not divide',
      (c) => ({ ...c, qformer_config: { ...c['qformer_config'], num_attention_heads: 3 } }),
      /^INCONSISTENT_CONFIG qformer_config.num_attention_heads: .*\(3\) must divide hidden_size \(32\)/,
    ],
    [
      'unknown activation',
      (c) => ({ ...c, qformer_config: { ...c['qformer_config'], hidden_act: 'mish' } }),
      /^UNSUPPORTED_CONFIG qformer_config.hidden_act: .*qformer_config.hidden_act "mish" is not supported/,
    ],
    [
      'eps not positive',
      (c) => ({ ...c, qformer_config: { ...c['qformer_config'], layer_norm_eps: 0 } }),
      /^INVALID_CONFIG qformer_config.layer_norm_eps: .*qformer_config.layer_norm_eps must be a positive number/,
    ],
    [
      'patch size a string',
      (c) => ({ ...c, vision_config: { ...c['vision_config'], patch_size: '8' } }),
      /^INVALID_CONFIG vision_config.patch_size: .*vision_config.patch_size must be a positive integer or a square \[n, n\], found "8"/,
    ],
    [
      'unknown vision tower',
      (c) => ({ ...c, vision_config: { model_type: 'vit' } }),
      /^UNSUPPORTED_CONFIG vision_config.model_type: .*"vit"/,
    ],
  ];
  for (const [label, edit, want] of bad) {
    it(`rejects: ${label}`, () => {
      expect(code(() => fromHfConfig(edit(granite())))).toMatch(want);
    });
  }

  it('parseDownsampleRate keeps q and w as written ("4/8" is not reduced to 1/2)', () => {
    expect(parseDownsampleRate('4/8')).toEqual([4, 8]);
    expect(parseDownsampleRate(' 2 / 4 ')).toEqual([2, 4]);
  });

  it('validateWindowQFormerConfig rejects a hand-built config with a fractional side', () => {
    const c = fromHfConfig(granite());
    expect(code(() => validateWindowQFormerConfig({ ...c, imageSide: 7.5 }))).toMatch(
      /^INVALID_CONFIG imageSide: window Q-Former config: imageSide must be a positive integer/,
    );
  });
});

describe('qformerFromHfConfig', () => {
  it('reads a Blip2QFormerConfig, or the qformer_config of a parent (Granite, BLIP-2)', () => {
    const q = qformerFromHfConfig({
      model_type: 'blip_2_qformer',
      hidden_size: 32,
      num_attention_heads: 4,
      encoder_hidden_size: 24,
      num_hidden_layers: 3,
    });
    expect(q).toEqual({ ...BLIP2_QFORMER_DEFAULTS, hiddenSize: 32, numAttentionHeads: 4, encoderHiddenSize: 24, numHiddenLayers: 3 });
    expect(qformerFromHfConfig(granite())).toEqual(fromHfConfig(granite()).qformer);
    expect(qformerFromHfConfig({ model_type: 'blip-2', qformer_config: {} })).toEqual(BLIP2_QFORMER_DEFAULTS); // HF: 768 wide, 12 layers, encoder 1408
  });

  it('rejects what is not a Q-Former config', () => {
    expect(code(() => qformerFromHfConfig({ model_type: 'llama' }))).toMatch(
      /^MISSING_CONFIG_FIELD qformer_config: Q-Former config: qformer_config is missing and model_type is "llama"/,
    );
    expect(code(() => qformerFromHfConfig({ qformer_config: 3 }))).toMatch(
      /^INVALID_CONFIG qformer_config: Q-Former config: qformer_config must be a JSON object/,
    );
    expect(code(() => qformerFromHfConfig({ use_qformer_text_input: 'yes' }))).toMatch(
      /^INVALID_CONFIG use_qformer_text_input: .*use_qformer_text_input must be true or false/,
    );
    expect(code(() => validateQFormerConfig({ ...BLIP2_QFORMER_DEFAULTS, hiddenAct: 'tanh' as never }))).toMatch(
      /^UNSUPPORTED_CONFIG hiddenAct: /,
    );
  });
});
