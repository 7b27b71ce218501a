import { Environment, Interpreter, type Template } from '@huggingface/jinja';
import { ProcessorError } from '../errors.js';

/** Bounds on one chat template render; a template that passes one fails with a TEMPLATE_LIMIT error. */
export interface TemplateLimits {
  /** Wall-clock time one render may take, in milliseconds. */
  maxRenderMs: number;
  /** Length of the output, and of any string the template builds, in UTF-16 code units. */
  maxOutputLength: number;
  /** For-loop iterations in one render, and items in any list the template builds. */
  maxIterations: number;
}

export const DEFAULT_TEMPLATE_LIMITS: Readonly<TemplateLimits> = Object.freeze({
  maxRenderMs: 2000,
  maxOutputLength: 4 * 2 ** 20,
  maxIterations: 1_000_000,
});

/** jinja2's sandbox (ImmutableSandboxedEnvironment, which HF renders in) refuses larger ranges: MAX_RANGE. */
const MAX_RANGE = 100_000;

/**
 * Blocks (and macro calls, whose bodies are blocks) nested in one another. Far beyond what jinja2
 * compiles (Python's indentation limit stops it under 100 nested ifs, RecursionError under 200
 * macro calls) and well within JavaScript's stack.
 */
const MAX_DEPTH = 1000;

/** How often (in evaluated nodes and blocks) the clock is read. */
const CLOCK_EVERY = 16;

/**
 * An error the template itself causes, with jinja2's wording where it has one (`'foo' is undefined`).
 * ChatTemplate turns it into a ProcessorError.
 */
class TemplateRenderError extends Error {}

/** Python's str.isspace() characters: what str.strip() removes by default (JS's trim differs in U+FEFF, U+001C-U+001F, U+0085). */
const PY_WHITESPACE = new Set(
  '\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000',
);

function stripChars(arg: Value | undefined): Set<string> {
  if (arg === undefined || arg.type === 'NullValue' || arg.type === 'UndefinedValue') return PY_WHITESPACE;
  if (arg.type !== 'StringValue') throw new TemplateRenderError(`strip arg must be None or str, not ${pyType(arg)}`);
  return new Set(Array.from(arg.value as string));
}

/** Python's str.strip / lstrip / rstrip over code points. */
function pyStrip(text: string, chars: Set<string>, how: 'strip' | 'lstrip' | 'rstrip'): string {
  const cps = Array.from(text);
  let start = 0;
  let end = cps.length;
  if (how !== 'rstrip') while (start < end && chars.has(cps[start]!)) start++;
  if (how !== 'lstrip') while (end > start && chars.has(cps[end - 1]!)) end--;
  return cps.slice(start, end).join('');
}

/** `raise_exception(message)` from the template (HF raises jinja2's TemplateError with the message). */
export class TemplateRaisedError extends Error {}

// The parts of @huggingface/jinja's runtime this module relies on. Its value classes are not
// exported and its interpreter's methods are private in the typings, so both are reached by shape.
interface Value {
  readonly type: string;
  value: unknown;
  __bool__(): { value: boolean };
}
type ValueClass = new (value?: unknown) => Value;
interface Node {
  readonly type: string;
  [key: string]: unknown;
}
type Env = Environment;
interface Internals {
  evaluate(node: Node | undefined, env: Env): Value;
  evaluateBlock(statements: Node[], env: Env): Value;
  evaluateIdentifier(node: Node, env: Env): Value;
  evaluateMemberExpression(node: Node, env: Env): Value;
  evaluateCallExpression(node: Node, env: Env): Value;
  evaluateBinaryExpression(node: Node, env: Env): Value;
  evaluateFor(node: Node, env: Env): Value;
  applyFilter(operand: Value, filter: Node, env: Env): Value;
}
const BASE = Interpreter.prototype as unknown as Internals;
for (const name of [
  'evaluate',
  'evaluateBlock',
  'evaluateIdentifier',
  'evaluateMemberExpression',
  'evaluateCallExpression',
  'evaluateBinaryExpression',
  'evaluateFor',
  'applyFilter',
] as const) {
  if (typeof BASE[name] !== 'function') {
    throw new Error(`@huggingface/jinja has no Interpreter.${name}: this version is not the one @vlmkit/processors pins`);
  }
}

function valueClass(js: unknown): ValueClass {
  return (new Environment().set('v', js) as unknown as Value).constructor as ValueClass;
}
const StringValue = valueClass('');
const IntegerValue = valueClass(1);
const FloatValue = valueClass(1.5);
const BooleanValue = valueClass(true);
const ArrayValue = valueClass([]);
const UndefinedValue = valueClass(undefined);

/** Statements that print nothing (jinja2 prints every other statement's value). */
const SILENT = new Set(['Set', 'Macro', 'Comment']);

/** A node standing for an already evaluated value, so a value is not evaluated twice when handed on. */
const EVALUATED = 'VlmkitEvaluated';
function evaluated(value: Value): Node {
  return { type: EVALUATED, value };
}

const isUndefined = (v: Value) => v.type === 'UndefinedValue';
const isArray = (v: Value) => v.type === 'ArrayValue' || v.type === 'TupleValue';
const isNumeric = (v: Value) => v.type === 'IntegerValue' || v.type === 'FloatValue' || v.type === 'BooleanValue';
const isInt = (v: Value) => v.type === 'IntegerValue' || v.type === 'BooleanValue';

/**
 * Renders a parsed template as transformers 5.17 does (jinja2's ImmutableSandboxedEnvironment with
 * its default Undefined), within `limits`. @huggingface/jinja's interpreter does the work; hooks on
 * one interpreter instance count steps, loop iterations and string lengths as it goes, and give
 * undefined values, equality and printing jinja2's meaning:
 * - an undefined value prints empty, is false, iterates as empty, has length 0 and is in nothing;
 *   reading an attribute or item of it, calling it or computing with it raises `'foo' is undefined`;
 * - values print as Python's `str` (`True`, `None`, `['a', 1]`), `==` compares as Python does;
 * - `str * int` repeats, `str + int` raises; `range` refuses more than jinja2's MAX_RANGE items.
 */
export function renderTemplate(template: Template, variables: Record<string, unknown>, limits: TemplateLimits): string {
  const env = new Environment();
  const deadline = Date.now() + limits.maxRenderMs;
  const globals: Record<string, unknown> = {
    true: true,
    false: false,
    none: null,
    True: true,
    False: false,
    None: null,
    range: (...args: unknown[]) => range(args, limits),
    raise_exception: (message: unknown) => {
      throw new TemplateRaisedError(String(message));
    },
    strftime_now: (format: unknown) => strftime(new Date(), String(format)),
  };
  for (const [name, value] of Object.entries({ ...globals, ...variables })) env.set(name, value);

  const self = new Interpreter(env) as unknown as Internals;
  const hints = new WeakMap<Value, string>();
  const loops: { body: Node[]; length: number }[] = [];
  let steps = 0;
  let iterations = 0;
  let depth = 0;

  const undefinedValue = (hint: string): Value => {
    const u = new UndefinedValue();
    hints.set(u, hint);
    return u;
  };
  const undefinedError = (u: Value) => new TemplateRenderError(hints.get(u) ?? 'a value is undefined');
  const tick = () => {
    if (++steps % CLOCK_EVERY === 0 && Date.now() > deadline) throw limitError('time', 0, limits);
  };
  const checkLength = (length: number) => {
    if (length > limits.maxOutputLength) throw limitError('output', length, limits);
  };

  self.evaluate = (node, e) => {
    if (node?.type === EVALUATED) return node.value as Value;
    tick();
    const v = BASE.evaluate.call(self, node, e);
    if (v.type === 'StringValue') checkLength((v.value as string).length);
    else if (isArray(v) && (v.value as Value[]).length > limits.maxIterations) {
      throw limitError('items', (v.value as Value[]).length, limits);
    }
    return v;
  };

  self.evaluateBlock = (statements, e) => {
    tick();
    const loop = loops.at(-1);
    const isLoopBody = loop?.body === statements;
    if (isLoopBody && ++iterations > limits.maxIterations) throw limitError('iterations', iterations, limits);
    if (++depth > MAX_DEPTH) throw limitError('nesting', depth, limits);
    let out = '';
    try {
      for (const s of statements) {
        const v = self.evaluate(s, e);
        if (SILENT.has(s.type)) continue;
        out += pyStr(v);
        checkLength(out.length);
      }
    } finally {
      depth--;
    }
    if (isLoopBody) {
      loop!.length += out.length;
      checkLength(loop!.length);
    }
    return new StringValue(out);
  };

  // A loop over the scopes instead of the library's recursive lookup, which turns running out of
  // stack into an undefined variable.
  self.evaluateIdentifier = (node, e) => {
    const name = node.value as string;
    for (let scope: Env | undefined = e; scope !== undefined; scope = scope.parent) {
      const v = scope.variables.get(name);
      if (v !== undefined) return v as unknown as Value;
    }
    return undefinedValue(`'${name}' is undefined`);
  };

  self.evaluateMemberExpression = (node, e) => {
    const object = self.evaluate(node.object as Node, e);
    if (isUndefined(object)) throw undefinedError(object);
    let property = node.property as Node;
    if (node.computed && property.type !== 'SliceExpression') property = evaluated(self.evaluate(property, e));
    const v = BASE.evaluateMemberExpression.call(self, { ...node, object: evaluated(object), property }, e);
    if (!isUndefined(v) || hints.has(v)) return v;
    const key = property.type === EVALUATED ? (property.value as Value).value : property.value;
    if (isArray(object) && typeof key === 'number') return undefinedValue(`${pyType(object)} object has no element ${key}`);
    return undefinedValue(`'${pyType(object)} object' has no attribute '${String(key)}'`);
  };

  self.evaluateCallExpression = (node, e) => {
    const target = node.callee as Node;
    const method = target.type === 'MemberExpression' && !target.computed ? ((target.property as Node).value as string) : undefined;
    if (method === 'strip' || method === 'lstrip' || method === 'rstrip') {
      const object = self.evaluate(target.object as Node, e);
      if (object.type === 'StringValue') {
        const args = ((node.args as Node[] | undefined) ?? []).map((a) => self.evaluate(a, e));
        return new StringValue(pyStrip(object.value as string, stripChars(args[0]), method));
      }
    }
    const callee = self.evaluate(target, e);
    if (isUndefined(callee)) throw undefinedError(callee);
    return BASE.evaluateCallExpression.call(self, { ...node, callee: evaluated(callee) }, e);
  };

  self.evaluateBinaryExpression = (node, e) => {
    const op = (node.operator as { value: string }).value;
    if (op === 'and' || op === 'or') return BASE.evaluateBinaryExpression.call(self, node, e);
    const left = self.evaluate(node.left as Node, e);
    const right = self.evaluate(node.right as Node, e);
    switch (op) {
      case '==':
        return new BooleanValue(pyEquals(left, right));
      case '!=':
        return new BooleanValue(!pyEquals(left, right));
      case '~':
        return new StringValue(pyStr(left) + pyStr(right));
      case 'in':
        return new BooleanValue(pyContains(right, left, hints));
      case 'not in':
        return new BooleanValue(!pyContains(right, left, hints));
    }
    if (isUndefined(left)) throw undefinedError(left);
    if (isUndefined(right)) throw undefinedError(right);
    if (op === '*') {
      const repeated = repeat(left, right, limits) ?? repeat(right, left, limits);
      if (repeated !== undefined) return repeated;
    }
    if ((op === '/' || op === '//' || op === '%') && isNumeric(left) && isNumeric(right)) {
      const a = Number(left.value);
      const b = Number(right.value);
      // Python raises ZeroDivisionError where JS gives Infinity / NaN, and its % takes the divisor's sign.
      if (b === 0) {
        throw new TemplateRenderError(
          op === '/' ? 'division by zero' : op === '//' ? 'integer division or modulo by zero' : 'integer modulo by zero',
        );
      }
      if (op === '%') {
        const r = a - b * Math.floor(a / b);
        return isInt(left) && isInt(right) ? new IntegerValue(r) : new FloatValue(r);
      }
    }
    if (op === '+' && (left.type === 'StringValue') !== (right.type === 'StringValue')) {
      throw new TemplateRenderError(
        left.type === 'StringValue'
          ? `can only concatenate str (not "${pyType(right)}") to str`
          : `unsupported operand type(s) for +: '${pyType(left)}' and '${pyType(right)}'`,
      );
    }
    return BASE.evaluateBinaryExpression.call(self, { ...node, left: evaluated(left), right: evaluated(right) }, e);
  };

  self.evaluateFor = (node, e) => {
    const select = (node.iterable as Node).type === 'SelectExpression' ? (node.iterable as Node) : undefined;
    let items = self.evaluate((select ? select.lhs : node.iterable) as Node, e);
    // jinja2 iterates an undefined value as empty and a string by characters.
    if (isUndefined(items)) items = new ArrayValue([]);
    else if (items.type === 'StringValue') {
      const text = items.value as string;
      if (text.length > limits.maxIterations) throw limitError('items', text.length, limits);
      items = new ArrayValue(Array.from(text, (c) => new StringValue(c)));
    }
    const iterable = select ? { ...select, lhs: evaluated(items) } : evaluated(items);
    loops.push({ body: node.body as Node[], length: 0 });
    try {
      return BASE.evaluateFor.call(self, { ...node, iterable }, e);
    } finally {
      loops.pop();
    }
  };

  self.applyFilter = (operand, filter, e) => {
    const name = filter.type === 'Identifier' ? filter.value : ((filter.callee as Node | undefined)?.value as string | undefined);
    if (name === 'string') return new StringValue(pyStr(operand));
    // jinja2's trim is str.strip(chars): Python's whitespace, not JS's (U+FEFF kept, U+001C-U+001F and U+0085 stripped).
    if (name === 'trim' && operand.type === 'StringValue') {
      const args = filter.type === 'Identifier' ? [] : ((filter.args as Node[] | undefined) ?? []).map((a) => self.evaluate(a, e));
      return new StringValue(pyStrip(operand.value as string, stripChars(args[0]), 'strip'));
    }
    if (isUndefined(operand)) {
      switch (name) {
        case 'length':
        case 'count':
          return new IntegerValue(0);
        case 'list':
          return new ArrayValue([]);
        case 'tojson':
          throw new TemplateRenderError('Object of type Undefined is not JSON serializable');
      }
    }
    return BASE.applyFilter.call(self, operand, filter, e);
  };

  try {
    return (self.evaluate(template.parsed as unknown as Node, env).value as string) ?? '';
  } catch (e) {
    if (e instanceof RangeError && /call stack/i.test(e.message)) throw limitError('nesting', 0, limits, e);
    if (e instanceof RangeError && /string length/i.test(e.message)) throw limitError('output', Number.NaN, limits, e);
    throw e;
  }
}

type Limit = 'time' | 'output' | 'items' | 'iterations' | 'range' | 'nesting' | 'parsing';

export function limitError(limit: Limit, found: number, limits: TemplateLimits, cause?: unknown): ProcessorError {
  const raise = (option: keyof TemplateLimits, value: number) =>
    `(limits.${option}: ${value}); raise it with the \`limits\` option of ChatTemplate or applyChatTemplate if the template is trusted`;
  const what: Record<Limit, string> = {
    time: `ran past its time limit ${raise('maxRenderMs', limits.maxRenderMs)}`,
    output: `built a string of ${Number.isNaN(found) ? 'too many' : found} characters, over the output limit ${raise('maxOutputLength', limits.maxOutputLength)}`,
    items: `built a list of ${found} items, over the item limit ${raise('maxIterations', limits.maxIterations)}`,
    iterations: `ran more loop iterations than the limit ${raise('maxIterations', limits.maxIterations)}`,
    range: `asked for range() of ${found} items; HF's jinja2 sandbox refuses more than ${MAX_RANGE} (MAX_RANGE) too`,
    nesting: `nests blocks or macro calls more than ${MAX_DEPTH} deep (a macro calling itself?); HF raises RecursionError or IndentationError much sooner`,
    parsing: 'nests too deeply to parse (thousands of nested blocks or parentheses); HF raises RecursionError too',
  };
  return new ProcessorError('TEMPLATE_LIMIT', `the chat template ${what[limit]}`, cause === undefined ? undefined : { cause });
}

/** Python's range with jinja2's sandbox limit, checked before anything is allocated. */
function range(args: unknown[], limits: TemplateLimits): number[] {
  for (const a of args) {
    if (!Number.isInteger(a)) throw new TemplateRenderError(`range() takes integers; got ${typeof a === 'number' ? 'float' : typeof a}`);
  }
  const [start, stop, step] = (args.length === 1 ? [0, args[0], 1] : [args[0], args[1], args[2] ?? 1]) as number[];
  if (args.length === 0 || args.length > 3) throw new TemplateRenderError(`range expected 1 to 3 arguments, got ${args.length}`);
  if (step === 0) throw new TemplateRenderError('range() arg 3 must not be zero');
  const length = Math.max(0, Math.ceil((stop! - start!) / step!));
  if (length > MAX_RANGE) throw limitError('range', length, limits);
  return Array.from({ length }, (_, i) => start! + i * step!);
}

/** Python's `seq * n` (n an int or bool), or undefined when `seq` / `n` are not that. */
function repeat(seq: Value, n: Value, limits: TemplateLimits): Value | undefined {
  if (!isInt(n) || (seq.type !== 'StringValue' && seq.type !== 'ArrayValue')) return undefined;
  const times = Math.max(0, Number(n.value));
  const length = (seq.value as string | Value[]).length * times;
  if (seq.type === 'StringValue') {
    if (length > limits.maxOutputLength) throw limitError('output', length, limits);
    return new StringValue((seq.value as string).repeat(times));
  }
  if (length > limits.maxIterations) throw limitError('items', length, limits);
  return new ArrayValue(Array.from({ length }, (_, i) => (seq.value as Value[])[i % (seq.value as Value[]).length]));
}

/** Python's `needle in haystack` for the values a template has (an undefined haystack contains nothing). */
function pyContains(haystack: Value, needle: Value, hints: WeakMap<Value, string>): boolean {
  switch (haystack.type) {
    case 'UndefinedValue':
      return false;
    case 'StringValue':
      if (needle.type !== 'StringValue') {
        throw new TemplateRenderError(`'in <string>' requires string as left operand, not ${pyType(needle)}`);
      }
      return (haystack.value as string).includes(needle.value as string);
    case 'ArrayValue':
    case 'TupleValue':
      return (haystack.value as Value[]).some((x) => pyEquals(x, needle));
    case 'ObjectValue':
    case 'KeywordArgumentsValue':
      return needle.type === 'StringValue' && (haystack.value as Map<string, Value>).has(needle.value as string);
    default:
      if (isUndefined(needle)) throw new TemplateRenderError(hints.get(needle) ?? 'a value is undefined');
      throw new TemplateRenderError(`argument of type '${pyType(haystack)}' is not iterable`);
  }
}

/** Python's `==`: numbers and booleans by value, containers item by item, undefined only to undefined. */
function pyEquals(a: Value, b: Value): boolean {
  if (isNumeric(a) && isNumeric(b)) return Number(a.value) === Number(b.value);
  if (a.type !== b.type) return false;
  switch (a.type) {
    case 'UndefinedValue':
    case 'NullValue':
      return true;
    case 'StringValue':
      return a.value === b.value;
    case 'ArrayValue':
    case 'TupleValue': {
      const x = a.value as Value[];
      const y = b.value as Value[];
      return x.length === y.length && x.every((v, i) => pyEquals(v, y[i]!));
    }
    case 'ObjectValue': {
      const x = a.value as Map<string, Value>;
      const y = b.value as Map<string, Value>;
      if (x.size !== y.size) return false;
      for (const [k, v] of x) {
        const w = y.get(k);
        if (w === undefined || !pyEquals(v, w)) return false;
      }
      return true;
    }
    default:
      return a === b || a.value === b.value;
  }
}

function pyType(v: Value): string {
  const names: Record<string, string> = {
    StringValue: 'str',
    IntegerValue: 'int',
    FloatValue: 'float',
    BooleanValue: 'bool',
    NullValue: 'NoneType',
    UndefinedValue: 'Undefined',
    ArrayValue: 'list',
    TupleValue: 'tuple',
    ObjectValue: 'dict',
    FunctionValue: 'function',
  };
  return names[v.type] ?? v.type;
}

/** Python's `str(value)`, as jinja2 prints `{{ value }}` (an undefined value prints empty). */
export function pyStr(v: Value): string {
  switch (v.type) {
    case 'StringValue':
      return v.value as string;
    case 'UndefinedValue':
      return '';
    default:
      return pyRepr(v);
  }
}

function pyRepr(v: Value): string {
  switch (v.type) {
    case 'StringValue':
      return pyStringRepr(v.value as string);
    case 'IntegerValue':
      // Python's ints are exact at any size; a JavaScript number past 2^53 is not.
      if (!Number.isSafeInteger(v.value)) {
        throw new TemplateRenderError(`an integer past 2^53 (about ${v.value}) cannot be printed exactly as Python prints it`);
      }
      return String(v.value);
    case 'FloatValue':
      return pyFloatRepr(v.value as number);
    case 'BooleanValue':
      return v.value ? 'True' : 'False';
    case 'NullValue':
      return 'None';
    case 'UndefinedValue':
      return 'Undefined';
    case 'ArrayValue':
      return `[${(v.value as Value[]).map(pyRepr).join(', ')}]`;
    case 'TupleValue': {
      const items = (v.value as Value[]).map(pyRepr);
      return items.length === 1 ? `(${items[0]},)` : `(${items.join(', ')})`;
    }
    case 'ObjectValue':
    case 'KeywordArgumentsValue':
      return `{${[...(v.value as Map<string, Value>)].map(([k, x]) => `${pyStringRepr(k)}: ${pyRepr(x)}`).join(', ')}}`;
    case 'NamespaceValue':
      return `<Namespace ${pyRepr({ ...v, type: 'ObjectValue' })}>`;
    default:
      return `<${pyType(v)}>`;
  }
}

/** Python's repr of a str: single quotes unless the text has one and no double quote. */
function pyStringRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === quote || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (c < 0x20 || (c >= 0x7f && c < 0xa0)) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return out + quote;
}

/** Python's repr of a float: shortest round-trip digits, exponent form below 1e-4 and from 1e16. */
function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const [mantissa, exp] = x.toExponential().split('e') as [string, string];
  const e = Number(exp);
  if (e < -4 || e >= 16) {
    return `${mantissa}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  }
  const s = String(x);
  return s.includes('.') || s.includes('e') ? s : `${s}.0`;
}

/** Python's `datetime.now().strftime(format)` for the C locale's directives. */
function strftime(d: Date, format: string): string {
  const days = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
  const months = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  const dayOfYear = Math.floor((Date.UTC(d.getFullYear(), d.getMonth(), d.getDate()) - Date.UTC(d.getFullYear(), 0, 1)) / 86_400_000) + 1;
  const fields: Record<string, () => string> = {
    a: () => days[d.getDay()]!.slice(0, 3),
    A: () => days[d.getDay()]!,
    b: () => months[d.getMonth()]!.slice(0, 3),
    B: () => months[d.getMonth()]!,
    d: () => pad(d.getDate()),
    H: () => pad(d.getHours()),
    I: () => pad(d.getHours() % 12 || 12),
    j: () => pad(dayOfYear, 3),
    m: () => pad(d.getMonth() + 1),
    M: () => pad(d.getMinutes()),
    p: () => (d.getHours() < 12 ? 'AM' : 'PM'),
    S: () => pad(d.getSeconds()),
    y: () => pad(d.getFullYear() % 100),
    Y: () => String(d.getFullYear()),
    '%': () => '%',
  };
  return format.replace(/%(.)/g, (token, c: string) => fields[c]?.() ?? token);
}
