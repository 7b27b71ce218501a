// The hostile cases. Each case: { id, cls, model ('ernie' | 'granite' | undefined: a fresh copy of
// that tiny model in the case's folder), overlay (files of that copy replaced or removed), expect
// ('hf': HF's recorded verdict decides; 'ok': must work; 'error': must be refused with a message;
// 'any': either, as long as nothing crashes, hangs or loses data; 'warn-or-error': exit 0 only with a
// warning naming the option), and setup(c) -> { argv, watch, stdin, env, closeStdoutAfter, check }
// run in the case's folder. `c` holds the case's folder (c.dir), its model copy (c.model), the
// shared inputs (c.ctx) and helpers to make special files there.
import { execFileSync } from 'node:child_process';
import { lstat, mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { serializeSafetensors } from './lib.mjs';

const MODELS = ['ernie', 'granite'];

/** The CLI commands with a valid base command line; `c` gives paths. */
function base(cmd, c, model = c.model) {
  switch (cmd) {
    case 'run':
      return ['run', '--model', model, '--prompt', 'Hello!', '--max-new-tokens', '2', '--cache-dir', c.ctx.cache];
    case 'preprocess':
      return ['preprocess', '--model', model, '--prompt', 'Hello!', '--out', join(c.dir, 'out.safetensors')];
    case 'forward':
      return ['forward', '--model', model, '--inputs', c.inputs, '--out', join(c.dir, 'out.safetensors'), '--cache-dir', c.ctx.cache];
    case 'generate':
      return ['generate', '--model', model, '--inputs', c.inputs, '--max-new-tokens', '2', '--cache-dir', c.ctx.cache];
    case 'export':
      return ['export', '--model', model, '--out', join(c.dir, 'export'), '--cache-dir', c.ctx.cache];
    case 'inspect':
      return ['inspect', '--model', model];
    default:
      throw new Error(cmd);
  }
}

const COMMANDS = ['run', 'preprocess', 'forward', 'generate', 'export', 'inspect'];

/** Replaces the value after `flag` in argv (or appends flag and value). */
function withOption(argv, flag, value) {
  const out = [...argv];
  const i = out.indexOf(flag);
  if (i >= 0) out.splice(i, 2, `${flag}=${value}`);
  else out.push(`${flag}=${value}`);
  return out;
}

function without(argv, flag) {
  const out = [...argv];
  const i = out.indexOf(flag);
  if (i >= 0) out.splice(i, 2);
  return out;
}

// ---------------------------------------------------------------------------------------------
// options
// ---------------------------------------------------------------------------------------------

/** [flag, commands it applies to, [value, expect]...] */
const OPTION_VALUES = [
  [
    '--max-new-tokens',
    ['run', 'generate'],
    [
      ['', 'error'],
      ['-1', 'error'],
      ['0', 'any'],
      ['1.5', 'error'],
      ['abc', 'error'],
      ['1e3', 'any'],
      ['99999999999999999999', 'any'],
      ['0x10', 'any'],
      [' 3', 'any'],
      ['NaN', 'error'],
      ['Infinity', 'error'],
      ['1', 'ok'],
    ],
  ],
  [
    '--temperature',
    ['run', 'generate'],
    [
      ['', 'error'],
      ['-1', 'error'],
      ['0', 'ok'],
      ['abc', 'error'],
      ['NaN', 'error'],
      ['Infinity', 'error'],
      ['1e308', 'any'],
      ['1e-30', 'any'],
      ['1', 'ok'],
      ['-0', 'any'],
    ],
  ],
  [
    '--top-k',
    ['run', 'generate'],
    [
      ['', 'error'],
      ['-1', 'error'],
      ['0', 'any'],
      ['1.5', 'error'],
      ['abc', 'error'],
      ['1e9', 'any'],
      ['1', 'ok'],
    ],
  ],
  [
    '--top-p',
    ['run', 'generate'],
    [
      ['', 'error'],
      ['-0.1', 'error'],
      ['0', 'any'],
      ['1.5', 'error'],
      ['abc', 'error'],
      ['NaN', 'error'],
      ['1', 'ok'],
      ['0.5', 'ok'],
    ],
  ],
  [
    '--seed',
    ['run', 'generate'],
    [
      ['', 'error'],
      ['-1', 'any'],
      ['abc', 'error'],
      ['1.5', 'error'],
      ['4294967297', 'any'],
      ['9007199254740993', 'any'],
      ['0', 'ok'],
      ['1e400', 'error'],
    ],
  ],
  [
    '--eos',
    ['run', 'generate'],
    [
      ['', 'error'],
      ['-1', 'any'],
      ['abc', 'error'],
      ['999999', 'any'],
      ['0', 'ok'],
      ['1.5', 'error'],
    ],
  ],
  [
    '--device',
    ['run', 'forward', 'generate', 'export'],
    [
      ['', 'error'],
      ['gpu', 'error'],
      ['CPU', 'any'],
      ['cpu', 'ok'],
      ['auto', 'ok'],
      ['cuda', 'any'],
      ['cuda:0', 'any'],
    ],
  ],
  [
    '--reference',
    ['run', 'preprocess', 'forward', 'generate'],
    [
      ['', 'error'],
      ['foo', 'error'],
      ['hf', 'ok'],
      ['vllm', 'ok'],
    ],
  ],
  [
    '--quantize',
    ['run', 'forward', 'generate', 'export'],
    [
      ['', 'error'],
      ['int3', 'error'],
      ['int8', 'ok'],
      ['INT8', 'any'],
      ['int4', 'ok'],
    ],
  ],
  [
    '--quantize-vision',
    ['run', 'forward', 'generate'],
    [
      ['', 'error'],
      ['int3', 'error'],
      ['int4', 'ok'],
    ],
  ],
  [
    '--ops',
    ['run', 'forward', 'generate'],
    [
      ['', 'error'],
      ['foo', 'error'],
      ['contrib', 'ok'],
      ['onnx', 'ok'],
    ],
  ],
  [
    '--loop',
    ['run', 'generate'],
    [
      ['', 'error'],
      ['foo', 'error'],
      ['graph', 'ok'],
      ['host', 'ok'],
    ],
  ],
  [
    '--dtype',
    ['run', 'forward', 'generate', 'export'],
    [
      ['', 'error'],
      ['float64', 'error'],
      ['int8', 'error'],
      ['float16', 'any'],
      ['bfloat16', 'any'],
      ['float32', 'ok'],
    ],
  ],
  ['--cache-dir', ['run', 'forward', 'generate'], [['', 'any']]],
  [
    '--adapter',
    ['run', 'forward', 'generate', 'export', 'inspect'],
    [
      ['', 'error'],
      ['/nonexistent/adapter', 'error'],
    ],
  ],
  [
    '--model',
    COMMANDS,
    [
      ['', 'error'],
      ['/nonexistent/model', 'error'],
      ['/', 'error'],
      ['/etc/passwd', 'error'],
    ],
  ],
  [
    '--inputs',
    ['forward', 'generate'],
    [
      ['', 'error'],
      ['/nonexistent.safetensors', 'error'],
      ['/etc/passwd', 'error'],
    ],
  ],
];

function optionCases() {
  const cases = [];
  for (const [flag, cmds, values] of OPTION_VALUES) {
    for (const cmd of cmds) {
      for (const [value, expect] of values) {
        // Value parsing does not depend on the model: ERNIE only, Granite for its adapter.
        for (const model of [flag === '--adapter' ? 'granite' : 'ernie']) {
          cases.push({
            id: `options/${model}/${cmd} ${flag}=${JSON.stringify(value)}`,
            cls: 'options',
            model,
            expect,
            setup: (c) => {
              let argv = base(cmd, c);
              if (flag === '--loop-chunk') argv.push('--loop', 'graph');
              if ((flag === '--top-k' || flag === '--top-p') && value !== '') argv.push('--temperature', '1');
              argv = withOption(argv, flag, value);
              return { argv };
            },
          });
        }
      }
    }
  }
  // --loop-chunk only with --loop graph
  for (const [value, expect] of [
    ['', 'error'],
    ['0', 'error'],
    ['-1', 'error'],
    ['abc', 'error'],
    ['1.5', 'error'],
    ['1e9', 'any'],
    ['1', 'ok'],
  ]) {
    for (const cmd of ['run', 'generate']) {
      cases.push({
        id: `options/ernie/${cmd} --loop graph --loop-chunk=${JSON.stringify(value)}`,
        cls: 'options',
        model: 'ernie',
        expect,
        setup: (c) => ({ argv: [...base(cmd, c), '--loop', 'graph', `--loop-chunk=${value}`] }),
      });
    }
  }
  // help, unknown flags, missing values, positional garbage, duplicates
  for (const cmd of COMMANDS) {
    for (const help of ['--help', '-h']) {
      cases.push({ id: `options/${cmd} ${help}`, cls: 'options', expect: 'ok', setup: () => ({ argv: [cmd, help] }) });
    }
    cases.push({ id: `options/help ${cmd}`, cls: 'options', expect: 'ok', setup: () => ({ argv: ['help', cmd] }) });
    cases.push({ id: `options/${cmd} (no options)`, cls: 'options', expect: 'error', setup: () => ({ argv: [cmd] }) });
    for (const model of MODELS) {
      cases.push({
        id: `options/${model}/${cmd} --bogus`,
        cls: 'options',
        model,
        expect: 'error',
        setup: (c) => ({ argv: [...base(cmd, c), '--bogus'] }),
      });
      cases.push({
        id: `options/${model}/${cmd} --model (value missing, last)`,
        cls: 'options',
        model,
        expect: 'error',
        setup: (c) => ({ argv: [...without(base(cmd, c), '--model'), '--model'] }),
      });
      cases.push({
        id: `options/${model}/${cmd} positional garbage`,
        cls: 'options',
        model,
        expect: 'error',
        setup: (c) => ({ argv: [...base(cmd, c), 'garbage'] }),
      });
      cases.push({
        id: `options/${model}/${cmd} --model twice`,
        cls: 'options',
        model,
        expect: 'any',
        setup: (c) => ({ argv: [...base(cmd, c), '--model', c.model] }),
      });
      cases.push({
        id: `options/${model}/${cmd} --model with trailing slash`,
        cls: 'options',
        model,
        expect: 'ok',
        setup: (c) => ({ argv: withOption(base(cmd, c), '--model', `${c.model}/`) }),
      });
    }
  }
  for (const argv of [[], ['--help'], ['-h'], ['help'], ['bogus-command'], ['--version'], ['RUN'], ['run', '--', '--help'], ['']]) {
    // `run -- --help`: after `--` the flag is an argument; refusing it is as right as printing help.
    const expect = ['bogus-command', 'RUN', '', '--version', 'run'].includes(argv[0] ?? '') ? 'any' : 'ok';
    cases.push({ id: `options/global ${JSON.stringify(argv)}`, cls: 'options', expect, setup: () => ({ argv }) });
  }
  // `--top-k` without `--temperature`: HF warns (do_sample is False); silently greedy is a difference.
  // A seed without sampling changes nothing and HF says nothing either: either outcome.
  for (const model of MODELS) {
    for (const [flag, value] of [
      ['--top-k', '5'],
      ['--top-p', '0.5'],
      ['--seed', '7'],
    ]) {
      cases.push({
        id: `options/${model}/run ${flag} ${value} without --temperature`,
        cls: 'options',
        model,
        expect: flag === '--seed' ? 'any' : 'warn-or-error',
        warnPattern: new RegExp(`${flag.slice(2)}|${flag.slice(2).replace('-', '_')}|temperature|greedy`, 'i'),
        setup: (c) => ({ argv: [...base('run', c), flag, value] }),
      });
    }
    // Seeds that differ must not give the same stream (2^32 + 1 and 1 collided at the baseline).
    cases.push({
      id: `options/${model}/run --seed 1 vs --seed 4294967297`,
      cls: 'options',
      model,
      expect: 'any',
      pair: (c) => {
        const argv = [...withOption(base('run', c), '--max-new-tokens', '16'), '--temperature', '1.5'];
        return [
          [...argv, '--seed', '1'],
          [...argv, '--seed', '4294967297'],
        ];
      },
      samePairIs: 'silent difference',
    });
    cases.push({
      id: `options/${model}/run --seed 5 twice (same stream)`,
      cls: 'options',
      model,
      expect: 'ok',
      pair: (c) => {
        const argv = [...withOption(base('run', c), '--max-new-tokens', '16'), '--temperature', '1.5', '--seed', '5'];
        return [argv, argv];
      },
      differentPairIs: 'silent difference',
    });
    // options given to a command that does not take them
    for (const [cmd, extra] of [
      ['inspect', ['--prompt', 'x']],
      ['preprocess', ['--max-new-tokens', '3']],
      ['export', ['--image', 'x.png']],
      ['forward', ['--temperature', '1']],
      ['preprocess', ['--quantize', 'int8']],
      ['inspect', ['--out', 'x']],
    ]) {
      cases.push({
        id: `options/${model}/${cmd} ${extra.join(' ')} (not its option)`,
        cls: 'options',
        model,
        expect: 'any',
        setup: (c) => ({ argv: [...base(cmd, c), ...extra] }),
      });
    }
    cases.push({
      id: `options/${model}/run --json`,
      cls: 'options',
      model,
      expect: 'ok',
      setup: (c) => ({ argv: [...base('run', c), '--json'] }),
      check: (r) => {
        const bad = r.stdout
          .split('\n')
          .filter((l) => l.trim() !== '')
          .find((l) => {
            try {
              JSON.parse(l);
              return false;
            } catch {
              return true;
            }
          });
        return bad === undefined ? null : `--json printed a line that is not JSON: ${bad.slice(0, 80)}`;
      },
    });
    cases.push({
      id: `options/${model}/inspect --json`,
      cls: 'options',
      model,
      expect: 'ok',
      setup: (c) => ({ argv: [...base('inspect', c), '--json'] }),
    });
    cases.push({
      id: `options/${model}/run --prompt missing`,
      cls: 'options',
      model,
      expect: 'error',
      setup: (c) => ({ argv: without(base('run', c), '--prompt') }),
    });
    cases.push({
      id: `options/${model}/run --max-new-tokens 64 (long generation)`,
      cls: 'options',
      model,
      expect: 'ok',
      setup: (c) => ({ argv: withOption(base('run', c), '--max-new-tokens', '64') }),
    });
    cases.push({
      id: `options/${model}/run --max-new-tokens 100000 (past the context)`,
      cls: 'options',
      model,
      expect: 'any',
      setup: (c) => ({ argv: [...withOption(base('run', c), '--max-new-tokens', '100000'), '--eos', '-1'] }),
    });
  }
  // Model and adapter mismatches
  cases.push({
    id: 'options/ernie/run --adapter granite-lora (wrong model)',
    cls: 'options',
    model: 'ernie',
    expect: 'error',
    setup: (c) => ({ argv: [...base('run', c), '--adapter', c.ctx.src.lora] }),
  });
  cases.push({
    id: 'options/granite/run --adapter granite-lora',
    cls: 'options',
    model: 'granite',
    expect: 'ok',
    setup: (c) => ({ argv: [...base('run', c), '--adapter', c.adapter], watch: [c.adapter] }),
    adapter: true,
  });
  cases.push({
    id: 'options/granite/run --adapter (the model dir)',
    cls: 'options',
    model: 'granite',
    expect: 'error',
    setup: (c) => ({ argv: [...base('run', c), '--adapter', c.model] }),
  });
  cases.push({
    id: 'options/granite/run --adapter (a file)',
    cls: 'options',
    model: 'granite',
    expect: 'error',
    setup: (c) => ({ argv: [...base('run', c), '--adapter', join(c.model, 'config.json')] }),
  });
  return cases;
}

// ---------------------------------------------------------------------------------------------
// forward / generate inputs (hand-made .safetensors)
// ---------------------------------------------------------------------------------------------

function inputsCases() {
  const ids = (n, v = 5) => Array.from({ length: n }, (_, i) => (i * 7 + v) % 200);
  const variants = {
    'text-only': {
      input_ids: { dtype: 'I64', shape: [1, 6], data: ids(6) },
      attention_mask: { dtype: 'I64', shape: [1, 6], data: Array(6).fill(1) },
    },
    'no-attention-mask': { input_ids: { dtype: 'I64', shape: [1, 6], data: ids(6) } },
    'ids-out-of-vocab': {
      input_ids: { dtype: 'I64', shape: [1, 3], data: [1, 999999, 2] },
      attention_mask: { dtype: 'I64', shape: [1, 3], data: [1, 1, 1] },
    },
    'ids-negative': {
      input_ids: { dtype: 'I64', shape: [1, 3], data: [1, -5, 2] },
      attention_mask: { dtype: 'I64', shape: [1, 3], data: [1, 1, 1] },
    },
    'ids-empty': { input_ids: { dtype: 'I64', shape: [1, 0], data: [] }, attention_mask: { dtype: 'I64', shape: [1, 0], data: [] } },
    'ids-float': { input_ids: { dtype: 'F32', shape: [1, 3], data: [1, 2, 3] } },
    'ids-1d': { input_ids: { dtype: 'I64', shape: [3], data: [1, 2, 3] } },
    'ids-3d': { input_ids: { dtype: 'I64', shape: [1, 1, 3], data: [1, 2, 3] } },
    'ids-long-8192': {
      input_ids: { dtype: 'I64', shape: [1, 8192], data: ids(8192) },
      attention_mask: { dtype: 'I64', shape: [1, 8192], data: Array(8192).fill(1) },
    },
    'mask-shape-mismatch': {
      input_ids: { dtype: 'I64', shape: [1, 6], data: ids(6) },
      attention_mask: { dtype: 'I64', shape: [1, 4], data: Array(4).fill(1) },
    },
    'mask-all-zero': {
      input_ids: { dtype: 'I64', shape: [1, 6], data: ids(6) },
      attention_mask: { dtype: 'I64', shape: [1, 6], data: Array(6).fill(0) },
    },
    'batch-3': {
      input_ids: { dtype: 'I64', shape: [3, 4], data: ids(12) },
      attention_mask: { dtype: 'I64', shape: [3, 4], data: Array(12).fill(1) },
    },
    'image-token-without-pixels-ernie': { input_ids: { dtype: 'I64', shape: [1, 4], data: [1, 250, 250, 2] } },
    'image-token-without-pixels-granite': { input_ids: { dtype: 'I64', shape: [1, 4], data: [1, 255, 255, 2] } },
    'pixels-wrong-shape': {
      input_ids: { dtype: 'I64', shape: [1, 4], data: [1, 2, 3, 4] },
      pixel_values: { dtype: 'F32', shape: [2, 7], data: Array(14).fill(0.5) },
    },
    'grid-thw-lies': {
      input_ids: { dtype: 'I64', shape: [1, 4], data: [1, 2, 3, 4] },
      pixel_values: { dtype: 'F32', shape: [4, 588], data: Array(4 * 588).fill(0.1) },
      image_grid_thw: { dtype: 'I64', shape: [1, 3], data: [1, 100, 100] },
    },
    'image-sizes-huge': {
      input_ids: { dtype: 'I64', shape: [1, 4], data: [1, 2, 3, 4] },
      pixel_values: { dtype: 'F32', shape: [1, 1, 3, 64, 64], data: Array(3 * 64 * 64).fill(0.1) },
      image_sizes: { dtype: 'I64', shape: [1, 2], data: [100000, 100000] },
    },
    'pixels-nan': {
      input_ids: { dtype: 'I64', shape: [1, 4], data: [1, 2, 3, 4] },
      pixel_values: { dtype: 'F32', shape: [4, 588], data: Array(4 * 588).fill(Number.NaN) },
      image_grid_thw: { dtype: 'I64', shape: [1, 3], data: [1, 2, 2] },
    },
    'empty-file-no-tensors': {},
    'unknown-tensor': { input_ids: { dtype: 'I64', shape: [1, 3], data: [1, 2, 3] }, bogus: { dtype: 'F32', shape: [1], data: [1] } },
  };
  const cases = [];
  for (const [name, tensors] of Object.entries(variants)) {
    for (const model of MODELS) {
      if (name.endsWith('-ernie') && model !== 'ernie') continue;
      if (name.endsWith('-granite') && model !== 'granite') continue;
      for (const cmd of ['forward', 'generate']) {
        const ok = name === 'text-only' || name === 'no-attention-mask' || name === 'unknown-tensor';
        cases.push({
          id: `options/${model}/${cmd} --inputs ${name}`,
          cls: 'options',
          model,
          expect: ok ? 'any' : name === 'batch-3' || name === 'ids-long-8192' || name === 'mask-all-zero' ? 'any' : 'error',
          setup: async (c) => {
            const p = join(c.dir, `${name}.safetensors`);
            await writeFile(p, serializeSafetensors(tensors));
            return { argv: withOption(base(cmd, c), '--inputs', p), watch: [p] };
          },
        });
      }
    }
  }
  for (const [from, to] of [
    ['ernie', 'granite'],
    ['granite', 'ernie'],
  ]) {
    for (const cmd of ['forward', 'generate']) {
      cases.push({
        id: `options/${to}/${cmd} --inputs made for ${from}`,
        cls: 'options',
        model: to,
        expect: 'error',
        setup: (c) => ({ argv: withOption(base(cmd, c), '--inputs', c.ctx.inputs[from]) }),
      });
    }
  }
  for (const model of MODELS) {
    for (const cmd of ['forward', 'generate']) {
      cases.push({
        id: `options/${model}/${cmd} --inputs from preprocess (image)`,
        cls: 'options',
        model,
        expect: 'ok',
        setup: (c) => ({ argv: base(cmd, c) }),
      });
    }
  }
  return cases;
}

// ---------------------------------------------------------------------------------------------
// CLI outputs
// ---------------------------------------------------------------------------------------------

const MODEL_FILES = [
  'model.safetensors',
  'tokenizer.json',
  'config.json',
  'chat_template.jinja',
  'preprocessor_config.json',
  'tokenizer_config.json',
];

function outputCases() {
  const cases = [];
  const writers = ['preprocess', 'forward', 'generate'];
  const outArgv = (cmd, c, target) => {
    const argv = cmd === 'preprocess' ? [...base(cmd, c), '--image', c.image] : base(cmd, c);
    if (cmd === 'generate') return [...argv, '--out', target];
    return withOption(argv, '--out', target);
  };
  const targets = [
    ...MODEL_FILES.map((f) => [`model file ${f}`, 'error', (c) => join(c.model, f)]),
    ['the model dir', 'error', (c) => c.model],
    ['a new file in the model dir', 'any', (c) => join(c.model, 'new-output.safetensors')],
    ['the --inputs file', 'error', (c) => c.inputs, ['forward', 'generate']],
    ['the --image file', 'error', (c) => c.image, ['preprocess']],
    ['symlink to model.safetensors', 'error', async (c) => c.link('link.safetensors', join(c.model, 'model.safetensors'))],
    ['symlink to tokenizer.json', 'error', async (c) => c.link('link.json', join(c.model, 'tokenizer.json'))],
    ['symlink to the model dir', 'error', async (c) => c.link('linkdir', c.model)],
    ['hard link of model.safetensors', 'any', async (c) => c.hardlink('hard.safetensors', join(c.model, 'model.safetensors'))],
    ['an empty directory', 'error', async (c) => c.mkdir('emptydir')],
    ['a FIFO', 'error', async (c) => c.fifo('out.fifo')],
    ['a char device (null)', 'error', async (c) => c.mknod('null', 1, 3)],
    ['a char device (full)', 'error', async (c) => c.mknod('full', 1, 7)],
    ['symlink to a char device (null)', 'error', async (c) => c.link('to-null', await c.mknod('null2', 1, 3))],
    ['symlink to a char device (full)', 'error', async (c) => c.link('to-full', await c.mknod('full2', 1, 7))],
    ['a dangling symlink', 'any', async (c) => c.link('dangling', join(c.dir, 'nowhere', 'x'))],
    ['a dangling symlink into the model dir', 'any', async (c) => c.link('dangling-model', join(c.model, 'not-yet.safetensors'))],
    [
      'a symlink loop',
      'error',
      async (c) => {
        await c.link('loop-a', join(c.dir, 'loop-b'));
        return c.link('loop-b', join(c.dir, 'loop-a'));
      },
    ],
    ['a path under a missing dir', 'error', (c) => join(c.dir, 'missing', 'dir', 'out.safetensors')],
    ['a path under a file', 'error', (c) => join(c.model, 'config.json', 'out.safetensors')],
    ['an empty string', 'error', () => '', ['preprocess', 'forward']],
    ['an empty string (generate: no output file)', 'any', () => '', ['generate']],
    ['a trailing slash', 'any', (c) => `${join(c.dir, 'new')}/`],
    ['a 300-char name', 'error', (c) => join(c.dir, `${'x'.repeat(300)}.safetensors`)],
    ['a name with a newline', 'any', (c) => join(c.dir, 'a\nb.safetensors')],
    [
      'an existing output (overwrite)',
      'ok',
      async (c) => {
        const p = join(c.dir, 'previous.safetensors');
        await writeFile(p, 'previous output');
        return p;
      },
    ],
    ['/proc/self/fd/1', 'any', () => '/proc/self/fd/1'],
    ['relative path', 'ok', () => 'relative.safetensors'],
  ];
  for (const [name, expect, target, only] of targets) {
    for (const cmd of only ?? writers) {
      for (const model of MODELS) {
        cases.push({
          id: `outputs/${model}/${cmd} --out ${name}`,
          cls: 'outputs',
          model,
          expect,
          setup: async (c) => {
            const t = await target(c);
            return { argv: outArgv(cmd, c, t), watch: [...(await c.specialTarget(t)), c.inputs, c.image] };
          },
        });
      }
    }
  }
  // export writes a folder
  const exportTargets = [
    ['the model dir', 'error', (c) => c.model],
    [
      'a regular file',
      'error',
      async (c) => {
        const p = join(c.dir, 'file');
        await writeFile(p, 'user data');
        return p;
      },
    ],
    [
      'a dir holding user files',
      'any',
      async (c) => {
        const d = join(c.dir, 'userdir');
        await mkdir(d);
        await writeFile(join(d, 'notes.txt'), 'keep me');
        await writeFile(join(d, 'decoder.onnx'), 'a user file named like an export');
        return d;
      },
    ],
    ['a FIFO', 'error', (c) => c.fifo('export.fifo')],
    ['a char device (null)', 'error', (c) => c.mknod('null', 1, 3)],
    ['symlink to the model dir', 'error', (c) => c.link('to-model', c.model)],
    ['a new nested dir', 'any', (c) => join(c.dir, 'a', 'b', 'c')],
    ['an empty string', 'error', () => ''],
  ];
  for (const [name, expect, target] of exportTargets) {
    for (const model of MODELS) {
      cases.push({
        id: `outputs/${model}/export --out ${name}`,
        cls: 'outputs',
        model,
        expect,
        setup: async (c) => {
          const t = await target(c);
          // A user's file beside the export must survive; one named like an output may be replaced.
          const watch = name.includes('user files') ? [join(t, 'notes.txt')] : [];
          return { argv: withOption(base('export', c), '--out', t), watch: [...(await c.specialTarget(t)), ...watch] };
        },
      });
    }
  }
  // Adapter files as outputs
  for (const cmd of ['forward', 'generate']) {
    cases.push({
      id: `outputs/granite/${cmd} --adapter --out adapter_model.safetensors`,
      cls: 'outputs',
      model: 'granite',
      adapter: true,
      expect: 'error',
      setup: (c) => ({
        argv: [...outArgv(cmd, c, join(c.adapter, 'adapter_model.safetensors')), '--adapter', c.adapter],
        watch: [c.adapter],
      }),
    });
  }
  // stdout closed early (`| head -c 20`), and a reader gone before the first byte
  for (const model of MODELS) {
    for (const [name, extra, after] of [
      ['run | head -c 20', [], 20],
      ['run --json | head -c 20', ['--json'], 20],
      ['run | head -c 1', [], 1],
      ['run --max-new-tokens 64 | head -c 5', ['--max-new-tokens', '64'], 5],
      ['generate | head -c 10', null, 10],
      ['inspect | head -c 10', null, 10],
    ]) {
      cases.push({
        id: `outputs/${model}/${name}`,
        cls: 'outputs',
        model,
        expect: 'any',
        setup: (c) => {
          const argv = extra === null ? base(name.split(' ')[0], c) : [...base('run', c), ...extra];
          return { argv, closeStdoutAfter: after };
        },
      });
    }
  }
  return cases;
}

// ---------------------------------------------------------------------------------------------
// cache
// ---------------------------------------------------------------------------------------------

function cacheCases() {
  const cases = [];
  const runArgv = (c, model, cache) => base('run', c, model).map((a) => (a === c.ctx.cache ? cache : a));
  // concurrent builds into one fresh cache
  const rounds = [
    ['2 ERNIE + 2 Granite', ['ernie', 'granite', 'ernie', 'granite'], 6],
    ['4 x ERNIE', ['ernie', 'ernie', 'ernie', 'ernie'], 3],
    ['4 x Granite', ['granite', 'granite', 'granite', 'granite'], 2],
    ['6 mixed', ['ernie', 'granite', 'granite', 'ernie', 'granite', 'ernie'], 2],
  ];
  for (const [name, models, n] of rounds) {
    for (let r = 0; r < n; r++) {
      cases.push({
        id: `cache/concurrent ${name} into a fresh cache #${r + 1}`,
        cls: 'cache',
        models: ['ernie', 'granite'],
        expect: 'ok',
        many: (c) => models.map((m) => runArgv(c, c.models[m], join(c.dir, 'cache'))),
      });
    }
  }
  // export concurrently with runs
  cases.push({
    id: 'cache/concurrent export + run + forward into a fresh cache',
    cls: 'cache',
    models: ['ernie', 'granite'],
    expect: 'ok',
    many: (c) => [
      base('export', c, c.models.ernie).map((a) => (a === c.ctx.cache ? join(c.dir, 'cache') : a)),
      runArgv(c, c.models.ernie, join(c.dir, 'cache')),
      runArgv(c, c.models.granite, join(c.dir, 'cache')),
    ],
  });
  // a cache that was built, then damaged
  const damage = [
    ['every file truncated to 0', 'truncate'],
    ['every file filled with random bytes', 'random'],
    ['every file deleted', 'delete'],
    ['every file cut in half', 'half'],
    ['one byte flipped in every file', 'flip'],
    ['every file replaced by a directory', 'dir'],
    ['every file replaced by a FIFO', 'fifo'],
    ['every file replaced by a symlink to /dev/zero', 'zero'],
  ];
  for (const model of MODELS) {
    for (const [name, how] of damage) {
      cases.push({
        id: `cache/${model}/built, then ${name}, run again`,
        cls: 'cache',
        model,
        expect: 'ok',
        prebuild: true,
        damage: how,
        setup: (c) => ({ argv: runArgv(c, c.model, join(c.dir, 'cache')) }),
      });
    }
    // Nothing in the cache may alias a model file: after a build, write into every cache file and
    // check the model copy (the runner's snapshot) and that no cache file shares a model file's inode.
    cases.push({
      id: `cache/${model}/built, then every cache file overwritten in place (alias check)`,
      cls: 'cache',
      model,
      expect: 'ok',
      setup: (c) => ({ argv: runArgv(c, c.model, join(c.dir, 'cache')) }),
      afterAll: 'overwrite-cache-in-place',
    });
    const dirs = [
      [
        'a regular file',
        'error',
        async (c) => {
          const p = join(c.dir, 'cachefile');
          await writeFile(p, 'not a dir');
          return p;
        },
      ],
      ['a FIFO', 'error', (c) => c.fifo('cache.fifo')],
      ['/proc/self', 'error', () => '/proc/self'],
      ['/proc/self/fd', 'error', () => '/proc/self/fd'],
      ['a char device (null)', 'error', (c) => c.mknod('null', 1, 3)],
      [
        'a symlink loop',
        'error',
        async (c) => {
          await c.link('cl-a', join(c.dir, 'cl-b'));
          return c.link('cl-b', join(c.dir, 'cl-a'));
        },
      ],
      ['the model dir', 'any', (c) => c.model],
      ['a symlink to the model dir', 'any', (c) => c.link('cache-link', c.model)],
      [
        'a read-only dir (root ignores the mode)',
        'any',
        async (c) => {
          const d = await c.mkdir('ro');
          execFileSync('chmod', ['555', d]);
          return d;
        },
      ],
      ['a new nested dir', 'ok', (c) => join(c.dir, 'x', 'y', 'z')],
      ['a dir with spaces and unicode', 'ok', (c) => join(c.dir, 'cache dir \u00e9\u4e2d')],
      ['a relative path', 'ok', () => 'relcache'],
      [
        'a dir holding stale temp files',
        'ok',
        async (c) => {
          const d = await c.mkdir('stale');
          await writeFile(join(d, 'vlmkit-blob-0000.safetensors.tmp'), 'junk');
          await writeFile(join(d, 'something.onnx.tmp'), 'junk');
          return d;
        },
      ],
      ['/dev/shm/<new>', 'ok', (c) => join('/dev/shm', `vlmkit-hostile-${c.n}`)],
    ];
    for (const [name, expect, dir] of dirs) {
      cases.push({
        id: `cache/${model}/--cache-dir ${name}`,
        cls: 'cache',
        model,
        expect,
        setup: async (c) => {
          const d = await dir(c);
          // What a cache folder holds is disposable; a file or special file given as one is not.
          const isDir = await lstat(d).then(
            (st) => st.isDirectory(),
            () => false,
          );
          return { argv: runArgv(c, c.model, d), watch: isDir ? [] : [d] };
        },
        cleanup: name.startsWith('/dev/shm') ? (c) => join('/dev/shm', `vlmkit-hostile-${c.n}`) : undefined,
      });
    }
    for (const [name, env, expect] of [
      [
        'XDG_CACHE_HOME a regular file',
        async (c) => {
          const p = join(c.dir, 'xdgfile');
          await writeFile(p, 'x');
          return { XDG_CACHE_HOME: p };
        },
        'error',
      ],
      ['XDG_CACHE_HOME empty, HOME a temp dir', async (c) => ({ XDG_CACHE_HOME: '', HOME: await c.mkdir('home') }), 'ok'],
      ['XDG_CACHE_HOME relative', async () => ({ XDG_CACHE_HOME: 'rel-xdg' }), 'any'],
      ['HOME unset, XDG_CACHE_HOME unset', async () => ({ XDG_CACHE_HOME: undefined, HOME: undefined }), 'any'],
    ]) {
      cases.push({
        id: `cache/${model}/no --cache-dir, ${name}`,
        cls: 'cache',
        model,
        expect,
        setup: async (c) => ({ argv: without(base('run', c), '--cache-dir'), env: await env(c) }),
      });
    }
  }
  return cases;
}

// ---------------------------------------------------------------------------------------------
// special files as inputs
// ---------------------------------------------------------------------------------------------

function specialCases() {
  const cases = [];
  const sources = [
    ['a FIFO (no writer)', (c) => c.fifo('in.fifo')],
    ['a FIFO (a writer sends a real file)', (c) => c.fifoWithWriter('in2.fifo', c.image)],
    ['/dev/zero', () => '/dev/zero'],
    ['/dev/urandom', () => '/dev/urandom'],
    ['/dev/null', () => '/dev/null'],
    ['a directory', (c) => c.mkdir('indir')],
    ['the model dir', (c) => c.model],
    ['/', () => '/'],
    [
      'a symlink loop',
      async (c) => {
        await c.link('il-a', join(c.dir, 'il-b'));
        return c.link('il-b', join(c.dir, 'il-a'));
      },
    ],
    ['a dangling symlink', (c) => c.link('idangling', join(c.dir, 'none'))],
    ['/proc/self/environ', () => '/proc/self/environ'],
    ['/proc/cpuinfo', () => '/proc/cpuinfo'],
    ['/proc/self/mem', () => '/proc/self/mem'],
    ['a 10 GB sparse file', (c) => c.sparse('sparse.bin', 10 * 2 ** 30)],
    ['a 300 MB file of random bytes', (c) => c.randomFile('random.bin', 300 * 2 ** 20)],
    [
      'a mode-000 file (root reads it anyway)',
      async (c) => {
        const p = join(c.dir, 'mode000');
        execFileSync('cp', [c.image, p]);
        execFileSync('chmod', ['000', p]);
        return p;
      },
    ],
    ['an empty string', () => ''],
  ];
  for (const [name, src] of sources) {
    for (const model of MODELS) {
      cases.push({
        id: `special/${model}/preprocess --image ${name}`,
        cls: 'special-files',
        model,
        expect: name.startsWith('a mode-000') ? 'ok' : name.includes('writer') ? 'any' : 'error',
        setup: async (c) => {
          const p = await src(c);
          return { argv: [...base('preprocess', c), '--image', p], watch: [p] };
        },
      });
      cases.push({
        id: `special/${model}/run --image ${name}`,
        cls: 'special-files',
        model,
        expect: name.startsWith('a mode-000') ? 'ok' : name.includes('writer') ? 'any' : 'error',
        setup: async (c) => {
          const p = await src(c);
          return { argv: [...base('run', c), '--image', p], watch: [p] };
        },
      });
    }
    cases.push({
      id: `special/ernie/preprocess --video ${name}`,
      cls: 'special-files',
      model: 'ernie',
      expect: name.startsWith('a mode-000') ? 'any' : name.includes('writer') ? 'any' : 'error',
      setup: async (c) => {
        const p = await src(c);
        return { argv: [...base('preprocess', c), '--video', p], watch: [p] };
      },
    });
    if (!name.startsWith('a mode-000') && !name.includes('writer') && name !== 'an empty string')
      cases.push({
        id: `special/ernie/preprocess --video ${name} (.safetensors name)`,
        cls: 'special-files',
        model: 'ernie',
        expect: 'error',
        setup: async (c) => {
          const p = await src(c);
          const named = await c.link('video.safetensors', p);
          return { argv: [...base('preprocess', c), '--video', named], watch: [p] };
        },
      });
    for (const cmd of ['forward', 'generate']) {
      cases.push({
        id: `special/ernie/${cmd} --inputs ${name}`,
        cls: 'special-files',
        model: 'ernie',
        expect: name.startsWith('a mode-000') || name.includes('writer') ? 'any' : 'error',
        setup: async (c) => {
          const p = await src(c);
          return { argv: withOption(base(cmd, c), '--inputs', p), watch: [p] };
        },
      });
    }
  }
  // Model folders whose files are special
  const modelFiles = [
    'config.json',
    'model.safetensors',
    'tokenizer.json',
    'tokenizer_config.json',
    'chat_template.jinja',
    'preprocessor_config.json',
    'processor_config.json',
    'generation_config.json',
  ];
  const kinds = [
    ['a directory', async (_c, p) => mkdir(p)],
    ['a FIFO', async (_c, p) => execFileSync('mkfifo', [p])],
    ['a symlink to /dev/zero', async (_c, p) => symlink('/dev/zero', p)],
    ['a symlink to /dev/urandom', async (_c, p) => symlink('/dev/urandom', p)],
    ['a 10 GB sparse file', async (_c, p) => execFileSync('truncate', ['-s', '10G', p])],
    [
      'a symlink loop',
      async (_c, p) => {
        await symlink(`${p}.b`, p);
        await symlink(p, `${p}.b`);
      },
    ],
    ['empty', async (_c, p) => writeFile(p, '')],
  ];
  for (const f of modelFiles) {
    for (const [kind, make] of kinds) {
      for (const cmd of f === 'model.safetensors' || f === 'config.json' ? ['run', 'inspect'] : ['preprocess', 'run']) {
        const model = f === 'chat_template.jinja' || f === 'preprocessor_config.json' ? 'granite' : 'ernie';
        cases.push({
          id: `special/${model}/${cmd} with ${f} ${kind}`,
          cls: 'special-files',
          model,
          expect: f === 'generation_config.json' || f === 'processor_config.json' ? 'any' : 'error',
          setup: async (c) => {
            const p = join(c.model, f);
            execFileSync('rm', ['-f', p]);
            await make(c, p);
            return { argv: base(cmd, c) };
          },
        });
      }
    }
  }
  // The model folder itself
  for (const [name, make] of [
    ['a FIFO', (c) => c.fifo('model.fifo')],
    ['/dev/null', () => '/dev/null'],
    [
      'a symlink loop',
      async (c) => {
        await c.link('ml-a', join(c.dir, 'ml-b'));
        return c.link('ml-b', join(c.dir, 'ml-a'));
      },
    ],
    ['an empty dir', (c) => c.mkdir('emptymodel')],
    ['/proc/self', () => '/proc/self'],
  ]) {
    for (const cmd of ['run', 'inspect', 'preprocess']) {
      cases.push({
        id: `special/${cmd} --model ${name}`,
        cls: 'special-files',
        expect: 'error',
        setup: async (c) => {
          const argv = base(cmd, { ...c, model: 'MODEL' });
          const p = await make(c);
          return { argv: argv.map((a) => (a === 'MODEL' ? p : a)) };
        },
      });
    }
  }
  // A chat template that is a directory (the baseline printed a bare EISDIR), adapter files special
  for (const [name, make] of [
    ['a FIFO', (p) => execFileSync('mkfifo', [p])],
    ['a symlink to /dev/zero', (p) => symlink('/dev/zero', p)],
    ['a directory', (p) => mkdir(p)],
  ]) {
    for (const f of ['adapter_config.json', 'adapter_model.safetensors']) {
      cases.push({
        id: `special/granite/run --adapter with ${f} ${name}`,
        cls: 'special-files',
        model: 'granite',
        adapter: true,
        expect: 'error',
        setup: async (c) => {
          const p = join(c.adapter, f);
          execFileSync('rm', ['-f', p]);
          await make(p);
          return { argv: [...base('run', c), '--adapter', c.adapter] };
        },
      });
    }
  }
  return cases;
}

export function jsCases() {
  return [...optionCases(), ...inputsCases(), ...outputCases(), ...cacheCases(), ...specialCases()];
}
