// The generation loop in the graph, shared by both decoders: an ONNX Loop whose body is one decoder step
// (the model's own builder, called once on the body graph: one copy of its nodes, weights in the root) plus the
// choice of the next token, with the KV cache, the attention mask and the next inputs as loop-carried state.
// One session run makes up to `loop.max_tokens` tokens; its `next.*` and `present.*` outputs are the next
// run's inputs, so a generation goes chunk by chunk (the host streams each chunk's tokens).
import {
  applyPasses,
  type Binding,
  type Contract,
  type ContractEntry,
  contract,
  declareInputs,
  declareTensors,
  Graph,
  type QuantizeRequest,
  quantizeLinearPass,
  tensorSpecs,
  type Value,
} from '@vlmkit/onnx-graph';
import { markPast, type PAST_KEY_VALUES, presentOutputsOf } from './kv-io.js';

import { greedyTokens, sampledTokens } from './token-choice.js';
import type { DecoderPassOptions, KvPair } from './types.js';

/** The loop graph's own inputs, besides the decoder's step inputs (which keep their names). */
export const DECODE_LOOP_INPUTS = contract({
  /** The most tokens this run makes (the Loop's trip count). */
  'loop.max_tokens': ['int64', []],
  /** The position of the token each row is fed next (the model turns it into its position inputs). */
  'loop.next_positions': ['int64', ['batch']],
  /** Rows that already ended (they emit and are fed the pad id). */
  'loop.done': ['bool', ['batch']],
  /** The ids that end a row (E may be 0). */
  'loop.eos': ['int64', ['eos']],
  /** The id a finished row emits. */
  'loop.pad_token_id': ['int64', []],
  /** 0 is greedy; above 0, sampling at that temperature. */
  'loop.temperature': ['float64', []],
  /** 0: all ids. */
  'loop.top_k': ['int64', []],
  /** In (0, 1]. */
  'loop.top_p': ['float64', []],
  /** Uniform numbers in [0, 1), used in order, one per unfinished row and step when sampling. */
  'loop.uniforms': ['float64', ['uniforms']],
});

const LOOP_NAMES = DECODE_LOOP_INPUTS.names;
/** The loop graph's input names (`DECODE_LOOP_INPUTS`) and its own outputs. */
export const DECODE_LOOP_IO = {
  maxTokens: LOOP_NAMES['loop.max_tokens'],
  nextPositions: LOOP_NAMES['loop.next_positions'],
  done: LOOP_NAMES['loop.done'],
  eos: LOOP_NAMES['loop.eos'],
  padTokenId: LOOP_NAMES['loop.pad_token_id'],
  temperature: LOOP_NAMES['loop.temperature'],
  topK: LOOP_NAMES['loop.top_k'],
  topP: LOOP_NAMES['loop.top_p'],
  uniforms: LOOP_NAMES['loop.uniforms'],
  /** int64 [K, B] output: the tokens of the K steps run (K < max_tokens when every row ended). */
  tokens: 'loop.tokens',
  /** int64 scalar output: how many of `loop.uniforms` were used. */
  draws: 'loop.draws',
  /** The output that holds a carried input's value for the next run; the KV cache's are `present.*`. */
  next: (input: string) => `next.${input}` as const,
} as const;

/** What every decoder contract the loop drives has: token ids, the mask over past and current, the cache. */
export type DecoderStepSchema = {
  readonly input_ids: ContractEntry;
  readonly attention_mask: ContractEntry;
  readonly past_key_values: typeof PAST_KEY_VALUES;
  readonly [key: string]: ContractEntry;
};

/** The keys of a decoder contract the loop declares itself; every other is one of the model's carried inputs. */
const LOOP_OWN = ['input_ids', 'attention_mask', 'past_key_values', 'logits_to_keep'];

/** What the body hands a model to build one decoder step. */
export interface DecodeLoopStep {
  /** [B, S] int64: the prompt in the first step, then the previous token [B, 1]. */
  inputIds: Value;
  /** [B, P + S] int64. */
  attentionMask: Value;
  /** The model's `inputs` (see `DecodeLoopSpec.contract`), in their order. */
  inputs: Value[];
  past: KvPair[];
  /** int64 scalar 1: only the last position's logits are needed. */
  logitsToKeep: Value;
}

/** A decoder the loop drives: its sizes and input contract, one step, and its inputs for the next token. */
export interface DecodeLoopSpec<S extends DecoderStepSchema = DecoderStepSchema> {
  numHiddenLayers: number;
  numKeyValueHeads: number;
  headDim: number;
  /**
   * The decoder's step inputs (`*_DECODER_INPUTS`) and their binding (the cache dtype is the loop graph's):
   * the loop declares them under the same names; the model's `inputs` are those besides the token ids, the
   * mask, the cache and `logits_to_keep`, in contract order.
   */
  contract: Contract<S>;
  binding: Omit<Binding<S>, 'dtypes'>;
  /** Builds one decoder step on `b`: logits [B, 1, V] and every layer's present KV (concat layout). */
  step(b: Graph, x: DecodeLoopStep): { logits: Value; present: KvPair[] };
  /**
   * The model's `inputs` for a generated text token at `positions` [B] int64 (tokens [B] are the ids fed),
   * in `inputs` order.
   */
  next(b: Graph, x: { positions: Value; tokens: Value }): Value[];
}

export interface DecodeLoopModelOptions extends DecoderPassOptions {
  /** Graph name written into the model. */
  name?: string;
  /** Block-quantized Linear weights (`quantizeLinearPass`, applied after building). */
  quantize?: QuantizeRequest | undefined;
}

/**
 * The decode loop as a complete graph:
 *
 * inputs: the decoder's step inputs under their own names (`input_ids`, `attention_mask`, the model's
 * `inputs`, `past_key_values.*`), plus `loop.*` (`DECODE_LOOP_IO`).
 *
 * Each iteration runs one decoder step, picks each row's token (greedy, or sampled when `loop.temperature` >
 * 0), emits the pad id for finished rows, marks rows that emitted an eos id, and carries the next inputs: the
 * token [B, 1], the mask with a column of ones, the model's inputs at the next position, the cache. It stops
 * after `loop.max_tokens` iterations or when every row has ended.
 *
 * outputs: `loop.tokens` [K, B], `loop.draws`, and for the next run `next.<input>` of every carried input
 * (`next.input_ids`, `next.attention_mask`, `next.loop.next_positions`, `next.loop.done`, the model's) and
 * `present.*` (its `past_key_values.*`).
 */
export function buildDecodeLoopModel<S extends DecoderStepSchema>(spec: DecodeLoopSpec<S>, options: DecodeLoopModelOptions = {}): Graph {
  // Built in float32. A 16-bit graph (`floatConvertPass` in `passes`) carries the KV cache through the Loop in
  // its dtype (bfloat16 included: half the bytes on the device), fed and returned in `kvCacheDType` as the step
  // graph's; the token choice reads the step's logits in float32.
  const g = new Graph({ name: options.name ?? 'decode_loop' });
  const io = DECODE_LOOP_IO;
  const { numHiddenLayers: L, numKeyValueHeads: hkv, headDim: hd } = spec;
  // The loop's order: ids, mask, the model's inputs, the cache (the decoder contract's own order may differ).
  const stepInputs = tensorSpecs(spec.contract, { ...spec.binding, dtypes: { kv_cache: 'float32' } } as Binding<S>);
  const declare = (keys: (k: string) => boolean) =>
    declareTensors(
      g,
      stepInputs.filter((t) => keys(t.key)),
    );
  const [inputIds, attentionMask] = [declare((k) => k === 'input_ids')[0]!, declare((k) => k === 'attention_mask')[0]!];
  const modelInputs = declare((k) => !LOOP_OWN.includes(k));
  const cache = declare((k) => k === 'past_key_values');
  const past = markPast(
    g,
    Array.from({ length: cache.length / 2 }, (_, i) => ({ key: cache[2 * i]!, value: cache[2 * i + 1]! })),
  );
  const loop = declareInputs(g, DECODE_LOOP_INPUTS);
  const maxTokens = loop['loop.max_tokens'];
  const nextPositions = loop['loop.next_positions'];
  const done = loop['loop.done'];
  const eos = loop['loop.eos'];
  const pad = loop['loop.pad_token_id'];
  const temperature = loop['loop.temperature'];
  const topK = loop['loop.top_k'];
  const topP = loop['loop.top_p'];
  const uniforms = loop['loop.uniforms'];
  const M = modelInputs.length;
  const named: Value[] = [inputIds, attentionMask, ...modelInputs, nextPositions, done];
  const carried = [
    ...named,
    g.scalar(0, 'int64'), // uniforms drawn so far in this run
    ...past.flatMap((kv) => [kv.key, kv.value]),
  ];
  const r = g.loop({ trips: maxTokens, cond: g.not(allDone(g, done)), carried }, (b, { carried: c }) => {
    const [ids, mask] = [c[0]!, c[1]!];
    const inputs = c.slice(2, 2 + M);
    const [positions, rowDone, draws] = [c[2 + M]!, c[3 + M]!, c[4 + M]!];
    const kv = c.slice(5 + M);
    const pastKv = Array.from({ length: L }, (_, i) => ({ key: kv[2 * i]!, value: kv[2 * i + 1]! }));
    const step = spec.step(b, { inputIds: ids, attentionMask: mask, inputs, past: pastKv, logitsToKeep: b.scalar(1, 'int64') });
    return b.scope('token_choice', () =>
      b.inFloat32(() => {
        const logits = b.reshape(step.logits, [-1, step.logits.dim(2) as number]); // [B, V]
        const open = b.cast(b.not(rowDone), 'int64'); // [B]
        const sampling = b.greater(temperature, 0);
        const [chosen] = b.if(
          sampling,
          (s) => {
            // Row b draws the next uniform after those of the unfinished rows before it (the host's order).
            const index = s.add(draws, s.cumsum(open, 0, { exclusive: true }));
            const last = s.sub(s.reshape(s.shapeOf(uniforms), []), 1);
            const uniform = s.gather(uniforms, s.max(s.min(index, last), 0));
            return [sampledTokens(s, logits, { temperature, topK, topP, uniform })];
          },
          (s) => [greedyTokens(s, logits)],
        );
        const token = b.where(rowDone, pad, chosen!); // [B]
        const hitEos = b.greater(b.reduceSum(b.cast(b.equal(b.unsqueeze(token, [1]), b.unsqueeze(eos, [0])), 'int64'), [1], false), 0);
        const nowDone = b.or(rowDone, hitEos);
        const nextIds = b.unsqueeze(token, [1]);
        const ones = b.constantOfShape(b.shapeOf(nextIds), 1, 'int64', ['batch', 1]);
        const used = b.where(sampling, b.reduceSum(open, [0], false), b.scalar(0, 'int64'));
        return {
          cond: b.not(allDone(b, nowDone)),
          carried: [
            nextIds,
            b.concat([mask, ones], 1),
            ...spec.next(b, { positions, tokens: token }),
            b.add(positions, 1),
            nowDone,
            b.add(draws, used),
            ...step.present.flatMap((p) => [p.key, p.value]),
          ],
          scans: [token],
        };
      }),
    );
  });
  named.forEach((v, i) => {
    g.output(r.carried[i]!, io.next(v.name));
  });
  g.output(r.carried[named.length]!, io.draws);
  const kvOut = r.carried.slice(named.length + 1);
  // Out in the cache dtype once converted (a Cast only for bfloat16, whose cache is fed as float32).
  const present = Array.from({ length: L }, (_, i) => ({ key: kvOut[2 * i]!, value: kvOut[2 * i + 1]! }));
  presentOutputsOf(g, present, hkv, hd, 'total_out');
  g.output(r.scans[0]!, io.tokens);
  if (options.quantize !== undefined) applyPasses(g, [quantizeLinearPass(options.quantize)]);
  applyPasses(g, options.passes ?? []);
  return g;
}

/** bool scalar: every row of `done` [B] is true. */
function allDone(g: Graph, done: Value): Value {
  return g.equal(g.reduceSum(g.cast(g.not(done), 'int64'), [0], false), g.scalar(0, 'int64'));
}
