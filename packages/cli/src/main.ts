import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  DECODE_LOOPS,
  FIXTURE_DIR,
  type LoadOptions,
  ModelError,
  type ModelGenerateOptions,
  OPS_FIELDS,
  PROFILE_NAMES,
  PROFILES,
  type ProfileOverrides,
  validateSampling,
} from '@vlmkit/models';
import { COMPUTE_DTYPES, OP_SETS, QUANTIZE_MODES } from '@vlmkit/onnx-graph';
import { forwardCommand, generateCommand, type Out, UsageError } from './commands.js';
import { runGraphDemo } from './demo-graph.js';
import { exportCommand } from './export-command.js';
import { inspectCommand } from './inspect-command.js';
import { Interrupted, untilAborted } from './interrupt.js';
import { readPrompt } from './prompt-input.js';
import { preprocessCommand, runCommand } from './run.js';
import { serveCommand } from './serve-command.js';
import { COMMANDS, commandUsage, USAGE } from './usage.js';

const OPTIONS = {
  model: { type: 'string' },
  inputs: { type: 'string' },
  out: { type: 'string' },
  device: { type: 'string', default: 'auto' },
  reference: { type: 'string', default: 'vllm' },
  'cache-dir': { type: 'string' },
  adapter: { type: 'string' },
  quantize: { type: 'string' },
  'quantize-vision': { type: 'string' },
  profile: { type: 'string' },
  ops: { type: 'string' },
  loop: { type: 'string' },
  'loop-chunk': { type: 'string' },
  dtype: { type: 'string' },
  'max-new-tokens': { type: 'string' },
  temperature: { type: 'string' },
  'top-k': { type: 'string' },
  'top-p': { type: 'string' },
  seed: { type: 'string' },
  eos: { type: 'string', multiple: true },
  image: { type: 'string', multiple: true },
  video: { type: 'string' },
  prompt: { type: 'string' },
  'prompt-file': { type: 'string' },
  json: { type: 'boolean', default: false },
  host: { type: 'string', default: '127.0.0.1' },
  port: { type: 'string', default: '8000' },
  'max-batch': { type: 'string' },
  'max-queue': { type: 'string' },
  'api-key': { type: 'string' },
  'media-dir': { type: 'string' },
  'allow-remote-media': { type: 'boolean', default: false },
  'grace-seconds': { type: 'string' },
  'deadline-seconds': { type: 'string' },
  'served-model-name': { type: 'string', multiple: true },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

/** How `main` talks to the terminal: whether stdout is one (progress bars), and where bars go (stderr). */
export interface MainIo {
  tty?: boolean | undefined;
  err?: Out | undefined;
  /** Whether stderr is a terminal (bars redrawn in place) or a log (one line per load step). Default: as `tty`. */
  errTty?: boolean | undefined;
  /** Where `--prompt -` reads the prompt (default process.stdin). */
  stdin?: NodeJS.ReadableStream | undefined;
  /** Aborts when stdout's reader has gone (EPIPE): `run` stops generating and prints nothing more. */
  outputClosed?: AbortSignal | undefined;
}

function need(v: string | undefined, flag: string): string {
  if (v === undefined || v === '') throw new UsageError(`--${flag} is required`);
  return v;
}

/** A decimal number as written on a command line ('', '0x10', ' 5' and 'Infinity' are not). */
const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$/i;

function num(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  if (!DECIMAL.test(v)) throw new UsageError(`--${flag} must be a number, got '${v}'`);
  return Number(v);
}

function int(v: string | undefined, flag: string): number | undefined {
  const n = num(v, flag);
  if (n !== undefined && !Number.isSafeInteger(n)) throw new UsageError(`--${flag} must be an integer, got '${v}'`);
  return n;
}

/** --max-new-tokens: a count (generate's own check would come only after the model has loaded). */
function maxNewTokens(v: string | undefined): number | undefined {
  const n = int(v, 'max-new-tokens');
  if (n !== undefined && n < 0) throw new UsageError(`--max-new-tokens must be an integer >= 0, got '${v}'`);
  return n;
}

/** validateSampling's option names as the command line spells them (its messages begin with the name). */
const SAMPLING_FLAGS: Record<string, string> = { temperature: '--temperature', topK: '--top-k', topP: '--top-p', seed: '--seed' };

/** --temperature, --top-k, --top-p, --seed, --eos, --loop-chunk: the options given, as generate's, checked before any load. */
function sampling(v: {
  temperature?: string;
  'top-k'?: string;
  'top-p'?: string;
  seed?: string;
  eos?: string[];
  'loop-chunk'?: string;
  loop?: string;
}): SamplingFlags {
  const opt = (k: string, x: number | undefined) => (x === undefined ? {} : { [k]: x });
  const eos = v.eos?.map((e) => int(e, 'eos')!);
  const chunk = int(v['loop-chunk'], 'loop-chunk');
  if (chunk !== undefined && !(chunk >= 1)) throw new UsageError(`--loop-chunk must be an integer >= 1, got '${v['loop-chunk']}'`);
  if (chunk !== undefined && v.loop !== 'graph') throw new UsageError('--loop-chunk needs --loop graph');
  const flags: SamplingFlags = {
    ...(eos ? { eos } : {}),
    ...opt('loopChunk', chunk),
    ...opt('temperature', num(v.temperature, 'temperature')),
    ...opt('topK', num(v['top-k'], 'top-k')),
    ...opt('topP', num(v['top-p'], 'top-p')),
    ...opt('seed', num(v.seed, 'seed')),
  };
  try {
    validateSampling(flags);
  } catch (e) {
    if (!(e instanceof ModelError)) throw e;
    throw new UsageError(e.message.replace(/^(\w+)/, (name) => SAMPLING_FLAGS[name] ?? name));
  }
  // Greedy decoding takes the most likely token whatever top-k and top-p keep: given without a temperature they
  // would change nothing without a word (HF warns that they are ignored when do_sample is off).
  if (!(flags.temperature !== undefined && flags.temperature > 0)) {
    for (const flag of ['top-k', 'top-p'] as const) {
      if (v[flag] !== undefined)
        throw new UsageError(
          `--${flag} has no effect without --temperature > 0 (greedy decoding): add --temperature, or leave --${flag} out`,
        );
    }
  }
  return flags;
}

type SamplingFlags = Omit<ModelGenerateOptions, 'maxNewTokens' | 'onToken' | 'signal' | 'loop'>;

/**
 * Where `vlmkit demo` finds its checkpoint and picture: the copy packed into the package (scripts/demo-files.mjs)
 * once installed, the repository's test-fixtures/ in a checkout.
 */
const SHIPPED_DEMO = fileURLToPath(new URL('../demo/', import.meta.url));
const DEMO_FILES = existsSync(SHIPPED_DEMO)
  ? { model: join(SHIPPED_DEMO, 'ernie-tiny'), image: join(SHIPPED_DEMO, 'photo.jpg') }
  : { model: join(FIXTURE_DIR, 'ernie-tiny'), image: join(FIXTURE_DIR, 'processors', 'images', 'photo.jpg') };

/** `vlmkit demo`: what `pnpm demo` runs (the README's first command), on the tiny ERNIE fixture. */
const DEMO = {
  model: DEMO_FILES.model,
  images: [DEMO_FILES.image],
  video: undefined,
  prompt: 'Describe this image.',
};

function oneOf<T extends string>(v: string, allowed: readonly T[], flag: string): T {
  if (!(allowed as readonly string[]).includes(v)) throw new UsageError(`--${flag} must be one of ${allowed.join(', ')}, got '${v}'`);
  return v as T;
}

/** --profile and the profile fields given as flags (--loop; --ops, `OPS_FIELDS`): the load option `profile`. */
function profileOption(v: { profile?: string; loop?: string; ops?: string }): LoadOptions['profile'] {
  const name = v.profile === undefined ? undefined : oneOf(v.profile, PROFILE_NAMES, 'profile');
  const fields: ProfileOverrides = {
    ...(v.loop === undefined ? {} : { loop: oneOf(v.loop, DECODE_LOOPS, 'loop') }),
    ...(v.ops === undefined ? {} : OPS_FIELDS[oneOf(v.ops, OP_SETS, 'ops')]),
  };
  if (Object.keys(fields).length === 0) return name;
  return name === undefined ? fields : { ...PROFILES[name], ...fields };
}

/**
 * A string option's value that begins with a dash (`--seed -5`, `--temperature -1`, `--prompt -`) is taken as
 * its value, as `--seed=-5` is, rather than refused as "ambiguous" by parseArgs; a value beginning with `--` is
 * still refused (a forgotten value followed by the next option), and the range checks then name the option.
 */
function dashValues(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const next = args[i + 1];
    const option = OPTIONS[a.slice(2) as keyof typeof OPTIONS] as { type: string } | undefined;
    if (a.startsWith('--') && option?.type === 'string' && next !== undefined && next.startsWith('-') && !next.startsWith('--')) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/** Runs the command line; returns the exit code (2 for usage errors, 130 when Ctrl-C ended it). */
export async function main(
  argv: readonly string[],
  out: Out = (s) => process.stdout.write(s),
  io: MainIo = { tty: process.stdout.isTTY === true, errTty: process.stderr.isTTY === true, err: (s) => process.stderr.write(s) },
): Promise<number> {
  const [command, ...rest] = argv;
  // Usage errors and problems go to stderr (io.err), never into the command's output.
  const err: Out = io.err ?? ((s) => process.stderr.write(s));
  // Ctrl-C while `run` or `preprocess` reads its prompt or media or loads: the command ends at once (a read
  // blocked on a FIFO or a terminal would otherwise hold it); while `run` streams, generation stops after
  // the current token and the summary is printed. A second Ctrl-C is Node's default: the process ends.
  const stop = new AbortController();
  const onSigint = () => stop.abort();
  const interruptible = command === 'run' || command === 'preprocess' || command === 'demo';
  if (interruptible) process.once('SIGINT', onSigint);
  try {
    if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
      const topic = rest[0];
      out(topic !== undefined && COMMANDS[topic] !== undefined ? commandUsage(topic) : USAGE);
      return 0;
    }
    const { values: v } = parseArgs({ args: dashValues(rest), options: OPTIONS, strict: true, allowPositionals: false });
    if (v.help) {
      if (COMMANDS[command] === undefined) throw new UsageError(`unknown command '${command}'`);
      out(commandUsage(command));
      return 0;
    }
    // An empty value ('--adapter ""', a variable that expanded to nothing) is never meant as "no option".
    for (const [flag, value] of Object.entries(v)) {
      if (value === '' || (Array.isArray(value) && value.includes(''))) {
        throw new UsageError(`--${flag} is empty: give it a value, or leave the option out`);
      }
    }
    const device = oneOf(v.device, ['auto', 'cpu', 'cuda'] as const, 'device');
    const reference = oneOf(v.reference, ['vllm', 'hf'] as const, 'reference');
    const quantize = v.quantize === undefined ? undefined : oneOf(v.quantize, QUANTIZE_MODES, 'quantize');
    const quantizeVision = v['quantize-vision'] === undefined ? undefined : oneOf(v['quantize-vision'], QUANTIZE_MODES, 'quantize-vision');
    const dtype = v.dtype === undefined ? undefined : oneOf(v.dtype, COMPUTE_DTYPES, 'dtype');
    const common = {
      device,
      reference,
      cacheDir: v['cache-dir'],
      adapter: v.adapter,
      quantize: quantizeVision === undefined ? quantize : { decoder: quantize, vision: quantizeVision },
      dtype,
      profile: profileOption(v),
    };
    const prompt = () => Promise.race([readPrompt(v, io.stdin ?? process.stdin), untilAborted(stop.signal, 'while reading the prompt')]);
    switch (command) {
      case 'export':
        await exportCommand(
          { model: need(v.model, 'model'), out: need(v.out, 'out'), adapter: v.adapter, reference, quantize, computeDtype: dtype },
          out,
        );
        return 0;
      case 'forward':
        await forwardCommand({ ...common, model: need(v.model, 'model'), inputs: need(v.inputs, 'inputs'), out: need(v.out, 'out') }, out);
        return 0;
      case 'run':
      case 'demo': {
        const generate = {
          maxNewTokens: maxNewTokens(v['max-new-tokens']) ?? (command === 'demo' ? 24 : 128),
          ...sampling(v),
        };
        const message =
          command === 'demo' ? DEMO : { model: need(v.model, 'model'), images: v.image ?? [], video: v.video, prompt: await prompt() };
        if (command === 'demo') out(`${DEMO.model}: a tiny ERNIE-4.5-VL with random weights (the answer is noise)\n`);
        await runCommand(
          {
            ...common,
            ...message,
            generate,
            json: v.json,
            tty: io.tty,
            err: io.err,
            errTty: io.errTty ?? io.tty,
            signal: stop.signal,
            outputClosed: io.outputClosed,
          },
          out,
        );
        return 0;
      }
      case 'preprocess': {
        const o = {
          model: need(v.model, 'model'),
          images: v.image ?? [],
          video: v.video,
          out: need(v.out, 'out'),
          promptFile: v['prompt-file'],
        };
        await Promise.race([
          (async () => preprocessCommand({ ...o, prompt: await prompt(), signal: stop.signal }, out))(),
          untilAborted(stop.signal, 'before the output was written'),
        ]);
        return 0;
      }
      case 'generate': {
        const maxNew = maxNewTokens(need(v['max-new-tokens'], 'max-new-tokens'))!;
        await generateCommand(
          {
            ...common,
            model: need(v.model, 'model'),
            inputs: need(v.inputs, 'inputs'),
            out: v.out,
            generate: {
              maxNewTokens: maxNew,
              ...sampling(v),
            },
          },
          out,
        );
        return 0;
      }
      case 'serve': {
        const count = (
          flag: 'port' | 'max-batch' | 'max-queue' | 'grace-seconds' | 'deadline-seconds',
          min: number,
          max = Number.MAX_SAFE_INTEGER,
        ) => {
          const n = int(v[flag], flag);
          if (n !== undefined && !(n >= min && n <= max))
            throw new UsageError(`--${flag} must be an integer in [${min}, ${max}], got '${v[flag]}'`);
          return n;
        };
        // SIGTERM (a service manager, Kubernetes) and Ctrl-C end the server gracefully; a second Ctrl-C is Node's default.
        const shutdown = new AbortController();
        const onSignal = () => shutdown.abort();
        process.once('SIGTERM', onSignal);
        process.once('SIGINT', onSignal);
        try {
          await serveCommand(
            {
              ...common,
              model: need(v.model, 'model'),
              host: v.host,
              port: count('port', 0, 65535)!,
              maxBatch: count('max-batch', 1),
              maxQueue: count('max-queue', 0),
              apiKey: v['api-key'],
              mediaDir: v['media-dir'],
              allowRemoteMedia: v['allow-remote-media'],
              graceSeconds: count('grace-seconds', 0),
              deadlineSeconds: count('deadline-seconds', 1),
              names: v['served-model-name'],
              stop: shutdown.signal,
            },
            out,
          );
        } finally {
          process.off('SIGTERM', onSignal);
          process.off('SIGINT', onSignal);
        }
        return 0;
      }
      case 'inspect':
        return await inspectCommand({ model: need(v.model, 'model'), adapter: v.adapter, json: v.json }, out, err);
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
    if (e instanceof Interrupted) {
      err(`vlmkit: ${e.message}\n`);
      return INTERRUPTED;
    }
    if (
      e instanceof UsageError ||
      (e as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ||
      (e as { code?: string }).code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' ||
      (e as { code?: string }).code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL'
    ) {
      err(`vlmkit: ${(e as Error).message}\n\n${USAGE}`);
      return 2;
    }
    throw e;
  } finally {
    if (interruptible) process.off('SIGINT', onSigint);
  }
}

/** The exit code of a command that Ctrl-C ended: 128 + SIGINT, as a shell reports it. */
export const INTERRUPTED = 130;
