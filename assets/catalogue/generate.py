#!/usr/bin/env python3
"""Builds palaver's model catalogue (assets/catalogue/models.tsv) from LiteLLM's
model_prices_and_context_window_backup.json (MIT, inside the `litellm` wheel on PyPI).

    pip download litellm --no-deps -d /tmp/litellm
    unzip -o /tmp/litellm/litellm-*.whl 'litellm/model_prices_and_context_window_backup.json' -d /tmp/litellm
    python3 assets/catalogue/generate.py /tmp/litellm/litellm/model_prices_and_context_window_backup.json \
        --version 1.110.2 > assets/catalogue/models.tsv

The output is palaver's own format (read by src/config/catalogue.rs), one model a line:

    provider/id  context  max_output  input  output  cache_read  cache_write  reasoning  abilities

Prices are dollars per million tokens; an empty field is unknown. `abilities` holds a letter
per ability the source states: upper case when the model has it, lower case when it has not,
absent when the source does not say (i image, p pdf, a audio input, t tool calling,
r reasoning, s structured output). LiteLLM reads a missing `supports_vision` as "no" (its
`supports_vision()` returns False), so this does too: a chat model without it is written `i`.
Lines come in priority order: the first provider that
has an id answers for the bare id (so `gpt-4o-mini` is OpenAI's, not Azure's).
"""
import argparse
import datetime
import json
import sys

# LiteLLM's provider name -> palaver's (the preset names in assets/providers.toml), in the
# order a bare id is claimed: the model's maker first, then hosts and routers.
PROVIDERS = [
    ("openai", "openai"),
    ("anthropic", "anthropic"),
    ("gemini", "gemini"),
    ("mistral", "mistral"),
    ("deepseek", "deepseek"),
    ("xai", "xai"),
    ("groq", "groq"),
    ("together_ai", "together"),
    ("fireworks_ai", "fireworks"),
    ("cerebras", "cerebras"),
    ("perplexity", "perplexity"),
    ("deepinfra", "deepinfra"),
    ("databricks", "databricks"),
    ("openrouter", "openrouter"),
    ("ollama", "ollama"),
    ("azure", "azure"),
]
MODES = {"chat", "responses", None}
ABILITIES = [
    ("supports_vision", "i"),
    ("supports_pdf_input", "p"),
    ("supports_audio_input", "a"),
    ("supports_function_calling", "t"),
    ("supports_reasoning", "r"),
    ("supports_response_schema", "s"),
]


def per_million(v):
    """A per-token price as dollars per million tokens, shortest exact-enough text."""
    if not isinstance(v, (int, float)):
        return ""
    return f"{v * 1_000_000:.6g}"


def tokens(v):
    return str(int(v)) if isinstance(v, (int, float)) and v > 0 else ""


def abilities(e):
    out = ""
    for key, letter in ABILITIES:
        if key in e:
            out += letter.upper() if e[key] else letter
        elif key == "supports_vision":
            out += letter
    return out


def rows(data):
    seen = set()
    for src, name in PROVIDERS:
        for key in sorted(data):
            e = data[key]
            if not isinstance(e, dict) or e.get("litellm_provider") != src or e.get("mode") not in MODES:
                continue
            mid = key[len(src) + 1 :] if key.startswith(src + "/") else key
            # Azure's regional copies (azure/eu/…) are the same model at another price tier.
            if src == "azure" and "/" in mid:
                continue
            full = f"{name}/{mid}"
            if full in seen or "\t" in full or "\n" in full:
                continue
            seen.add(full)
            # An entry with neither a window nor a price tells palaver nothing worth a line.
            if not any(isinstance(e.get(k), (int, float)) for k in ("max_input_tokens", "max_tokens", "input_cost_per_token")):
                continue
            reasoning = per_million(e.get("output_cost_per_reasoning_token"))
            if reasoning == per_million(e.get("output_cost_per_token")):
                reasoning = ""
            yield [
                full,
                tokens(e.get("max_input_tokens") or e.get("max_tokens")),
                tokens(e.get("max_output_tokens")),
                per_million(e.get("input_cost_per_token")),
                per_million(e.get("output_cost_per_token")),
                per_million(e.get("cache_read_input_token_cost")),
                per_million(e.get("cache_creation_input_token_cost")),
                reasoning,
                abilities(e),
            ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("--version", default="unknown", help="the litellm release the file came from")
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    a = ap.parse_args()
    with open(a.source, encoding="utf-8") as f:
        data = json.load(f)
    out = sys.stdout
    out.write(f"#palaver-catalogue 1\tsource=LiteLLM {a.version} (MIT)\tdate={a.date}\n")
    for r in rows(data):
        out.write("\t".join(r).rstrip("\t") + "\n")


if __name__ == "__main__":
    main()
