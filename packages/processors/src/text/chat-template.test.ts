import { describe, expect, it } from 'vitest';
import { ProcessorError } from '../errors.js';
import { ChatTemplate } from './chat-template.js';

// A multimodal template with the whitespace habits real templates have; every expected string below
// was rendered by transformers 5.17's render_jinja_template (jinja2) from this template.
const TEMPLATE = `{{ bos_token }}
{% for message in messages %}
  {% if message['content'] is string %}
<|{{ message.role }}|>{{ message['content'] }}{{ eos_token }}
  {% else %}
<|{{ message.role }}|>
    {%- for part in message['content'] -%}
      {%- if part.type == 'image' %}{{ image_token }}{% elif part.type == 'text' %}{{ part.text }}{% endif -%}
    {%- endfor %}{{ eos_token }}
  {% endif %}
{% endfor %}
{% if tools is not none %}TOOLS{{ tools | tojson }}{% endif %}
{% if add_generation_prompt %}<|assistant|>{% endif %}`;

const SPECIALS = { bos_token: '<s>', eos_token: '</s>', image_token: '<image>' };

describe('ChatTemplate', () => {
  const t = new ChatTemplate(TEMPLATE, SPECIALS);
  const messages = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: [{ type: 'image' }, { type: 'text', text: 'What is this?' }] },
  ];

  it('renders with trim_blocks / lstrip_blocks and the special tokens as variables', () => {
    expect(t.apply(messages)).toBe('<s>\n<|system|>Be brief.</s>\n<|user|><image>What is this?</s>\n');
    expect(t.apply(messages, { addGenerationPrompt: true })).toBe(
      '<s>\n<|system|>Be brief.</s>\n<|user|><image>What is this?</s>\n<|assistant|>',
    );
  });

  it('passes tools as None unless given, and extra variables over the special tokens', () => {
    const tools = [{ name: 'f', description: 'é' }];
    expect(t.apply([], { tools, variables: { bos_token: '[B]' } })).toBe('[B]\nTOOLS[{"name": "f", "description": "é"}]');
  });

  it('continues the final message where its text ends (continueFinalMessage)', () => {
    const chat = [...messages, { role: 'assistant', content: [{ type: 'text', text: 'It is a ' }] }];
    expect(t.apply(chat, { continueFinalMessage: true })).toBe(
      '<s>\n<|system|>Be brief.</s>\n<|user|><image>What is this?</s>\n<|assistant|>It is a ',
    );
    // The caller's messages are not modified.
    expect(chat[2]!.content).toEqual([{ type: 'text', text: 'It is a ' }]);
    expect(() => t.apply(chat, { continueFinalMessage: true, addGenerationPrompt: true })).toThrow(ProcessorError);
  });

  it("surfaces the template's raise_exception as a ProcessorError", () => {
    const strict = new ChatTemplate("{% if messages[0].role != 'user' %}{{ raise_exception('user first') }}{% endif %}ok");
    expect(strict.apply([{ role: 'user', content: 'x' }])).toBe('ok');
    expect(() => strict.apply([{ role: 'system', content: 'x' }])).toThrow(/user first/);
  });

  it('rejects a template that does not parse', () => {
    expect(() => new ChatTemplate('{% if %}')).toThrow(ProcessorError);
  });
});
