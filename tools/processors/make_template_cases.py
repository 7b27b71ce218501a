"""Record how HF transformers 5.17 renders hostile and edge-case chat templates and messages.

Run from the repo root with the reference env:

    .venv-ref/bin/python tools/processors/make_template_cases.py

Writes test-fixtures/processors/templates/cases.json: per case the template, messages and
options, and HF's outcome through the processor's own path
(`processor.apply_chat_template(messages, chat_template=..., tokenize=False)` on the tiny Granite
processor of test-fixtures/processors/granite, i.e. render_jinja_template in jinja2's
ImmutableSandboxedEnvironment): `{"rendered": str}`, `{"renderedLength": n}` when the string is
too long to store, `{"error": class, "message": str}`, or `{"hangs": true}` when it had not ended
after TIMEOUT_S seconds. Each case runs in its own process under a memory limit, so a template
that allocates without end ends in MemoryError instead of taking the machine. Deterministic.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import resource
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROCESSOR = ROOT / "test-fixtures" / "processors" / "granite"
OUT = ROOT / "test-fixtures" / "processors" / "templates" / "cases.json"
TIMEOUT_S = 20
MEMORY_LIMIT = 3 << 30
STORE_LIMIT = 4096  # longer renders are stored as their length only

ERNIE = (ROOT / "test-fixtures" / "processors" / "ernie" / "chat_template.jinja").read_text()
GRANITE = (PROCESSOR / "chat_template.jinja").read_text()

CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is this?"}]},
]
LOOP_MESSAGES = "{% for m in messages %}"

# A tool-calling template in the style of Qwen2.5's (tojson, loop.index0 lookbehind, `is defined`,
# a loop variable reassigned with set, string concatenation).
TOOLS_TEMPLATE = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""
TOOL_CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "units": ["C", 1.5, True, None]}}}]},
    {"role": "tool", "content": '{"temp": 20}'},
    {"role": "tool", "content": "sunny"},
    {"role": "user", "content": "Thanks, é ✓"},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather <now> & \"here\" é",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


def case(name, template, messages=CHAT, **options):
    return {"name": name, "template": template, "messages": messages, "options": options}


def nest(open_, inner, close, depth, before="", after=""):
    """A deeply nested template, stored in cases.json as these parts (the test builds it the same way)."""
    return {"before": before, "open": open_, "inner": inner, "close": close, "depth": depth, "after": after}


def source(template):
    if isinstance(template, str):
        return template
    t = template
    return t["before"] + t["open"] * t["depth"] + t["inner"] + t["close"] * t["depth"] + t["after"]


def user(content):
    return [{"role": "user", "content": content}]


CASES = [
    # Undefined values: jinja2's default Undefined prints empty and is falsy, but raises on
    # attribute / item access and on arithmetic.
    case("missing attribute printed", LOOP_MESSAGES + "[{{ m.foo }}]{% endfor %}"),
    case("missing key printed", LOOP_MESSAGES + "[{{ m['foo'] }}]{% endfor %}"),
    case("missing attribute in if", LOOP_MESSAGES + "{% if m.foo %}y{% else %}n{% endif %}{% endfor %}"),
    case(
        "is defined",
        "{{ messages[0].foo is defined }} {{ foo is defined }} {{ messages[0].role is defined }} {{ foo is undefined }}",
    ),
    case("undefined variable printed", "[{{ foo }}]"),
    case("undefined.attr", "{{ foo.bar }}"),
    case("undefined[key]", "{{ foo['bar'] }}"),
    case("missing attribute's attribute", "{{ messages[0].foo.bar }}"),
    case("index past the end, then attribute", "{{ messages[5].role }}"),
    case("undefined ~ string", "{{ foo ~ 'x' }}"),
    case("undefined + string", "{{ foo + 'x' }}"),
    case("undefined + 1", "{{ foo + 1 }}"),
    case("undefined in list", "{{ foo in ['a'] }}|{{ foo not in ['a'] }}"),
    case("string in undefined", "{{ 'a' in foo }}"),
    case("for over undefined", "{% for x in foo %}a{% else %}E{% endfor %}"),
    case("undefined | length", "{{ foo | length }}"),
    case("undefined | default", "{{ foo | default('d') }}"),
    case("undefined == none", "{{ foo == none }} {{ foo != none }} {{ foo == foo }}"),
    case("undefined | tojson", "{{ foo | tojson }}"),
    case("undefined called", "{{ foo() }}"),
    # How values print (Python's str).
    case("values printed", "{{ true }} {{ none }} {{ 1.5 }} {{ 2.0 }} {{ [1, 'a', none, true] }} {{ {'a': false} }}"),
    case("string + number", "{{ 'a' + 1 }}"),
    case("for over a string", "{% for c in 'abc' %}{{ c }}-{% endfor %}"),
    case("python equality", "{{ 1 == 1.0 }} {{ true == 1 }} {{ '1' == 1 }} {{ [1] == [1] }} {{ {'a': 1} == {'a': 1} }} {{ none == false }}"),
    case("floats printed", "{{ 10.0 ** 20 }} {{ 1 / 3 }} {{ 0.1 ** 5 }} {{ 7 / 7 }}"),
    case("strings in a list printed", "{{ [\"it's\", 'q\"', 'a\\\\b', 'tab\\t'] }}"),
    case("integer past 2^53", "{{ 2 ** 60 }}"),
    case("messages | tojson", "{{ messages | tojson }}"),
    case("list repeated", "{{ [1, 'a'] * 2 }}"),
    case("namespace printed", "{% set ns = namespace(a=1) %}{{ ns }}"),
    case("method of undefined", "{{ foo.upper() }}"),
    case("raise_exception with a message", "{% if messages[0].role != 'user' %}{{ raise_exception('user first') }}{% endif %}ok"),
    # Messages the real templates are given.
    case("ernie template", ERNIE, add_generation_prompt=True),
    case("granite template", GRANITE, add_generation_prompt=True),
    case(
        "ernie template, assistant turn with reasoning",
        ERNIE,
        CHAT + [{"role": "assistant", "content": "It is red.", "reasoning_content": "Look."}],
    ),
    case("granite template, role a number", GRANITE, [{"role": 1, "content": "hi"}]),
    case("ernie template, role a number", ERNIE, [{"role": 1, "content": "hi"}]),
    case("ernie template, no role", ERNIE, [{"content": "hi"}]),
    case("ernie template, content null", ERNIE, [{"role": "user", "content": None}]),
    case("granite template, content null", GRANITE, [{"role": "user", "content": None}]),
    case("ernie template, no content", ERNIE, [{"role": "user"}]),
    case("ernie template, content a number", ERNIE, user(5)),
    case("ernie template, part without type", ERNIE, user([{"text": "hi"}])),
    case("granite template, part without type", GRANITE, user([{"text": "hi"}])),
    case("ernie template, text part with a number", ERNIE, user([{"type": "text", "text": 5}])),
    case("ernie template, part a string", ERNIE, user(["hi"])),
    case("ernie template, message a string", ERNIE, ["hi"]),
    case("tool-calling template", TOOLS_TEMPLATE, TOOL_CHAT, tools=TOOLS, add_generation_prompt=True),
    case("tool-calling template, no tools", TOOLS_TEMPLATE, TOOL_CHAT),
    # Resource limits.
    case("range(1e9)", "{% for i in range(1000000000) %}{% endfor %}x"),
    case("range(100001)", "{% for i in range(100001) %}{% endfor %}x"),
    case("range(100000)", "{% for i in range(100000) %}{% endfor %}x"),
    case("nested range(100000) loops", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}x"),
    case("string multiplied", "{{ '-' * 5 }}{{ 3 * 'ab' }}{{ 'x' * 0 }}{{ 'y' * -1 }}"),
    case("string multiplied to 100 MB", "{{ 'a' * 100000000 }}"),
    case("string multiplied to 100 MB, not printed", "{% set s = 'a' * 100000000 %}{{ s | length }}"),
    case("output of 10 MB from a loop", "{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}"),
    case(
        "string doubled 40 times",
        "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
    ),
    case(
        "slow loop within the iteration limit",
        "{% set big = 'a' * 4000000 %}{% for i in range(100000) %}{% if 'ab' in big %}x{% endif %}{% endfor %}done",
    ),
    case("macro recursing 150 deep", "{% macro f(n) %}{% if n < 150 %}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(0) }}."),
    case("macro calling itself", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"),
    case("if nested 50 deep", nest("{% if true %}", "x", "{% endif %}", 50)),
    case("if nested 90 deep", nest("{% if true %}", "x", "{% endif %}", 90)),
    case("if nested 5000 deep", nest("{% if true %}", "x", "{% endif %}", 5000)),
    case("parentheses nested 5000 deep", nest("(", "1", ")", 5000, "{{ ", " }}")),
]


def render(c, queue):
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    try:
        rendered = PROCESSOR_OBJ.apply_chat_template(c["messages"], chat_template=source(c["template"]), **c["options"])
        if len(rendered) > STORE_LIMIT:
            queue.put({"renderedLength": len(rendered)})
        else:
            queue.put({"rendered": rendered})
    except BaseException as e:  # noqa: BLE001 - RecursionError, MemoryError are outcomes too
        queue.put({"error": type(e).__name__, "message": str(e)[:500]})


def outcome(c):
    # Forked so that each case starts from the processor loaded once in main().
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    p = ctx.Process(target=render, args=(c, queue))
    p.start()
    p.join(TIMEOUT_S)
    if p.is_alive():
        p.kill()
        p.join()
        return {"hangs": True}
    return queue.get(timeout=5)


PROCESSOR_OBJ = None


def main():
    global PROCESSOR_OBJ
    import transformers
    from transformers import AutoProcessor

    PROCESSOR_OBJ = AutoProcessor.from_pretrained(PROCESSOR)
    specials = PROCESSOR_OBJ.tokenizer.special_tokens_map
    cases = []
    for c in CASES:
        hf = outcome(c)
        print(f"{c['name']}: {json.dumps(hf)[:160]}")
        template = c["template"]
        if isinstance(template, str):
            template = {ERNIE: "ernie", GRANITE: "granite"}.get(template, template)
        cases.append({**c, "template": template, "hf": hf})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "transformers": transformers.__version__,
        "processor": str(PROCESSOR.relative_to(ROOT)),
        "timeoutSeconds": TIMEOUT_S,
        "specialTokens": specials,
        "templates": {"ernie": "test-fixtures/processors/ernie/chat_template.jinja", "granite": "test-fixtures/processors/granite/chat_template.jinja"},
        "cases": cases,
    }
    OUT.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
