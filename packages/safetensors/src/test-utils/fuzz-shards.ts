/**
 * The 'index' category of the fuzz corpus (see ./fuzz-corpus.ts): a base file
 * split into shards with a model.safetensors.index.json, then missing, extra
 * or mismatched shards, weight_map lies, broken index JSON; and `caseAt`, which
 * numbers the whole corpus.
 */
import {
  assemble,
  type BaseFile,
  type CaseFile,
  dataOf,
  deepText,
  enc,
  entryOf,
  type FuzzCase,
  type Header,
  mutateFile,
  Pick,
  rng,
} from './fuzz-corpus.js';

/** Splits a base file into `n` shards (consecutive runs of its tensors) with an index. */
export function shard(
  base: BaseFile,
  n: number,
): {
  shards: Array<{ name: string; bytes: Uint8Array; tensors: string[] }>;
  index: { metadata: object; weight_map: Record<string, string> };
} {
  const names = base.tensors;
  const per = Math.ceil(names.length / n);
  const shards: Array<{ name: string; bytes: Uint8Array; tensors: string[] }> = [];
  const weightMap: Record<string, string> = {};
  const data = dataOf(base);
  for (let s = 0; s < n; s++) {
    const mine = names.slice(s * per, (s + 1) * per);
    const header: Header = {};
    const parts: Uint8Array[] = [];
    let at = 0;
    // Tiled in header order of the base's offsets, so the data section has no gaps.
    for (const t of [...mine].sort(
      (a, b) => (entryOf(base.header, a).data_offsets as number[])[0]! - (entryOf(base.header, b).data_offsets as number[])[0]!,
    )) {
      const e = entryOf(base.header, t);
      const [b, en] = e.data_offsets as [number, number];
      header[t] = { dtype: e.dtype, shape: e.shape, data_offsets: [at, at + en - b] };
      parts.push(data.subarray(b, en));
      at += en - b;
    }
    const d = new Uint8Array(at);
    let o = 0;
    for (const part of parts) {
      d.set(part, o);
      o += part.length;
    }
    const name = `model-${String(s + 1).padStart(5, '0')}-of-${String(n).padStart(5, '0')}.safetensors`;
    shards.push({ name, bytes: assemble(header, d), tensors: mine });
    for (const t of mine) weightMap[t] = name;
  }
  return { shards, index: { metadata: { total_size: data.length }, weight_map: weightMap } };
}

const INDEX = 'model.safetensors.index.json';

function indexCase(p: Pick, base: BaseFile): { files: CaseFile[]; label: string; open: string; same: boolean } {
  const { shards, index } = shard(base, p.int(2, 4));
  const files: CaseFile[] = shards.map((s) => ({ path: s.name, bytes: s.bytes }));
  const wm = index.weight_map;
  const tensor = p.of(base.tensors);
  const shardNames = shards.map((s) => s.name);
  let indexText: string | undefined;
  let same = false;
  const how = p.of([
    'valid',
    'valid-by-file',
    'valid-dot-slash',
    'not-json',
    'truncated',
    'flip',
    'empty',
    'deep',
    'duplicate',
    'huge',
    'weight-map-type',
    'shard-value',
    'moved',
    'extra-entry',
    'dropped-entry',
    'dropped-shard',
    'missing-file',
    'extra-file',
    'duplicate-tensor',
    'corrupt-shard',
    'symlink-out',
    'shard-dir',
    'two-indexes',
  ] as const);
  let label: string = how;
  let open = '.';
  switch (how) {
    case 'valid':
      same = true;
      break;
    case 'valid-by-file':
      open = INDEX;
      same = true;
      break;
    case 'valid-dot-slash':
      for (const k of Object.keys(wm)) if (p.chance(0.5)) wm[k] = `./${wm[k]}`;
      same = true;
      break;
    case 'not-json':
      indexText = p.of(['', 'weight_map', '{"weight_map":', "{'weight_map':{}}", '\ufeff{"weight_map":{}}', 'null', '[]', '1']);
      break;
    case 'truncated': {
      const t = JSON.stringify(index);
      indexText = t.slice(0, p.int(0, t.length - 1));
      break;
    }
    case 'flip': {
      const t = [...JSON.stringify(index)];
      for (let i = p.int(1, 3); i > 0; i--) t[p.int(0, t.length - 1)] = p.of(['{', '}', '"', ':', ',', '[', ']', 'x', '\\', '\u0000']);
      indexText = t.join('');
      break;
    }
    case 'empty':
      indexText = JSON.stringify({ weight_map: {} });
      break;
    case 'deep':
      indexText = `{"weight_map":${deepText(p.of([129, 1000, 100_000]), p.chance(0.5), '"x"')}}`;
      break;
    case 'duplicate':
      indexText = `{"weight_map":{"${tensor}":"${shardNames[0]}",${JSON.stringify(wm).slice(1)}}`;
      break;
    case 'huge':
      files.push({ path: INDEX, bytes: enc.encode(JSON.stringify(index)), sparseSize: p.of([100_000_001, 2 ** 33, 2 ** 40]) });
      break;
    case 'weight-map-type': {
      const v = p.of([null, [], 3, 'model.safetensors', true] as const);
      indexText = JSON.stringify({ weight_map: v });
      label = `weight-map-type:${JSON.stringify(v)}`;
      break;
    }
    case 'shard-value': {
      const v = p.of([
        null,
        3,
        '',
        'a\u0000b',
        '/etc/passwd',
        '../outside.safetensors',
        'nope.safetensors',
        '.',
        INDEX,
        ['x'],
        { f: 'x' },
      ] as const);
      (wm as Record<string, unknown>)[tensor] = v;
      label = `shard-value:${JSON.stringify(v)}`;
      break;
    }
    case 'moved':
      wm[tensor] = p.of(shardNames.filter((s) => s !== wm[tensor]));
      break;
    case 'extra-entry':
      wm[`${tensor}.ghost`] = p.of(shardNames);
      break;
    case 'dropped-entry': {
      const holder = wm[tensor];
      delete wm[tensor];
      // The shard still holds it, and transformers loads whole shards; unless no entry names that shard any more.
      same = Object.values(wm).includes(holder!);
      break;
    }
    case 'dropped-shard': {
      const s = p.of(shardNames);
      for (const [k, v] of Object.entries(wm)) if (v === s) delete wm[k];
      break;
    }
    case 'missing-file':
      files.splice(p.int(0, files.length - 1), 1);
      break;
    case 'extra-file':
      files.push({ path: 'model.safetensors', bytes: base.bytes });
      same = true; // not named by the index: not opened
      break;
    case 'duplicate-tensor': {
      const i = p.int(0, shards.length - 1);
      const other = shards[(i + 1) % shards.length]!;
      const t = other.tensors[0]!;
      // Shard i also holds `t` (a copy of its first tensor's entry, under t's name, at the end).
      const b = shards[i]!.bytes;
      const hl = Number(new DataView(b.buffer, b.byteOffset, 8).getBigUint64(0, true));
      const h = JSON.parse(new TextDecoder().decode(b.subarray(8, 8 + hl))) as Header;
      const d = b.subarray(8 + hl);
      const e = entryOf(base.header, t);
      const [tb, te] = e.data_offsets as [number, number];
      h[t] = { dtype: e.dtype, shape: e.shape, data_offsets: [d.length, d.length + te - tb] };
      const nd = new Uint8Array(d.length + te - tb);
      nd.set(d);
      nd.set(dataOf(base).subarray(tb, te), d.length);
      files[i] = { path: shards[i]!.name, bytes: assemble(h, nd) };
      break;
    }
    case 'corrupt-shard': {
      const i = p.int(0, shards.length - 1);
      const sb = shards[i]!.bytes;
      const hl = Number(new DataView(sb.buffer, sb.byteOffset, 8).getBigUint64(0, true));
      const sbase: BaseFile = {
        name: shards[i]!.name,
        bytes: sb,
        headerLength: hl,
        header: JSON.parse(new TextDecoder().decode(sb.subarray(8, 8 + hl))) as Header,
        tensors: shards[i]!.tensors,
      };
      const m = mutateFile(p, sbase);
      files[i] = { path: shards[i]!.name, bytes: m.bytes };
      label = `corrupt-shard:${m.label}`;
      break;
    }
    case 'symlink-out': {
      const i = p.int(0, shards.length - 1);
      files[i] = { path: shards[i]!.name, symlinkTo: `../outside-${shards[i]!.name}` };
      files.push({ path: `../outside-${shards[i]!.name}`, bytes: shards[i]!.bytes });
      break;
    }
    case 'shard-dir': {
      const i = p.int(0, shards.length - 1);
      files[i] = { path: shards[i]!.name, directory: true };
      break;
    }
    case 'two-indexes':
      files.push({ path: 'a.safetensors.index.json', bytes: enc.encode(JSON.stringify(index)) });
      files.push({ path: 'b.safetensors.index.json', bytes: enc.encode(JSON.stringify(index)) });
      break;
  }
  if (how !== 'huge' && how !== 'two-indexes') files.push({ path: INDEX, bytes: enc.encode(indexText ?? JSON.stringify(index)) });
  return { files, label, open, same };
}

/** Case `i` of the corpus for `seed`: two in three cases are single files, one in three sharded checkpoints. */
export function caseAt(bases: readonly BaseFile[], seed: number, i: number): FuzzCase {
  const p = new Pick(rng((seed * 0x9e3779b1) ^ Math.imul(i + 1, 0x85ebca6b)));
  // Small bases are picked more often: the same mutations, less I/O.
  const weighted = bases.flatMap((b) => Array<BaseFile>(b.bytes.length < 200_000 ? 4 : 1).fill(b));
  const base = p.of(weighted);
  if (p.chance(2 / 3)) {
    const m = mutateFile(p, base);
    return {
      id: i,
      category: 'file',
      kind: `${base.name}:${m.label}`,
      files: [{ path: 'model.safetensors', bytes: m.bytes }],
      open: 'model.safetensors',
      ...(m.same ? { same: base } : {}),
    };
  }
  const c = indexCase(p, base);
  return { id: i, category: 'index', kind: `${base.name}:${c.label}`, files: c.files, open: c.open, ...(c.same ? { same: base } : {}) };
}
