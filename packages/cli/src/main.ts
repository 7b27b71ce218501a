import { parseArgs } from 'node:util';
import { demoCommand, forwardCommand, generateCommand, type Out, UsageError } from './commands.js';
import { runGraphDemo } from './demo-graph.js';

const USAGE = `usage: vlmkit <command> [options]

commands:
  forward   --model DIR --inputs IN.safetensors --out OUT.safetensors
            run the model once; OUT gets float32 logits [B,S,V] and, for ERNIE-4.5-VL, image_embeds / video_embeds
            and int64 position_ids [3,B,S]; for Granite 4 Vision, deepstack_<k> [num_image_tokens, D] per injected level
  generate  --model DIR --inputs IN.safetensors --max-new-tokens N [--out OUT.safetensors]
            [--temperature T --top-k K --top-p P --seed S --eos ID]
            greedy by default; streams tokens; OUT gets int64 generated_ids [B,N] (new tokens only)
  demo      the tiny ERNIE-4.5-VL fixture end to end through generate (token ids, device, timings)
  graph-demo  build a small graph in TypeScript and run it
  help      this text

common options:
  --device auto|cpu|cuda   (default auto: CUDA when its EP binaries and a GPU are present)
  --reference vllm|hf      where vLLM and HF transformers differ, whose behaviour to follow (default vllm)
  --cache-dir DIR          where built .onnx files go (default: the model directory when writable)
  --adapter DIR            a PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors) merged at load (Granite)

IN holds the HF forward kwargs by their HF names (ERNIE: input_ids, attention_mask, pixel_values, image_grid_thw,
pixel_values_videos, video_grid_thw, moe_mm_token_type_ids; Granite: input_ids, attention_mask, pixel_values,
image_sizes, position_ids). The model type comes from config.json (supported: ernie4_5_vl_moe, granite4_vision).
`;

const OPTIONS = {
  model: { type: 'string' },
  inputs: { type: 'string' },
  out: { type: 'string' },
  device: { type: 'string', default: 'auto' },
  reference: { type: 'string', default: 'vllm' },
  'cache-dir': { type: 'string' },
  adapter: { type: 'string' },
  'max-new-tokens': { type: 'string' },
  temperature: { type: 'string' },
  'top-k': { type: 'string' },
  'top-p': { type: 'string' },
  seed: { type: 'string' },
  eos: { type: 'string', multiple: true },
} as const;

function need(v: string | undefined, flag: string): string {
  if (v === undefined || v === '') throw new UsageError(`--${flag} is required`);
  return v;
}

function num(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new UsageError(`--${flag} must be a number, got '${v}'`);
  return n;
}

function oneOf<T extends string>(v: string, allowed: readonly T[], flag: string): T {
  if (!(allowed as readonly string[]).includes(v)) throw new UsageError(`--${flag} must be one of ${allowed.join(', ')}, got '${v}'`);
  return v as T;
}

/** Runs the command line; returns the exit code (2 for usage errors). */
export async function main(argv: readonly string[], out: Out = (s) => process.stdout.write(s)): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined || command === 'help' || command === '--help') {
      out(USAGE);
      return 0;
    }
    const { values: v } = parseArgs({ args: rest, options: OPTIONS, strict: true, allowPositionals: false });
    const device = oneOf(v.device, ['auto', 'cpu', 'cuda'] as const, 'device');
    const reference = oneOf(v.reference, ['vllm', 'hf'] as const, 'reference');
    const common = { device, reference, cacheDir: v['cache-dir'], adapter: v.adapter };
    switch (command) {
      case 'forward':
        await forwardCommand({ ...common, model: need(v.model, 'model'), inputs: need(v.inputs, 'inputs'), out: need(v.out, 'out') }, out);
        return 0;
      case 'generate': {
        const maxNewTokens = num(need(v['max-new-tokens'], 'max-new-tokens'), 'max-new-tokens')!;
        const eos = v.eos?.map((e) => num(e, 'eos')!);
        const opt = (k: string, x: number | undefined) => (x === undefined ? {} : { [k]: x });
        await generateCommand(
          {
            ...common,
            model: need(v.model, 'model'),
            inputs: need(v.inputs, 'inputs'),
            out: v.out,
            generate: {
              maxNewTokens,
              ...(eos ? { eos } : {}),
              ...opt('temperature', num(v.temperature, 'temperature')),
              ...opt('topK', num(v['top-k'], 'top-k')),
              ...opt('topP', num(v['top-p'], 'top-p')),
              ...opt('seed', num(v.seed, 'seed')),
            },
          },
          out,
        );
        return 0;
      }
      case 'demo':
        await demoCommand(device, out);
        return 0;
      case 'graph-demo': {
        const r = await runGraphDemo(device);
        out(`device: ${r.device} (${r.deviceReason})\n`);
        out(`output: [${Array.from(r.output.slice(0, 8), (x) => x.toFixed(4)).join(', ')}]\n`);
        out(`build ${r.buildMs.toFixed(1)} ms, run ${r.runMs.toFixed(1)} ms\n`);
        return 0;
      }
      default:
        throw new UsageError(`unknown command '${command}'`);
    }
  } catch (e) {
    if (
      e instanceof UsageError ||
      (e as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ||
      (e as { code?: string }).code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE'
    ) {
      out(`vlmkit: ${(e as Error).message}\n\n${USAGE}`);
      return 2;
    }
    throw e;
  }
}
