import { Graph, type GraphError, tensorFromArray, Weights } from '@vlmkit/onnx-graph';
import { describe, expect, it } from 'vitest';
import type { QFormerError } from './errors.js';
import { qformerExpectedParameters } from './parameters.js';
import { buildBlip2QFormer, buildBlip2QFormerModel, QFORMER_IO } from './qformer.js';
import { qformerFromHfConfig } from './qformer-config.js';
import { QFORMER_CASES, readJson, readTensor, weightsUnder } from './test-utils/fixtures.js';
import { f32, randn, relMaxError, runGraph } from './test-utils/run.js';

const CASE = `${QFORMER_CASES}qformer/`;
const TOL = 1e-4; // max |ours - HF| / max |HF|

describe('buildBlip2QFormerModel vs HF 5.17 Blip2QFormerModel (test-fixtures/qformer/qformer)', () => {
  it('matches last_hidden_state: 3 layers, cross-attention on layers 0 and 2, encoder width 24', async () => {
    const config = qformerFromHfConfig(readJson(`${CASE}config.json`));
    expect(config).toMatchObject({ numHiddenLayers: 3, crossAttentionFrequency: 2, encoderHiddenSize: 24, hiddenSize: 32 });
    const weights = await weightsUnder(`${CASE}model.safetensors`, '');
    const q = await readTensor(`${CASE}inputs.safetensors`, 'query_embeds');
    const e = await readTensor(`${CASE}inputs.safetensors`, 'encoder_hidden_states');
    const ref = await readTensor(`${CASE}expected.safetensors`, 'last_hidden_state');
    const out = await runGraph(buildBlip2QFormerModel(weights, config), {
      [QFORMER_IO.queryEmbeds]: f32(q.data, q.shape),
      [QFORMER_IO.encoderHiddenStates]: f32(e.data, e.shape),
    });
    const got = out[QFORMER_IO.hidden]!;
    expect(got.dims).toEqual(ref.shape);
    const { rel, maxAbs } = relMaxError(got.data as Float32Array, ref.data);
    console.log(`qformer: rel ${rel.toExponential(2)} (max abs ${maxAbs.toExponential(2)})`);
    expect(rel).toBeLessThan(TOL);
  });

  it('reads every parameter of the checkpoint and nothing else (no unused text-path or missing tensor)', async () => {
    const config = qformerFromHfConfig(readJson(`${CASE}config.json`));
    const weights = await weightsUnder(`${CASE}model.safetensors`, '');
    const g = buildBlip2QFormerModel(weights, config);
    const used = g
      .snapshot()
      .initializers.map((i) => i.name)
      .filter((n) => n.startsWith('qformer.'))
      .map((n) => n.slice('qformer.'.length))
      .sort();
    expect(used).toEqual(weights.names());
    expect(
      qformerExpectedParameters(config)
        .map((s) => s.name)
        .sort(),
    ).toEqual(weights.names());
  });
});

describe('buildBlip2QFormer in a caller graph', () => {
  const config = qformerFromHfConfig({
    model_type: 'blip_2_qformer',
    hidden_size: 16,
    num_attention_heads: 2,
    intermediate_size: 24,
    num_hidden_layers: 1,
    encoder_hidden_size: 8,
  });
  const weights = (seed: number) =>
    Weights.from(
      Object.fromEntries(
        qformerExpectedParameters(config).map((s, k) => [
          s.name,
          tensorFromArray(
            'float32',
            s.shape,
            randn(
              s.shape.reduce((a, b) => a * b, 1),
              seed + k,
              0.3,
            ),
          ),
        ]),
      ),
    );

  it('two Q-Formers under their own scopes in one graph give what each gives alone', async () => {
    const [wa, wb] = [weights(1), weights(500)];
    const q = randn(2 * 3 * 16, 7);
    const e = randn(2 * 5 * 8, 8);
    const feeds = { [QFORMER_IO.queryEmbeds]: f32(q, [2, 3, 16]), [QFORMER_IO.encoderHiddenStates]: f32(e, [2, 5, 8]) };
    const g = new Graph();
    const queryEmbeds = g.input(QFORMER_IO.queryEmbeds, 'float32', ['b', 3, 16]);
    const encoderHiddenStates = g.input(QFORMER_IO.encoderHiddenStates, 'float32', ['b', 't', 8]);
    g.output(buildBlip2QFormer(g, wa, config, { queryEmbeds, encoderHiddenStates }, { scope: 'a' }).hidden, 'ya');
    g.output(buildBlip2QFormer(g, wb, config, { queryEmbeds, encoderHiddenStates }, { scope: 'b' }).hidden, 'yb');
    const both = await runGraph(g, feeds);
    const alone = await runGraph(buildBlip2QFormerModel(wb, config), feeds);
    expect(both['yb']!.data).toEqual(alone[QFORMER_IO.hidden]!.data);
    expect(relMaxError(both['ya']!.data as Float32Array, both['yb']!.data as Float32Array).rel).toBeGreaterThan(0.1);
  });

  it('rejects inputs of the wrong width, rank or dtype, and names a missing parameter', () => {
    const g = new Graph();
    const ok = g.input('q', 'float32', ['b', 3, 16]);
    const enc = g.input('e', 'float32', ['b', 5, 8]);
    const wrongWidth = g.input('e2', 'float32', ['b', 5, 16]);
    const ints = g.input('i', 'int64', ['b', 3, 16]);
    const code = (fn: () => unknown) => {
      try {
        fn();
      } catch (err) {
        return (err as QFormerError | GraphError).code;
      }
      return 'no error';
    };
    expect(code(() => buildBlip2QFormer(g, weights(1), config, { queryEmbeds: ok, encoderHiddenStates: wrongWidth }))).toBe('BAD_INPUT');
    expect(code(() => buildBlip2QFormer(g, weights(1), config, { queryEmbeds: ints, encoderHiddenStates: enc }))).toBe('BAD_INPUT');
    const partial = Weights.from({ 'layernorm.weight': tensorFromArray('float32', [16], new Float32Array(16)) });
    expect(code(() => buildBlip2QFormer(g, partial, config, { queryEmbeds: ok, encoderHiddenStates: enc }, { scope: 'p' }))).toBe(
      'MISSING_PARAMETER',
    );
  });
});
