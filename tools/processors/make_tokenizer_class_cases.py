"""Record what HF transformers 5.17's AutoTokenizer gives for one tokenizer.json read as several
tokenizer classes (tokenizer_config.json `tokenizer_class`). Writes
test-fixtures/processors/tokenizer-classes/.

Run from the repo root with the reference env:

    .venv-ref/bin/python tools/processors/make_tokenizer_class_cases.py

Tokenizer folders: the processor fixtures test-fixtures/processors/{ernie,granite} and three built
here with the `tokenizers` library (a byte-level BPE without and with a prefix space, a
sentencepiece-style BPE as Llama's: Metaspace, byte fallback), each with special tokens. For each
folder, class and text, `AutoTokenizer.from_pretrained(folder)(text)["input_ids"]` and the decodes
of those ids (with and without special tokens), or the exception HF raised. `vlmkit` says what
@vlmkit/processors does with a class it does not rebuild: refuse with TOKENIZER_ERROR naming it.
Deterministic: re-running gives byte-identical files.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import transformers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import AutoTokenizer

transformers.logging.set_verbosity_error()

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "test-fixtures" / "processors"
OUT = FIX / "tokenizer-classes"

# The classes vlmkit rebuilds as HF does, and some it refuses (HF rebuilds them too).
SUPPORTED = ["TokenizersBackend", "PreTrainedTokenizerFast", "GPT2Tokenizer", "GPT2TokenizerFast",
             "Qwen2Tokenizer", "Qwen2TokenizerFast", "LlamaTokenizer", "LlamaTokenizerFast"]
REFUSED = ["BertTokenizer", "T5TokenizerFast"]

TEXTS = [
    "Hello world",
    " Hello  world",
    "Héllo wörld, ça va? 日本語 テキスト 🙂",
    "<|special_a|>Hello<|special_b|> world <|special_a|>",
    "a <|special_a|>  b <|special_b|> c",
    "<s>Hi</s><unk><|endoftext|><|IMAGE_PLACEHOLDER|><image><|start_of_text|> x <pad> y",
    "line one\nline two\n\n  indented\r\n",
    "",
    "don't stop 12345 ,.!? -- x",
]

CORPUS = [
    "Hello world, hello there. The quick brown fox jumps over the lazy dog.",
    "Héllo wörld, ça va? 日本語 テキスト line one line two indented don't stop 12345",
] * 20

SPECIALS = ["<unk>", "<s>", "</s>", "<|special_a|>", "<|special_b|>"]


def byte_level_bpe(add_prefix_space: bool) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(CORPUS, trainer)
    return tok


def metaspace_bpe() -> Tokenizer:
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    bytes_ = [f"<0x{b:02X}>" for b in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=420, special_tokens=SPECIALS + bytes_)
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", tok.token_to_id("<s>"))]
    )
    return tok


def built(
    name: str, tok: Tokenizer, named: bool = True, special_tokens_map: dict | None = None, decoder: bool = False
) -> Path:
    """A folder with `tok`'s tokenizer.json; without `named`, the classes' own special-token defaults apply."""
    folder = OUT / name
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    config = {"tokenizer_class": "TokenizersBackend"}
    if named:
        config |= {
            "bos_token": "<s>",
            "eos_token": "</s>",
            "unk_token": "<unk>",
            "extra_special_tokens": ["<|special_a|>", "<|special_b|>"],
        }
    if decoder:
        # As transformers 4.x saved it (Granite 3.x checkpoints): tokenizer.json's added tokens, by id,
        # here with <|special_b|> made a plain token and <|special_a|> given rstrip.
        added = json.loads(tok.to_str())["added_tokens"]
        config["added_tokens_decoder"] = {
            str(t["id"]): {k: v for k, v in t.items() if k != "id"}
            | ({"special": False, "normalized": True} if t["content"] == "<|special_b|>" else {})
            | ({"rstrip": True} if t["content"] == "<|special_a|>" else {})
            for t in added
        }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    if special_tokens_map is not None:
        (folder / "special_tokens_map.json").write_text(json.dumps(special_tokens_map, indent=2) + "\n")
    return folder


def run(folder: Path, cls: str, overrides: dict) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        for f in folder.iterdir():
            if f.name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
                shutil.copy(f, tmp)
        config = json.loads((Path(tmp) / "tokenizer_config.json").read_text())
        config |= overrides | {"tokenizer_class": cls}
        (Path(tmp) / "tokenizer_config.json").write_text(json.dumps(config))
        tok = AutoTokenizer.from_pretrained(tmp)
        assert type(tok).__name__ == cls.removesuffix("Fast") or cls == "PreTrainedTokenizerFast", type(tok)
        out = []
        for text in TEXTS:
            ids = tok(text)["input_ids"]
            out.append({
                "text": text,
                "ids": ids,
                "decode": tok.decode(ids),
                "decodeSkipSpecial": tok.decode(ids, skip_special_tokens=True),
            })
        return out


# (tokenizer_config.json tokenizer_class, config.json) pairs: which class AutoTokenizer builds.
CHOICES = [
    (cls, config)
    for cls in (None, "GPT2Tokenizer", "TokenizersBackend", "Qwen2TokenizerFast", "LlamaTokenizer")
    for config in (
        None,
        {},
        {"model_type": "granite4_vision"},
        {"model_type": "ernie4_5_vl_moe"},
        {"model_type": "ernie4_5_moe_vl"},
        {"model_type": "granite"},
        {"model_type": "llava_next"},
        {"model_type": "qwen2"},
        {"model_type": "qwen3_vl"},
        {"model_type": "llama"},
        {"model_type": "granite4_vision", "tokenizer_class": "GPT2TokenizerFast"},
    )
]


def chosen_class(cls: str | None, config: dict | None) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(FIX / "granite" / "tokenizer.json", tmp)
        (Path(tmp) / "tokenizer_config.json").write_text(json.dumps({} if cls is None else {"tokenizer_class": cls}))
        if config is not None:
            (Path(tmp) / "config.json").write_text(json.dumps(config))
        return type(AutoTokenizer.from_pretrained(tmp)).__name__


def main() -> None:
    folders = {
        "ernie": FIX / "ernie",
        "granite": FIX / "granite",
        "byte-level": built("byte-level", byte_level_bpe(False)),
        "byte-level-prefix": built("byte-level-prefix", byte_level_bpe(True)),
        "metaspace": built("metaspace", metaspace_bpe()),
        "byte-level-decoder": built("byte-level-decoder", byte_level_bpe(False), decoder=True),
        "byte-level-bare": built("byte-level-bare", byte_level_bpe(False), named=False),
        # The legacy special_tokens_map.json overrides tokenizer_config.json's special tokens.
        "byte-level-map": built(
            "byte-level-map",
            byte_level_bpe(False),
            special_tokens_map={
                "bos_token": "<|special_b|>",
                "pad_token": {"content": "<pad>", "lstrip": True},
                "extra_special_tokens": ["<|endoftext|>", "<|special_a|>"],
            },
        ),
    }
    # tokenizer_config.json keys the classes read: (folder, keys) on top of the folder's own.
    variants = [(name, {}) for name in folders] + [
        ("byte-level", {"add_prefix_space": True}),
        ("metaspace", {"add_prefix_space": False}),
        ("metaspace", {"legacy": True}),
    ]
    cases = []
    for name, overrides in variants:
        folder = folders[name]
        # The *Fast aliases are the same classes: one folder is enough to show it.
        for cls in SUPPORTED + REFUSED if name == "granite" else [c for c in SUPPORTED + REFUSED if not c.endswith("Fast")]:
            case = {"folder": str(folder.relative_to(FIX)), "config": overrides, "tokenizer_class": cls}
            if cls in REFUSED:
                case["vlmkit"] = {"code": "TOKENIZER_ERROR", "mentions": ["tokenizer_class", cls]}
            elif name == "byte-level-map" and cls in ("TokenizersBackend", "PreTrainedTokenizerFast"):
                # HF adds special_tokens_map.json's <pad> with lstrip; vlmkit adds tokenizer.json's
                # missing special tokens without options, so it refuses that.
                case["vlmkit"] = {"code": "TOKENIZER_ERROR", "mentions": ["<pad>", "lstrip"]}
            if cls not in REFUSED:
                case["hf"] = run(folder, cls, overrides)
            cases.append(case)
    lines = ",\n".join(json.dumps(c, ensure_ascii=False) for c in cases)
    (OUT / "cases.json").write_text(f"[\n{lines}\n]\n")
    choices = [{"tokenizer_class": c, "config": cfg, "hf": chosen_class(c, cfg)} for c, cfg in CHOICES]
    lines = ",\n".join(json.dumps(c) for c in choices)
    (OUT / "choices.json").write_text(f"[\n{lines}\n]\n")


if __name__ == "__main__":
    main()
