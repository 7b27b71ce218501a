// The usage text: each command's entry, the common load options (from LOAD_OPTIONS), the notes. Family names,
// input names and forward outputs come from the registered families.
import {
  DECODE_LOOPS,
  FAMILIES,
  LOAD_OPTIONS,
  type LoadOptions,
  type ModelFamily,
  PROFILE_NAMES,
  supportedModelTypes,
} from '@vlmkit/models';
import { COMPUTE_DTYPES, OP_SETS, QUANTIZE_MODES } from '@vlmkit/onnx-graph';

/** The names `forward` writes for a family; an indexed family of outputs as `name_<k>`. */
function forwardOutputNames(f: ModelFamily): string {
  return Object.values(f.forwardOutputs)
    .map((o) => (typeof o === 'function' ? o(0).replace(/0$/, '<k>') : o))
    .join(', ');
}

function familyNames(has: (f: ModelFamily) => boolean): string {
  return FAMILIES.filter(has)
    .map((f) => f.name)
    .join(', ');
}

/** Each command's line in the usage text; `vlmkit <command> --help` prints its own with the common options. */
export const COMMANDS: Record<string, string> = {
  run: `run       --model DIR [--image PATH ...] [--video PATH] (--prompt TEXT | --prompt - | --prompt-file PATH)
            [--max-new-tokens N] [--json] [--temperature T [--top-k K] [--top-p P] [--seed S]] [--eos ID]
            one user message (the images, the video, then the prompt) through the model directory's processor
            (tokenizer.json, chat template, preprocessor_config.json); streams the answer as it is generated,
            then one summary line (prompt tokens, new tokens, time to first token, tokens/s, device). Progress
            bars while loading when stdout is a terminal; --json prints JSON lines (progress, text, summary).
            Greedy by default, at most 128 new tokens, stops at generation_config.json's eos. Ctrl-C while
            the answer streams stops it and prints the summary; before that it ends the command (exit 130)`,
  preprocess: `preprocess --model DIR [--image PATH ...] [--video PATH] (--prompt TEXT | --prompt - | --prompt-file PATH)
            --out OUT.safetensors
            what HF's processor returns for that message with the generation prompt, under HF's names:
            input_ids, attention_mask, pixel_values, image_grid_thw / image_sizes, pixel_values_videos,
            video_grid_thw, mm_token_type_ids, moe_mm_token_type_ids`,
  forward: `forward   --model DIR --inputs IN.safetensors --out OUT.safetensors
            run the model once; OUT gets its outputs under HF's names (float32 logits [B,S,V]; int64
            position_ids [3,B,S] for M-RoPE models), by family:
${FAMILIES.map((f) => `            ${f.name}: ${forwardOutputNames(f)}`).join('\n')}`,
  generate: `generate  --model DIR --inputs IN.safetensors --max-new-tokens N [--out OUT.safetensors]
            [--temperature T [--top-k K] [--top-p P] [--seed S]] [--eos ID]
            greedy by default; streams tokens; OUT gets int64 generated_ids [B,N] (new tokens only)`,
  export: `export    --model DIR --out DIR [--adapter DIR]
            the component graphs as plain ONNX files (vision_encoder.onnx, decoder.onnx, each with .onnx.data
            when large) and manifest.json (inputs, outputs, dtypes, dims, the KV cache, the host-side rules):
            runnable by onnxruntime in any language (tools/export/run-exported.mjs is a plain Node example).
            OUT is a directory of its own: not inside the model or adapter directory, nor holding them`,
  serve: `serve     --model DIR [--host 127.0.0.1] [--port 8000] [--max-batch N] [--max-queue N] [--api-key KEY]
            [--media-dir DIR] [--allow-remote-media] [--served-model-name NAME ...] [--deadline-seconds S]
            [--grace-seconds S]
            an OpenAI-compatible server (@vlmkit/server) on the model, loaded once: POST /v1/chat/completions
            (text, image_url and, for ERNIE, video_url parts; streaming), GET /v1/models, /health (503 until
            loaded), /metrics. Concurrent requests decode together in batches of up to --max-batch; up to
            --max-queue more wait (default 64), past that 429. --api-key (or VLMKIT_API_KEY): every route
            but /health needs Authorization: Bearer KEY. Images and videos come as data URLs, as paths
            under --media-dir, or as http(s) URLs with --allow-remote-media (never a private address).
            Requests name the model by --served-model-name (repeatable; default the model directory's name)
            and are cancelled after --deadline-seconds (default 600). SIGTERM or Ctrl-C: no new requests,
            the running ones get --grace-seconds (default 30), exit 0`,
  inspect: `inspect   --model DIR [--adapter DIR] [--json]
            checks a checkpoint directory without building graphs: config.json, the weight files' headers
            (model.safetensors, else the index's shards), the weight mapping (names, shapes, dtypes), the adapter;
            prints parameters by component and mapped / ignored / unused / missing tensors, and exits 1 naming the
            first problem (on stderr) when there is one`,
  demo: `demo      vlmkit run on the tiny ERNIE-4.5-VL fixture with a picture and a question (random weights: the answer is noise)`,
  'graph-demo': `graph-demo  build a small graph in TypeScript and run it`,
  help: `help [COMMAND]  this text, or one command's (as vlmkit COMMAND --help)`,
};

/** Each load option's flag and its values (model-load's `LOAD_OPTIONS`); onProgress is the CLI's progress bars. */
const LOAD_FLAGS: Readonly<Record<keyof LoadOptions, { flag: string; values: string } | undefined>> = {
  device: { flag: 'device', values: 'auto|cpu|cuda' },
  dtype: { flag: 'dtype', values: COMPUTE_DTYPES.join('|') },
  quantize: { flag: 'quantize', values: QUANTIZE_MODES.join('|') },
  profile: { flag: 'profile', values: PROFILE_NAMES.join('|') },
  cacheDir: { flag: 'cache-dir', values: 'DIR' },
  onProgress: undefined,
  adapter: { flag: 'adapter', values: 'DIR' },
  reference: { flag: 'reference', values: 'vllm|hf' },
};

/** One option's lines in the usage text: the flag in a column of 25, its text beside it (or below, when longer). */
function optionLine(flag: string, text: string): string {
  return flag.length <= 24 ? `  ${flag.padEnd(25)}${text}` : `  ${flag}\n${' '.repeat(27)}${text}`;
}

const COMMON = `common options:
${Object.entries(LOAD_FLAGS)
  .flatMap(([name, f]) => (f ? [optionLine(`--${f.flag} ${f.values}`, LOAD_OPTIONS[name as keyof LoadOptions])] : []))
  .join('\n')}
${optionLine(`--quantize-vision ${QUANTIZE_MODES.join('|')}`, "the vision encoder's weights quantized too (quantize: { decoder, vision })")}
  The profile (--profile, default the device's) decides the rest: KV cache layout, decode loop, decoder passes
  (ERNIE's experts among them), sessions (the models README, "Load options and profiles"). Two of its parts
  can be set for benchmarks:
${optionLine(`--loop ${DECODE_LOOPS.join('|')}`, 'profile loop: one session run per token, or an ONNX Loop (run, generate; same ids)')}
${optionLine(`--ops ${OP_SETS.join('|')}`, "the decoder's passes: the cpu profile's, or the cuda profile's com.microsoft fused kernels")}
generation options (run, generate):
${optionLine('--loop-chunk N', 'with --loop graph: tokens per session run after the first (default 16)')}
  --temperature T          sampling: T > 0 samples, 0 (default) is greedy; --top-k K, --top-p P and
                           --seed S (an integer in [0, 4294967295]) need T > 0. A negative value is refused by name
                           (--seed -5 and --seed=-5 both read as -5)
  --help, -h               the command's usage`;

const NOTES = `--prompt - reads the prompt from stdin, --prompt-file PATH from a regular file (at most 16 MiB, UTF-8, taken as
written). The whole command line is limited to 16 KiB (onnxruntime-node crashes on longer ones): a long prompt goes
through --prompt-file or stdin. A prompt longer than the model's max_position_embeddings is refused (PROMPT_TOO_LONG).

--out is refused (OUTPUT_WOULD_OVERWRITE_INPUT, OUTPUT_NOT_REGULAR_FILE) when it is, or is inside, anything the command
reads (the model directory, the inputs, the images, the video, the adapter, the graph cache), a hard link to one of
those files, a symbolic link, a directory or a special file (a device, a FIFO); it is written to a temporary file
beside it, then renamed over it. --image, --video and --inputs must be regular files.

--video PATH: a video file, decoded as HF's PyAV backend does by the optional dependency node-av (FFmpeg, prebuilt;
'npm install node-av'), or already decoded frames: a .safetensors with 'frames' uint8 [N, H, W, 3] and the frame rate
as metadata 'fps' (as test-fixtures/processors/video/frames.safetensors). Frames are sampled as the model's video
processor samples them (video_preprocessor_config.json). Models that take videos: ${familyNames((f) => f.supports.video)}.

The model type comes from config.json (supported: ${supportedModelTypes().join(', ')}). IN holds the HF forward kwargs
by their HF names:
${FAMILIES.map((f) => `  ${f.name}: ${f.inputNames.join(', ')}`).join('\n')}
`;

export const USAGE = `usage: vlmkit <command> [options]

commands:
${Object.values(COMMANDS)
  .map((c) => `  ${c}\n`)
  .join('')}
${COMMON}

${NOTES}`;

/** `vlmkit <command> --help`: the command's entry (without the list's column padding), the common options, the notes. */
export function commandUsage(command: string): string {
  return `usage: vlmkit ${COMMANDS[command]!.replace(/^(\S+) +/, '$1 ')}\n\n${COMMON}\n\n${NOTES}`;
}
