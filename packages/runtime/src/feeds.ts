/**
 * Feed validation before ORT sees the feeds: ORT's own messages for these
 * mistakes ("input 'x' is missing in 'feeds'", "Unexpected input data type")
 * omit the other names and the model, so check first and say it all.
 */
import { RuntimeError } from './errors.js';
import { fromOrt, type HostTensor, isHostTensor, isOrtTensor, type OrtTensor, toOrt } from './tensor.js';

/** What ORT tells about one graph input or output. */
export interface ValueInfo {
  name: string;
  isTensor: boolean;
  /** ORT's type name ('float32', 'int64', 'float16', 'bool', ...), for tensors. */
  dtype?: string;
  /** Fixed dims as numbers, symbolic ones as their names ('' when unnamed). */
  dims?: readonly (number | string)[];
}

export type Feed = OrtTensor | HostTensor;

function describe(dims: readonly (number | string)[]): string {
  return `[${dims.map((d) => (d === '' ? '?' : String(d))).join(', ')}]`;
}

/**
 * Check feeds against the session's inputs and convert them to ORT tensors: names, dtypes, ranks, fixed
 * dims, and symbolic dims (ONNX: one dim_param is one size across the graph's inputs, as the contract the
 * graph was declared from says; ORT itself does not check it and fails later inside a node).
 * Throws INVALID_FEEDS listing every problem found, not just the first.
 */
export function prepareFeeds(
  session: string,
  feeds: Record<string, Feed>,
  inputs: readonly ValueInfo[],
  convert: (t: HostTensor) => OrtTensor = toOrt,
): Record<string, OrtTensor> {
  const problems: string[] = [];
  const known = new Set(inputs.map((i) => i.name));
  for (const name of Object.keys(feeds)) {
    if (!known.has(name)) problems.push(`unknown input '${name}'`);
  }
  const out: Record<string, OrtTensor> = {};
  const symbols = new Map<string, { size: number; input: string }>();
  for (const info of inputs) {
    const feed = feeds[info.name];
    if (feed === undefined) {
      const want = info.dtype && info.dims ? ` (${info.dtype} ${describe(info.dims)})` : '';
      problems.push(`missing input '${info.name}'${want}`);
      continue;
    }
    let tensor: OrtTensor;
    if (isOrtTensor(feed)) tensor = feed;
    else if (isHostTensor(feed)) {
      try {
        tensor = convert(feed);
      } catch (e) {
        problems.push(`input '${info.name}': ${e instanceof Error ? e.message : String(e)}`);
        continue;
      }
    } else {
      problems.push(`input '${info.name}' is neither a HostTensor nor an ORT tensor`);
      continue;
    }
    out[info.name] = tensor;
    if (!info.isTensor) continue;
    if (info.dtype !== undefined && tensor.type !== info.dtype) {
      problems.push(`input '${info.name}' is ${tensor.type} but the model expects ${info.dtype}`);
    }
    if (info.dims !== undefined) {
      if (tensor.dims.length !== info.dims.length) {
        problems.push(
          `input '${info.name}' has rank ${tensor.dims.length} [${tensor.dims.join(', ')}] but the model expects rank ${info.dims.length} ${describe(info.dims)}`,
        );
      } else {
        info.dims.forEach((want, axis) => {
          const got = tensor.dims[axis]!;
          if (typeof want === 'number' && want >= 0 && got !== want) {
            problems.push(
              `input '${info.name}' has dims [${tensor.dims.join(', ')}] but the model expects ${describe(info.dims!)} (axis ${axis})`,
            );
          }
          if (typeof want !== 'string' || want === '') return;
          const first = symbols.get(want);
          if (first === undefined) symbols.set(want, { size: got, input: info.name });
          else if (first.size !== got) {
            problems.push(
              `input '${info.name}' has dims [${tensor.dims.join(', ')}] but ${want} is ${first.size} in input '${first.input}' (${describe(info.dims!)}, axis ${axis})`,
            );
          }
        });
      }
    }
  }
  if (problems.length > 0) {
    const expected = inputs.map((i) => i.name).join(', ');
    throw new RuntimeError('INVALID_FEEDS', `Session '${session}': ${problems.join('; ')}. The model's inputs are: ${expected}.`, {
      session,
    });
  }
  return out;
}

/** Convert ORT's outputs to HostTensors. */
export function readOutputs(outputs: Record<string, OrtTensor>): Record<string, HostTensor> {
  const out: Record<string, HostTensor> = {};
  for (const [name, t] of Object.entries(outputs)) out[name] = fromOrt(t);
  return out;
}
