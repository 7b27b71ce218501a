#!/usr/bin/env node
// Runs a `vlmkit export` folder with plain onnxruntime-node: no @vlmkit import, only manifest.json and the
// .onnx files. It is the reference port of the manifest's host-side rules (what another language's binding
// would write) and is tested against `vlmkit forward` (packages/cli/src/export.test.ts).
//
//   node tools/export/run-exported.mjs EXPORT_DIR INPUTS.safetensors OUT.safetensors [MAX_NEW_TOKENS]
//
// INPUTS holds the HF forward kwargs by their HF names (as for `vlmkit forward`); OUT gets float32 `logits`
// [B, S, V] of the prefill and, with MAX_NEW_TOKENS, int64 `generated_ids` [B, N] of greedy decoding through
// the KV cache (as `vlmkit generate`). onnxruntime-node is imported by name, or from the path in $ORT_NODE.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ortModule = await import(process.env.ORT_NODE ?? 'onnxruntime-node');
const ort = ortModule.default ?? ortModule;
/** Options of every session, from the manifest's session_config (below). */
const sessionOptions = {};

// --- safetensors: an 8-byte little-endian header length, a JSON header, the tensors' bytes ---------------------

const ARRAYS = { F32: Float32Array, I64: BigInt64Array, I32: Int32Array };

function readSafetensors(path) {
  const buf = readFileSync(path);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  const out = {};
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const Arr = ARRAYS[t.dtype];
    if (!Arr) throw new Error(`${path}: ${name} has dtype ${t.dtype}; this script reads F32, I64, I32`);
    const [a, b] = t.data_offsets;
    const bytes = buf.subarray(8 + n + a, 8 + n + b);
    out[name] = { dims: t.shape, data: new Arr(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)) };
  }
  return out;
}

function writeSafetensors(path, tensors) {
  const header = {};
  let offset = 0;
  for (const [name, t] of Object.entries(tensors)) {
    header[name] = { dtype: t.dtype, shape: t.dims, data_offsets: [offset, offset + t.data.byteLength] };
    offset += t.data.byteLength;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  writeFileSync(
    path,
    Buffer.concat([
      len,
      Buffer.from(json),
      ...Object.values(tensors).map((t) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength)),
    ]),
  );
}

// --- helpers --------------------------------------------------------------------------------------------------

const f32 = (data, dims) => new ort.Tensor('float32', data, dims);
const i64 = (values, dims) =>
  new ort.Tensor(
    'int64',
    BigInt64Array.from(values, (v) => BigInt(v)),
    dims,
  );
const rows = (t, width) =>
  t ? Array.from({ length: t.dims[0] }, (_, i) => Array.from(t.data.subarray(i * width, (i + 1) * width), Number)) : [];

/** Zero-size past for the prefill: [B, num_kv_heads, 0, head_dim] per layer (manifest decoder.kv_cache). */
function emptyPast(kv, batch) {
  const feeds = {};
  for (const l of kv.layers) {
    feeds[l.past_key] = f32(new Float32Array(0), [batch, kv.num_kv_heads, 0, kv.head_dim]);
    feeds[l.past_value] = f32(new Float32Array(0), [batch, kv.num_kv_heads, 0, kv.head_dim]);
  }
  return feeds;
}

function need(graph, name) {
  if (!graph.inputs.some((i) => i.name === name) && !graph.outputs.some((o) => o.name === name))
    throw new Error(`${graph.file} has no input or output '${name}'`);
  return name;
}

// --- ERNIE-4.5-VL ---------------------------------------------------------------------------------------------

/** Vision encoder feeds for one kind (images or videos): manifest ernie.vision_encoder_inputs. */
function ernieVisionFeeds(e, pixels, grids) {
  const m = e.spatial_merge_size;
  const inv = Float32Array.from(e.vision_rotary.inv_freq);
  const quarter = e.vision_rotary.head_dim / 4;
  const half = 2 * quarter;
  const numPatches = grids.reduce((n, [t, h, w]) => n + t * h * w, 0);
  const segment = new Int32Array(numPatches);
  const cos = new Float32Array(numPatches * half);
  const sin = new Float32Array(numPatches * half);
  let p = 0;
  let frame = 0;
  for (const [t, h, w] of grids) {
    for (let f = 0; f < t; f++, frame++) {
      for (let bh = 0; bh < h / m; bh++)
        for (let bw = 0; bw < w / m; bw++)
          for (let ih = 0; ih < m; ih++)
            for (let iw = 0; iw < m; iw++, p++) {
              segment[p] = frame;
              const pos = [bh * m + ih, bw * m + iw];
              for (let a = 0; a < 2; a++)
                for (let i = 0; i < quarter; i++) {
                  const angle = Math.fround(pos[a] * inv[i]);
                  cos[p * half + a * quarter + i] = Math.cos(angle);
                  sin[p * half + a * quarter + i] = Math.sin(angle);
                }
            }
    }
  }
  const first = [];
  const second = [];
  let offset = 0;
  for (const [t, h, w] of grids) {
    const n = (h * w) / (m * m);
    if (e.temporal_slicing) {
      const pairs = t === 1 ? [[0, 0]] : Array.from({ length: t / 2 }, (_, k) => [2 * k, 2 * k + 1]);
      for (const [even, odd] of pairs)
        for (let j = 0; j < n; j++) {
          first.push(offset + even * n + j);
          second.push(offset + odd * n + j);
        }
    }
    offset += t * n;
  }
  return {
    pixel_values: f32(pixels.data, pixels.dims),
    rotary_cos: f32(cos, [numPatches, half]),
    rotary_sin: f32(sin, [numPatches, half]),
    segment_ids: new ort.Tensor('int32', segment, [numPatches]),
    first_slice: i64(first, [first.length]),
    second_slice: i64(second, [second.length]),
  };
}

/** 3D position ids [3, B, S] (manifest ernie.position_ids); types[b][s]: 0 text, 1 image, 2 video placeholder. */
function erniePositions(e, mask, types, B, S, imageGrids, videoGrids) {
  const pos = new Array(3 * B * S).fill(0);
  const used = { 1: 0, 2: 0 };
  const m = e.spatial_merge_size;
  for (let b = 0; b < B; b++) {
    const cols = [];
    for (let s = 0; s < S; s++) if (mask[b * S + s] !== 0) cols.push(s);
    const put = (k, t, h, w) => {
      pos[b * S + cols[k]] = t;
      pos[(B + b) * S + cols[k]] = h;
      pos[(2 * B + b) * S + cols[k]] = w;
    };
    let cur = 0;
    let k = 0;
    while (k < cols.length) {
      const type = types[b][cols[k]];
      if (type === 0) {
        put(k, cur, cur, cur);
        cur += 1;
        k += 1;
        continue;
      }
      const g = (type === 1 ? imageGrids : videoGrids)[used[type]++];
      const t = type === 1 ? g[0] : g[0] / e.temporal_merge_size;
      const h = g[1] / m;
      const w = g[2] / m;
      let itemMax = cur;
      for (let f = 0; f < t; f++) {
        for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) put(k++, cur + f, cur + y, cur + x);
        itemMax = Math.max(itemMax, cur + f);
      }
      itemMax = Math.max(itemMax, cur + h - 1, cur + w - 1);
      cur = e.position_ids.advance === 'vllm' ? itemMax + 1 : cur + Math.max(h, w);
    }
  }
  return pos;
}

async function prepareErnie(dir, man, x) {
  const e = man.ernie;
  const [B, S] = x.input_ids.dims;
  const ids = Array.from(x.input_ids.data, Number);
  const mask = x.attention_mask ? Array.from(x.attention_mask.data, Number) : new Array(B * S).fill(1);
  const imageGrids = rows(x.image_grid_thw, 3);
  const videoGrids = rows(x.video_grid_thw, 3);
  const D = man.decoder.hidden_size;

  // Placeholders: with one id for image and video patches (hub layout), the latest start token decides.
  const types = [];
  const imagePositions = [];
  const videoPositions = [];
  for (let b = 0; b < B; b++) {
    const row = new Array(S).fill(0);
    let inVideo = false;
    for (let s = 0; s < S; s++) {
      const id = ids[b * S + s];
      if (id === e.tokens.video_start) inVideo = true;
      else if (id === e.tokens.image_start) inVideo = false;
      if (id !== e.tokens.image && id !== e.tokens.video) continue;
      const video = e.tokens.image === e.tokens.video ? inVideo : id === e.tokens.video;
      row[s] = video ? 2 : 1;
      (video ? videoPositions : imagePositions).push(b * S + s);
    }
    types.push(row);
  }

  const g = man.graphs;
  const embeds = [];
  if (imageGrids.length + videoGrids.length > 0) {
    const vision = await ort.InferenceSession.create(join(dir, g.vision_encoder.file), sessionOptions);
    const out = need(g.vision_encoder, 'embeds');
    for (const [pixels, grids] of [
      [x.pixel_values, imageGrids],
      [x.pixel_values_videos, videoGrids],
    ]) {
      if (grids.length === 0) continue;
      const r = await vision.run(ernieVisionFeeds(e, pixels, grids), [out]);
      embeds.push(r[out].data);
    }
    await vision.release();
  }
  const n = embeds.reduce((a, v) => a + v.length / D, 0);
  const visionEmbeds = new Float32Array(n * D);
  let o = 0;
  for (const v of embeds) {
    visionEmbeds.set(v, o);
    o += v.length;
  }

  const moe = x.moe_mm_token_type_ids
    ? Array.from(x.moe_mm_token_type_ids.data, Number)
    : ids.map((id) => (Object.values(e.tokens).includes(id) ? 1 : 0));
  const pos = erniePositions(e, mask, types, B, S, imageGrids, videoGrids);
  const { inv_freq, axes } = e.text_rotary;
  const inv = Float32Array.from(inv_freq);
  const half = axes.length;
  const cos = new Float32Array(B * S * half);
  const sin = new Float32Array(B * S * half);
  for (let b = 0; b < B; b++)
    for (let s = 0; s < S; s++)
      for (let i = 0; i < half; i++) {
        const angle = Math.fround(pos[(axes[i] * B + b) * S + s] * inv[i]);
        cos[(b * S + s) * half + i] = Math.cos(angle);
        sin[(b * S + s) * half + i] = Math.sin(angle);
      }
  const feeds = {
    input_ids: i64(ids, [B, S]),
    vision_embeds: f32(visionEmbeds, [n, D]),
    vision_positions: i64([...imagePositions, ...videoPositions], [n]),
    moe_token_type: i64(moe, [B, S]),
    attention_mask: i64(mask, [B, S]),
    rope_cos: f32(cos, [B, S, half]),
    rope_sin: f32(sin, [B, S, half]),
    ...emptyPast(man.decoder.kv_cache, B),
  };
  // Decode steps (manifest ernie.position_ids.decode): generated tokens are text at real_tokens + rope_delta.
  const real = Array.from({ length: B }, (_, b) => mask.slice(b * S, (b + 1) * S).reduce((a, v) => a + v, 0));
  const delta = real.map((r, b) => {
    let max = -1;
    for (let s = 0; s < S; s++) if (mask[b * S + s] !== 0) for (let a = 0; a < 3; a++) max = Math.max(max, pos[(a * B + b) * S + s]);
    return r === 0 ? 0 : max + 1 - r;
  });
  const step = (next, k) => {
    const c = new Float32Array(B * half);
    const si = new Float32Array(B * half);
    for (let b = 0; b < B; b++)
      for (let i = 0; i < half; i++) {
        const angle = Math.fround((real[b] + k + delta[b]) * inv[i]);
        c[b * half + i] = Math.cos(angle);
        si[b * half + i] = Math.sin(angle);
      }
    return {
      input_ids: i64(next, [B, 1]),
      vision_embeds: f32(new Float32Array(0), [0, D]),
      vision_positions: i64([], [0]),
      moe_token_type: i64(new Array(B).fill(0), [B, 1]),
      rope_cos: f32(c, [B, 1, half]),
      rope_sin: f32(si, [B, 1, half]),
    };
  };
  return { B, S, mask, feeds, step };
}

// --- Granite 4 Vision -----------------------------------------------------------------------------------------

/** LLaVA-NeXT select_best_resolution: the pinpoint keeping the most pixels, then wasting the fewest. */
function bestResolution([oh, ow], pinpoints) {
  let best;
  let maxEffective = 0;
  let minWasted = Number.POSITIVE_INFINITY;
  for (const [h, w] of pinpoints) {
    const scale = Math.min(w / ow, h / oh);
    const effective = Math.min(Math.trunc(ow * scale) * Math.trunc(oh * scale), ow * oh);
    const wasted = w * h - effective;
    if (effective > maxEffective || (effective === maxEffective && wasted < minWasted)) {
      maxEffective = effective;
      minWasted = wasted;
      best = [h, w];
    }
  }
  return best;
}

/** pack_indices (manifest granite.vision_encoder_inputs) and the tiles per image. */
function granitePack(gr, sizes) {
  const side = gr.tokens_per_tile_side;
  const perTile = side * side;
  const layouts = sizes.map((size) => {
    const [h, w] = bestResolution(size, gr.image_grid_pinpoints);
    const rows = Math.floor(h / gr.image_size);
    const cols = Math.floor(w / gr.image_size);
    return { rows, cols, tiles: rows * cols + 1 };
  });
  const newline = layouts.reduce((a, l) => a + l.tiles, 0) * perTile;
  const indices = [];
  let tile0 = 0;
  sizes.forEach(([oh, ow], i) => {
    const { rows, cols, tiles } = layouts[i];
    for (let j = 0; j < perTile; j++) indices.push(tile0 * perTile + j);
    if (tiles === 1) {
      if (gr.image_newline) indices.push(newline);
    } else {
      const gh = rows * side;
      const gw = cols * side;
      const round7 = (v) => Math.trunc(Math.round(v * 1e7) / 1e7);
      let r0 = 0;
      let r1 = gh;
      let c0 = 0;
      let c1 = gw;
      if (ow / oh > gw / gh) {
        const pad = Math.floor((gh - round7(oh * (gw / ow))) / 2);
        [r0, r1] = [pad, gh - pad];
      } else {
        const pad = Math.floor((gw - round7(ow * (gh / oh))) / 2);
        [c0, c1] = [pad, gw - pad];
      }
      for (let r = r0; r < r1; r++) {
        for (let c = c0; c < c1; c++) {
          const tile = Math.floor(r / side) * cols + Math.floor(c / side);
          indices.push((tile0 + 1 + tile) * perTile + (r % side) * side + (c % side));
        }
        if (gr.image_newline) indices.push(newline);
      }
    }
    tile0 += tiles;
  });
  return { indices, tiles: layouts.map((l) => l.tiles) };
}

async function prepareGranite(dir, man, x) {
  const gr = man.granite;
  const [B, S] = x.input_ids.dims;
  const ids = Array.from(x.input_ids.data, Number);
  const mask = x.attention_mask ? Array.from(x.attention_mask.data, Number) : new Array(B * S).fill(1);
  const D = man.decoder.hidden_size;
  const g = man.graphs;
  const imagePositions = [];
  ids.forEach((id, i) => {
    if (id === gr.image_token_id) imagePositions.push(i);
  });
  const deepstack = gr.deepstack.map(() => new Float32Array(0));
  if (x.image_sizes) {
    const sizes = rows(x.image_sizes, 2);
    const { indices, tiles } = granitePack(gr, sizes);
    const pv = x.pixel_values;
    const tile = pv.dims.slice(-3).reduce((a, b) => a * b, 1);
    const total = tiles.reduce((a, b) => a + b, 0);
    const pixels = new Float32Array(total * tile);
    if (pv.dims.length === 5) {
      let o = 0;
      tiles.forEach((n, i) => {
        pixels.set(pv.data.subarray(i * pv.dims[1] * tile, (i * pv.dims[1] + n) * tile), o);
        o += n * tile;
      });
    } else pixels.set(pv.data);
    const vision = await ort.InferenceSession.create(join(dir, g.vision_encoder.file), sessionOptions);
    const r = await vision.run({ pixel_values: f32(pixels, [total, ...pv.dims.slice(-3)]), pack_indices: i64(indices, [indices.length]) });
    gr.deepstack.forEach((d, k) => {
      deepstack[k] = r[need(g.vision_encoder, d.output)].data;
    });
    await vision.release();
  }
  // HF generate's positions: cumsum(attention_mask) - 1, 1 on padding.
  let positions;
  if (x.position_ids) positions = Array.from(x.position_ids.data, Number);
  else {
    positions = new Array(B * S);
    for (let b = 0; b < B; b++) {
      let c = 0;
      for (let s = 0; s < S; s++) {
        c += mask[b * S + s];
        positions[b * S + s] = mask[b * S + s] === 0 ? 1 : c - 1;
      }
    }
  }
  const feeds = {
    input_ids: i64(ids, [B, S]),
    attention_mask: i64(mask, [B, S]),
    position_ids: i64(positions, [B, S]),
    ...emptyPast(man.decoder.kv_cache, B),
  };
  if (gr.deepstack.length > 0) {
    feeds.image_positions = i64(imagePositions, [imagePositions.length]);
    gr.deepstack.forEach((d, k) => {
      feeds[d.decoder_input] = f32(deepstack[k], [deepstack[k].length / D, D]);
    });
  }
  // Decode steps: text tokens at the row's real tokens so far, no image rows.
  const real = Array.from({ length: B }, (_, b) => mask.slice(b * S, (b + 1) * S).reduce((a, v) => a + v, 0));
  const step = (next, k) => {
    const f = {
      input_ids: i64(next, [B, 1]),
      position_ids: i64(
        real.map((r) => r + k),
        [B, 1],
      ),
    };
    if (gr.deepstack.length > 0) {
      f.image_positions = i64([], [0]);
      for (const d of gr.deepstack) f[d.decoder_input] = f32(new Float32Array(0), [0, D]);
    }
    return f;
  };
  return { B, S, mask, feeds, step };
}

// --- the decoder loop (manifest decoder.kv_cache, attention_mask, generation) -------------------------------

function argmax(a, offset, n) {
  let best = 0;
  for (let i = 1; i < n; i++) if (a[offset + i] > a[offset + best]) best = i;
  return best;
}

/** Prefill, then `maxNew` greedy steps feeding each run's present.* back as past_key_values.*. */
async function decode(dir, man, model, maxNew) {
  const g = man.graphs.decoder;
  const { kv_cache: kv, vocab_size: V, generation } = man.decoder;
  const { B, S } = model;
  for (const name of Object.keys(model.feeds)) need(g, name);
  const session = await ort.InferenceSession.create(join(dir, g.file), sessionOptions);
  let out = await session.run(model.feeds);
  const prefill = out[need(g, 'logits')];
  const tokens = Array.from({ length: B }, () => []);
  const done = new Array(B).fill(false);
  let mask = model.mask;
  let width = S;
  let seq = S;
  for (let k = 0; k < maxNew; k++) {
    const logits = out.logits.data;
    const next = Array.from({ length: B }, (_, b) => (done[b] ? generation.pad_token_id : argmax(logits, (b * seq + seq - 1) * V, V)));
    next.forEach((t, b) => {
      tokens[b].push(t);
      if (generation.eos_token_ids.includes(t)) done[b] = true;
    });
    if (k === maxNew - 1 || done.every(Boolean)) break;
    const grown = [];
    for (let b = 0; b < B; b++) grown.push(...mask.slice(b * width, (b + 1) * width), 1);
    mask = grown;
    width += 1;
    seq = 1;
    const feeds = { ...model.step(next, k), attention_mask: i64(mask, [B, width]) };
    for (const l of kv.layers) {
      feeds[l.past_key] = out[l.present_key];
      feeds[l.past_value] = out[l.present_value];
    }
    out = await session.run(feeds);
  }
  await session.release();
  return { logits: prefill, tokens };
}

// --- main -----------------------------------------------------------------------------------------------------

const [dir, inputsPath, outPath, maxNewArg] = process.argv.slice(2);
if (!dir || !inputsPath || !outPath) {
  process.stderr.write('usage: node run-exported.mjs EXPORT_DIR INPUTS.safetensors OUT.safetensors [MAX_NEW_TOKENS]\n');
  process.exit(2);
}
const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
// The session config entries vlmkit uses (Node's `extra` nests them by their first dot).
for (const [k, v] of Object.entries(manifest.session_config ?? {})) {
  const [head, ...rest] = k.split('.');
  sessionOptions.extra ??= {};
  sessionOptions.extra[head] = { ...(sessionOptions.extra[head] ?? {}), [rest.join('.')]: v };
}
if (manifest.format !== 'vlmkit-export' || manifest.version !== 1) throw new Error(`${dir}: not a vlmkit export version 1`);
const inputs = readSafetensors(inputsPath);
const prepare = { ernie4_5_vl_moe: prepareErnie, granite4_vision: prepareGranite }[manifest.model_type];
if (!prepare) throw new Error(`model_type ${manifest.model_type} is not handled by this script`);
const model = await prepare(dir, manifest, inputs);
const { logits, tokens } = await decode(dir, manifest, model, Number(maxNewArg ?? 0));
const out = { logits: { dtype: 'F32', dims: logits.dims, data: logits.data } };
if (tokens[0].length > 0) {
  out.generated_ids = { dtype: 'I64', dims: [tokens.length, tokens[0].length], data: BigInt64Array.from(tokens.flat(), BigInt) };
}
writeSafetensors(outPath, out);
process.stdout.write(
  `logits [${logits.dims.join(', ')}]${tokens[0].length ? `, generated_ids [${tokens.length}, ${tokens[0].length}]` : ''} -> ${outPath}\n`,
);
