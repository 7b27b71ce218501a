// Installs onnxruntime's CUDA execution provider (CUDA 13 build for onnxruntime 1.29.0) from the npm registry
// next to onnxruntime-node's native binding, where ORT loads provider libraries from.
//
// usage: pnpm cuda:install                     (fetches the package with `npm pack`)
//        node tools/gpu/install-cuda-ep.mjs [--from PACKAGE.tgz] [--dest BINDING_DIR] [--dry-run]
//
// Why this package: onnxruntime-node's own install script downloads the EP from NuGet (CUDA 12 build), which
// many machines cannot reach and which pnpm 10 never runs. `com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9`
// (the Unity plugin of onnxruntime 1.29.0, github.com/asus4/onnxruntime-unity) carries the same two libraries
// built for CUDA 13: libonnxruntime_providers_shared.so (the bridge ORT loads first) and
// libonnxruntime_providers_cuda.so. ORT resolves both relative to libonnxruntime.so.1, i.e. in
// node_modules/onnxruntime-node/bin/napi-v6/linux/x64/ (onnxruntime-node's install-metadata.js puts them there too).
// Not part of `pnpm install`: CI has no GPU, and the package is 179 MB.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE = 'com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9';
/** npm's integrity of that tarball (sha512, base64), pinned: the .so files are loaded into the process. */
const INTEGRITY = 'sha512-FopIhNE/Ng+v2X65wVc9clPCBCvhvA53Hxo2U0Kf5fGdVsC7iCA+mZ0KLWggcQAj7TIZ6pNidR4AC10g74Xo6w==';
const ORT_VERSION = '1.29.0';
/** The files taken from the package, with their sizes in 0.4.9. The TensorRT EP in it is left out (needs TensorRT). */
const EP_FILES = [
  { path: 'package/Plugins/Linux/x64/libonnxruntime_providers_shared.so', size: 14632 },
  { path: 'package/Plugins/Linux/x64/libonnxruntime_providers_cuda.so', size: 229780440 },
];

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

function fail(msg) {
  console.error(`cuda:install: ${msg}`);
  process.exit(1);
}

function parseArgs(argv) {
  const args = { from: undefined, dest: undefined, dryRun: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--from') args.from = resolve(argv[++i] ?? fail('--from needs a .tgz path'));
    else if (a === '--dest') args.dest = resolve(argv[++i] ?? fail('--dest needs a directory'));
    else if (a === '--dry-run') args.dryRun = true;
    else fail(`unknown argument '${a}' (usage: install-cuda-ep.mjs [--from PACKAGE.tgz] [--dest BINDING_DIR] [--dry-run])`);
  }
  return args;
}

/** onnxruntime-node's binding directory as @vlmkit/runtime resolves it, and the installed version. */
function ortBinding() {
  const require = createRequire(join(root, 'packages', 'runtime', 'package.json'));
  let entry;
  try {
    entry = require.resolve('onnxruntime-node'); // <pkg>/dist/index.js
  } catch {
    fail(`onnxruntime-node is not installed under ${root} (run pnpm install first)`);
  }
  const pkgDir = join(dirname(entry), '..');
  const version = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).version;
  return { dir: join(pkgDir, 'bin', 'napi-v6', process.platform, process.arch), version };
}

function integrityOf(file) {
  return `sha512-${createHash('sha512').update(readFileSync(file)).digest('base64')}`;
}

const args = parseArgs(process.argv.slice(2));
if (process.platform !== 'linux' || process.arch !== 'x64')
  fail(`the package holds Linux x64 libraries; this is ${process.platform}/${process.arch}`);

let dest = args.dest;
if (dest === undefined) {
  const ort = ortBinding();
  if (ort.version !== ORT_VERSION) fail(`onnxruntime-node is ${ort.version}; ${PACKAGE} is built for ${ORT_VERSION}`);
  dest = ort.dir;
}
if (!existsSync(join(dest, 'libonnxruntime.so.1')))
  fail(`${dest} does not hold libonnxruntime.so.1: not onnxruntime-node's binding directory`);

const tmp = mkdtempSync(join(tmpdir(), 'vlmkit-cuda-ep-'));
try {
  let tgz = args.from;
  if (tgz === undefined) {
    console.log(`npm pack ${PACKAGE} (179 MB) ...`);
    const out = execFileSync('npm', ['pack', PACKAGE, '--pack-destination', tmp, '--json'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 16 << 20,
    });
    const [info] = JSON.parse(out);
    tgz = join(tmp, info.filename);
    const listed = new Map(info.files.map((f) => [`package/${f.path}`, f.size]));
    for (const f of EP_FILES) {
      if (listed.get(f.path) !== f.size) fail(`${PACKAGE} lists ${f.path} with size ${listed.get(f.path)}, expected ${f.size}`);
    }
  }
  const integrity = integrityOf(tgz);
  if (integrity !== INTEGRITY) fail(`${tgz}: integrity ${integrity} is not ${PACKAGE}'s pinned ${INTEGRITY}`);

  execFileSync('tar', ['-xzf', tgz, '-C', tmp, ...EP_FILES.map((f) => f.path)], { stdio: 'inherit' });
  for (const f of EP_FILES) {
    const size = statSync(join(tmp, f.path)).size;
    if (size !== f.size) fail(`${f.path}: ${size} bytes after unpacking, expected ${f.size}`);
  }
  for (const f of EP_FILES) {
    const name = f.path.split('/').at(-1);
    const target = join(dest, name);
    if (args.dryRun) {
      console.log(`would copy ${name} (${f.size} bytes) to ${target}`);
      continue;
    }
    // Copy under a temporary name, then rename: a process loading the EP never sees half a file.
    copyFileSync(join(tmp, f.path), `${target}.partial`);
    chmodSync(`${target}.partial`, 0o755);
    renameSync(`${target}.partial`, target);
    console.log(`${name} (${f.size} bytes) -> ${target}`);
  }
  if (!args.dryRun) {
    console.log(
      'Done. The EP needs CUDA 13 libcudart.so.13, libcublas.so.13, libcublasLt.so.13, libcurand.so.10 and cuDNN 9 (libcudnn.so.9)' +
        ' on the loader path (LD_LIBRARY_PATH or ldconfig), and the NVIDIA driver (libcuda.so.1).',
    );
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
