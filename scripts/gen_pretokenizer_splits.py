#!/usr/bin/env python3
"""Writes tests/data/pretokenizer/splits.json: how each byte-level BPE pre-tokenizer splits a set of texts,
computed with Python's `regex` module (a backtracking engine with Unicode properties, like the Oniguruma engine
Hugging Face tokenizers run) from the split patterns the models' tokenizer.json files give.

Each pre-tokenizer is a list of patterns applied in turn: every piece of the previous split is split again,
both the matches and the text between them becoming pieces (Hugging Face's Split with "Isolated" behaviour,
llama.cpp's unicode_regex_split). Contractions are written with explicit [sS] classes, as llama.cpp adapts
them, instead of (?i:...), which would also match 'ſ' (U+017F) for 's'. DeepSeek LLM's "\\s+$" is written
"\\s+\\Z" because Python's $ also matches before a final newline.

Run by hand (the build never runs it):  python3 scripts/gen_pretokenizer_splits.py
Needs: python3-regex (Debian) or `pip install regex`.
"""

import json
import pathlib

import regex

ROOT = pathlib.Path(__file__).resolve().parent.parent

CONTRACTIONS = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
UPPER = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"
LOWER = r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"

# DeepSeek LLM's letter class as code point ranges (its tokenizer.json spells them as characters).
DEEPSEEK_LETTERS = [
    (0x0041, 0x005A), (0x0061, 0x007A), (0x00B5, 0x00B5), (0x00C0, 0x00D6), (0x00D8, 0x00F6), (0x00F8, 0x01BA),
    (0x01BC, 0x01BF), (0x01C4, 0x0293), (0x0295, 0x02AF), (0x0370, 0x0373), (0x0376, 0x0377), (0x037B, 0x037D),
    (0x037F, 0x037F), (0x0386, 0x0386), (0x0388, 0x038A), (0x038C, 0x038C), (0x038E, 0x03A1), (0x03A3, 0x03F5),
    (0x03F7, 0x0481), (0x048A, 0x052F), (0x0531, 0x0556), (0x10A0, 0x10C5), (0x13A0, 0x13F5), (0x13F8, 0x13FD),
    (0x1C90, 0x1CBA), (0x1CBD, 0x1CBF), (0x1D00, 0x1D2B), (0x1D6B, 0x1D77), (0x1D79, 0x1D9A), (0x1E00, 0x1F15),
    (0x1F18, 0x1F1D), (0x1F20, 0x1F45), (0x1F48, 0x1F4D), (0x1F50, 0x1F57), (0x1F59, 0x1F59), (0x1F5B, 0x1F5B),
    (0x1F5D, 0x1F5D), (0x1F5F, 0x1F7D), (0x1F80, 0x1FB4), (0x1FB6, 0x1FBC), (0x1FBE, 0x1FBE), (0x1FC2, 0x1FC4),
    (0x1FC6, 0x1FCC), (0x1FD0, 0x1FD3), (0x1FD6, 0x1FDB), (0x1FE0, 0x1FEC), (0x1FF2, 0x1FF4), (0x1FF6, 0x1FFC),
    (0x2102, 0x2102), (0x2107, 0x2107), (0x210A, 0x2113), (0x2115, 0x2115), (0x2119, 0x211D), (0x2124, 0x2124),
    (0x2126, 0x2126), (0x2128, 0x2128), (0x212A, 0x212D), (0x212F, 0x2134), (0x2139, 0x2139), (0x213C, 0x213F),
    (0x2145, 0x2149), (0x214E, 0x214E), (0x2183, 0x2184), (0x2C00, 0x2C7B), (0x2C7E, 0x2CE4), (0x2CEB, 0x2CEE),
    (0x2CF2, 0x2CF3), (0xA640, 0xA66D), (0xA680, 0xA69B), (0xA722, 0xA76F), (0xA771, 0xA787), (0xA78B, 0xA78E),
    (0xAB70, 0xABBF), (0xFB00, 0xFB06), (0xFB13, 0xFB17), (0xFF21, 0xFF3A), (0xFF41, 0xFF5A), (0x10400, 0x1044F),
    (0x104B0, 0x104D3), (0x104D8, 0x104FB), (0x10C80, 0x10CB2), (0x10CC0, 0x10CF2), (0x118A0, 0x118DF),
    (0x1E900, 0x1E943),
]


def char_class(ranges):
    return "[" + "".join(regex.escape(chr(a)) + "-" + regex.escape(chr(b)) for a, b in ranges) + "]"


DEEPSEEK_PUNCT = char_class([(0x21, 0x2F), (0x3A, 0x7E), (0xFF01, 0xFF0F), (0xFF1A, 0xFF5E), (0x2018, 0x201F),
                             (0x3000, 0x3002)])
DEEPSEEK_CJK = char_class([(0x4E00, 0x9FA5), (0x0800, 0x4E00), (0xAC00, 0xD7FF)])
DEEPSEEK_V3_CJK = char_class([(0x4E00, 0x9FA5), (0x3040, 0x309F), (0x30A0, 0x30FF)])


def llama3_like(word, digits, other):
    return (CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?" + word + r"+|\p{N}" + digits + r"| ?[^\s" + other +
            r"]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def cased(contractions, digits):
    c = CONTRACTIONS + "?" if contractions else ""
    return (r"[^\r\n\p{L}\p{N}]?" + UPPER + "*" + LOWER + "+" + c + r"|[^\r\n\p{L}\p{N}]?" + UPPER + "+" + LOWER +
            "*" + c + r"|\p{N}" + digits + r"| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")


# Keyed by the PreTokenizer enumerator names (core/include/strata/tokenizer.hpp).
PRE_TOKENIZERS = {
    "Default": [r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", r"[0-9][0-9][0-9]"],
    "Gpt2": [GPT2],
    "Llama3": [llama3_like(r"\p{L}", "{1,3}", r"\p{L}\p{N}")],
    "Qwen2": [llama3_like(r"\p{L}", "", r"\p{L}\p{N}")],
    "Qwen35": [llama3_like(r"[\p{L}\p{M}]", "", r"\p{L}\p{M}\p{N}")],
    "DeepseekLlm": [r"[\r\n]", r"\s?" + char_class(DEEPSEEK_LETTERS) + "+", r"\s?" + DEEPSEEK_PUNCT + "+",
                    r"\s+\Z", DEEPSEEK_CJK + "+", r"\p{N}+"],
    "DeepseekCoder": [r"[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", DEEPSEEK_CJK + "+", r"\p{N}"],
    "DeepseekV3": [r"\p{N}{1,3}", DEEPSEEK_V3_CJK + "+",
                   r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"
                   r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "Starcoder": [r"\p{N}", GPT2],
    "Falcon": [r"[\p{P}\$\+<=>\^~\|`]+", GPT2, r"[0-9][0-9][0-9]"],
    "Gpt4o": [cased(True, "{1,3}")],
    "Tekken": [cased(False, "")],
}

# Texts beyond llama.cpp's test vectors, for what those do not reach: letter cases (Lt, Lm, Lo), marks,
# non-Latin digits, CJK and kana, Unicode white space, line breaks, symbols, slashes.
EXTRA_TEXTS = [
    "Hello WORLD HeLLo hELLO CamelCaseWord XMLHttpRequest ÀÉÎ ǅungla Ǆ ǈx ʰʲ",
    "don't DON'T We'Ll I'M you're they'VE she'd 'tis 's",
    "1234567 12 3 ١٢٣٤٥ ½ ⅔ ⅷ x²",
    "e\u0301te\u0301 n\u0303o \u0301alone नमस्ते दुनिया ไทย",
    "中文字符 かなカナ 한국어 漢字かな交じり文",
    "a\u3000b\u00a0c\u2003d \u3000x\u3001y\u3002",
    "  \t\n\r\n  x   \n\n  \r  ",
    "path/to/file//x\n\n//comment\r\n/",
    "$100 + <tag> = ^~|` 50% #hash @at",
    "   leading and trailing   ",
    "emoji 🦙🦙 👍🏽 ❤️",
    "ＡＢＣ ａｂｃ！（）１２３",
    "‘quoted’ “double” — dash … ellipsis «guillemets»",
    "!Hello .world ,x (a) [b] {c} \\d",
    "x\u0085y\u2028z\u2029w",
]


def split(patterns, text):
    pieces = [text]
    for p in patterns:
        rx = regex.compile(p)
        out = []
        for piece in pieces:
            pos = 0
            for m in rx.finditer(piece):
                if m.start() == m.end():
                    continue
                if m.start() > pos:
                    out.append(piece[pos:m.start()])
                out.append(m.group())
                pos = m.end()
            if pos < len(piece):
                out.append(piece[pos:])
        pieces = out
    return pieces


def main():
    inp = (ROOT / "tests/data/vocab/ggml-vocab-gpt-2.gguf.inp").read_text(encoding="utf-8")
    texts = inp.split("\n__ggml_vocab_test__\n")[:-1] + EXTRA_TEXTS
    result = {
        "source": "scripts/gen_pretokenizer_splits.py with Python regex " + regex.__version__,
        "texts": texts,
        "splits": {name: [split(patterns, t) for t in texts] for name, patterns in PRE_TOKENIZERS.items()},
    }
    out = ROOT / "tests/data/pretokenizer/splits.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    # One line per text, so that a change shows as a one-line diff.
    lines = ["{", f' "source": {json.dumps(result["source"])},', ' "texts": [']
    lines += [f"  {json.dumps(t, ensure_ascii=False)}," for t in texts]
    lines[-1] = lines[-1].rstrip(",")
    lines += [" ],", ' "splits": {']
    for k, (name, splits) in enumerate(result["splits"].items()):
        lines.append(f"  {json.dumps(name)}: [")
        lines += [f"   {json.dumps(words, ensure_ascii=False)}," for words in splits]
        lines[-1] = lines[-1].rstrip(",")
        lines.append("  ]" + ("," if k + 1 < len(result["splits"]) else ""))
    lines += [" }", "}"]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    json.loads(out.read_text(encoding="utf-8"))
    print(f"{out}: {len(PRE_TOKENIZERS)} pre-tokenizers x {len(texts)} texts")


if __name__ == "__main__":
    main()
