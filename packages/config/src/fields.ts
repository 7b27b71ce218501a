import { ConfigError, type ConfigErrorCode, describeValue } from './errors.js';

/**
 * A default and where it comes from. A reader takes either both or neither,
 * so every default in vlmkit names its source (`'HF Ernie4_5_VLMoeTextConfig'`,
 * `'vLLM Ernie4_5_VisionTransformer'`); a field no reference defaults is required.
 */
export type Default<T> = { default: T; from: string } | { default?: undefined; from?: undefined };

/** A default that a reader filled in, as `ConfigObject.defaultsApplied` lists them. */
export interface AppliedDefault {
  readonly field: string;
  readonly value: unknown;
  readonly from: string;
}

export type IntOptions = { min?: number; max?: number } & Default<number>;
export type NumOptions = { min?: number; max?: number } & Default<number>;
export type OneOfOptions<T extends string> = Default<T> & {
  /** The code for a string that is not one of the values (default 'INVALID_CONFIG'). */
  code?: 'INVALID_CONFIG' | 'UNSUPPORTED_CONFIG';
  /** A sentence appended to the message, saying why only these values are accepted. */
  why?: string;
};

type Json = Readonly<Record<string, unknown>>;

function isObject(x: unknown): x is Json {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function isInt(x: unknown): x is number {
  return typeof x === 'number' && Number.isInteger(x);
}

function intRange(min: number | undefined, max: number | undefined): string {
  if (min === Number.NEGATIVE_INFINITY) min = undefined;
  if (max === Number.POSITIVE_INFINITY) max = undefined;
  if (min !== undefined && max !== undefined) return `an integer in [${min}, ${max}]`;
  if (min !== undefined) return min === 1 ? 'a positive integer' : `an integer >= ${min}`;
  if (max !== undefined) return `an integer <= ${max}`;
  return 'an integer';
}

/**
 * Reads a config.json object (or a JSON object that stands for a config):
 * `fields(json, 'ERNIE text config')`. Throws `ConfigError` INVALID_CONFIG
 * when `json` is not an object. `path` prefixes every field name in errors,
 * for an object that was found inside another one (`'vision_config'`).
 */
export function fields(json: unknown, config: string, path = ''): ConfigObject {
  if (!isObject(json)) {
    throw new ConfigError(
      'INVALID_CONFIG',
      path,
      config,
      `${path === '' ? 'expected' : 'must be'} a JSON object, found ${describeValue(json)}.`,
    );
  }
  return new ConfigObject(json, config, path, []);
}

/**
 * Typed readers over one JSON object that know the object's path, so every
 * error names the field as `text_config.moe_k`. A field that is absent or
 * `null` (HF writes `null` for unset optional fields) is missing: it takes the
 * reader's default when there is one and throws MISSING_CONFIG_FIELD when not.
 * A field of the wrong type or range throws INVALID_CONFIG.
 */
export class ConfigObject {
  /** @internal use `fields()` */
  constructor(
    /** The JSON object read. */
    readonly json: Json,
    /** What config it is, as messages start ('ERNIE text config'). */
    readonly config: string,
    /** Its path inside the file ('' for the top level). */
    readonly path: string,
    private readonly applied: AppliedDefault[],
  ) {}

  /** Every default the readers of this file filled in so far (shared with nested objects). */
  get defaultsApplied(): readonly AppliedDefault[] {
    return this.applied;
  }

  /** The field's path as errors name it: `text_config.moe_k`. */
  field(key: string): string {
    return this.path === '' ? key : `${this.path}.${key}`;
  }

  /** Whether the field is present and not null. */
  has(key: string): boolean {
    return this.json[key] !== undefined && this.json[key] !== null;
  }

  /** The raw value (undefined when absent or null), for a reader of one's own; report problems with `fail`. */
  raw(key: string): unknown {
    return this.has(key) ? this.json[key] : undefined;
  }

  /** Throws a `ConfigError` about `key` ('' for this object itself): `<config>: <path.key> <detail>`. */
  fail(code: ConfigErrorCode, key: string, detail: string): never {
    throw new ConfigError(code, key === '' ? this.path : this.field(key), this.config, detail);
  }

  /** The value, or the default (recorded), or MISSING_CONFIG_FIELD naming what was expected. */
  private value<T>(key: string, expected: string, d: Default<T>): unknown {
    if (this.has(key)) return this.json[key];
    if (d.from === undefined) this.fail('MISSING_CONFIG_FIELD', key, `is missing; expected ${expected}.`);
    this.applied.push({ field: this.field(key), value: d.default, from: d.from });
    return d.default;
  }

  private wrong(key: string, expected: string, v: unknown): never {
    return this.fail('INVALID_CONFIG', key, `must be ${expected}, found ${describeValue(v)}.`);
  }

  /** The value (or the default) when `ok` accepts it; INVALID_CONFIG naming `expected` when not. */
  private checked<T>(key: string, expected: string, d: Default<unknown>, ok: (v: unknown) => v is T): T {
    const v = this.value(key, expected, d);
    if (!ok(v)) this.wrong(key, expected, v);
    return v;
  }

  /** An integer in [min, max]; min is 1 unless given (sizes and counts; `-Infinity` for any integer), max unbounded. */
  int(key: string, opts: IntOptions = {}): number {
    const min = opts.min ?? 1;
    return this.checked(
      key,
      intRange(min, opts.max),
      opts,
      (v): v is number => isInt(v) && v >= min && (opts.max === undefined || v <= opts.max),
    );
  }

  optionalInt(key: string, opts: { min?: number; max?: number } = {}): number | undefined {
    return this.has(key) ? this.int(key, opts) : undefined;
  }

  /** A finite number in [min, max] (both unbounded unless given). */
  num(key: string, opts: NumOptions = {}): number {
    const { min, max } = opts;
    const expected =
      min !== undefined && max !== undefined
        ? `a number in [${min}, ${max}]`
        : min !== undefined
          ? `a number >= ${min}`
          : max !== undefined
            ? `a number <= ${max}`
            : 'a finite number';
    return this.checked(
      key,
      expected,
      opts,
      (v): v is number => typeof v === 'number' && Number.isFinite(v) && (min === undefined || v >= min) && (max === undefined || v <= max),
    );
  }

  optionalNum(key: string, opts: { min?: number; max?: number } = {}): number | undefined {
    return this.has(key) ? this.num(key, opts) : undefined;
  }

  /** A finite number > 0 (epsilons, multipliers, rotary bases). */
  positive(key: string, opts: Default<number> = {}): number {
    return this.checked(key, 'a positive number', opts, (v): v is number => typeof v === 'number' && Number.isFinite(v) && v > 0);
  }

  optionalPositive(key: string): number | undefined {
    return this.has(key) ? this.positive(key) : undefined;
  }

  /** true or false. */
  bool(key: string, opts: Default<boolean> = {}): boolean {
    return this.checked(key, 'true or false', opts, (v) => typeof v === 'boolean');
  }

  optionalBool(key: string): boolean | undefined {
    return this.has(key) ? this.bool(key) : undefined;
  }

  /** A string. */
  str(key: string, opts: Default<string> = {}): string {
    return this.checked(key, 'a string', opts, (v) => typeof v === 'string');
  }

  optionalStr(key: string): string | undefined {
    return this.has(key) ? this.str(key) : undefined;
  }

  /** One of `values`; another string throws `opts.code` (INVALID_CONFIG unless given), a non-string INVALID_CONFIG. */
  oneOf<const T extends string>(key: string, values: readonly T[], opts: OneOfOptions<T> = {}): T {
    const expected = `one of ${values.map((x) => `'${x}'`).join(', ')}`;
    const v = this.value(key, expected, opts);
    if (typeof v !== 'string') this.wrong(key, expected, v);
    if (!(values as readonly string[]).includes(v)) {
      const why = opts.why === undefined ? '' : ` ${opts.why}`;
      this.fail(opts.code ?? 'INVALID_CONFIG', key, `${describeValue(v)} is not supported; expected ${expected}.${why}`);
    }
    return v as T;
  }

  /**
   * A [text, vision] pair from one integer (both) or a list of one or two
   * (ERNIE: Baidu writes `moe_num_experts: [64, 64]`, HF 5.17 one int for both).
   * Entries are integers >= min (0 unless given).
   */
  pair(key: string, opts: { min?: number } & Default<number | readonly [number, number]> = {}): [number, number] {
    const min = opts.min ?? 0;
    const expected = `${intRange(min, undefined)} or a list [text, vision] of them`;
    const v = this.value(key, expected, opts);
    const list = isInt(v) ? [v, v] : v;
    if (!Array.isArray(list) || list.length < 1 || list.length > 2 || !list.every((x) => isInt(x) && x >= min)) {
      this.wrong(key, expected, v);
    }
    return [list[0] as number, (list[1] ?? list[0]) as number];
  }

  /** A list of integers (each >= min when given), of exactly `length` entries when given. */
  ints(key: string, opts: { min?: number; length?: number } & Default<readonly number[]> = {}): number[] {
    const { min, length } = opts;
    const expected = `a list of ${length ?? ''}${length === undefined ? '' : ' '}${min === undefined ? 'integers' : `integers >= ${min}`}`;
    const v = this.value(key, expected, opts);
    if (
      !Array.isArray(v) ||
      (length !== undefined && v.length !== length) ||
      !v.every((x) => isInt(x) && (min === undefined || x >= min))
    ) {
      this.wrong(key, expected, v);
    }
    return [...(v as number[])];
  }

  /** A list of [int, int] pairs (deepstack_layer_map, image_grid_pinpoints), each entry >= min when given. */
  intPairs(key: string, opts: { min?: number } & Default<readonly (readonly [number, number])[]> = {}): [number, number][] {
    const { min } = opts;
    const expected = `a list of [int, int] pairs${min === undefined ? '' : ` (entries >= ${min})`}`;
    const v = this.value(key, expected, opts);
    const ok = (p: unknown) => Array.isArray(p) && p.length === 2 && p.every((x) => isInt(x) && (min === undefined || x >= min));
    if (!Array.isArray(v) || !v.every(ok)) this.wrong(key, expected, v);
    return (v as [number, number][]).map(([a, b]) => [a, b]);
  }

  /** A list of strings, each one of `values` when given, of exactly `length` entries when given. */
  strings(key: string, opts: { values?: readonly string[]; length?: number } & Default<readonly string[]> = {}): string[] {
    const { values, length } = opts;
    const of = values === undefined ? 'strings' : values.map((x) => `'${x}'`).join(' or ');
    const expected = `a list of ${length === undefined ? '' : `${length} `}${of}`;
    const v = this.value(key, expected, opts);
    if (
      !Array.isArray(v) ||
      (length !== undefined && v.length !== length) ||
      !v.every((x) => typeof x === 'string' && (values === undefined || values.includes(x)))
    ) {
      this.wrong(key, expected, v);
    }
    return [...(v as string[])];
  }

  /** A square side as HF writes sizes: a positive integer or [n, n] (`patch_size`, `image_size`). */
  square(key: string, opts: Default<number> = {}): number {
    const expected = 'a positive integer or a square [n, n]';
    const v = this.value(key, expected, opts);
    const side = Array.isArray(v) && v.length === 2 && v[0] === v[1] ? v[0] : v;
    if (!isInt(side) || side < 1) this.wrong(key, expected, v);
    return side;
  }

  /** A nested object, required. */
  obj(key: string): ConfigObject {
    const v = this.value(key, 'a JSON object', {});
    if (!isObject(v)) this.wrong(key, 'a JSON object', v);
    return new ConfigObject(v, this.config, this.field(key), this.applied);
  }

  /** A nested object, or undefined when absent or null. */
  optionalObj(key: string): ConfigObject | undefined {
    return this.has(key) ? this.obj(key) : undefined;
  }
}
