"""The official OpenAI Python SDK against `palaver serve-demo`, on every demo model.

    python3 tests/sdk/check.py target/debug/palaver

Every response is validated against the SDK's own types (`_strict_response_validation=True`);
`chat.completions.parse`, `responses.parse`, both `stream` helpers and logprobs are exercised
on both APIs. Prints one PASS/FAIL line per case and exits non-zero on any failure.
"""

from __future__ import annotations

import subprocess
import sys
import traceback
from typing import List, Optional

import openai
from pydantic import BaseModel


class Person(BaseModel):
    name: str
    age: int
    tags: List[str]
    nickname: Optional[str]


class Step(BaseModel):
    explanation: str
    output: str


class Reasoning(BaseModel):
    steps: List[Step]
    final_answer: str


MESSAGES = [{"role": "user", "content": "a person"}]
# What each model does besides answering: these end in an error on purpose.
FILTERED = {"demo-safety"}
FAILING = {"demo-error"}
# A Responses model whose reply holds an item type no API defines: checked without strict types.
FUTURE = {"demo-future"}

results: list[tuple[str, bool, str]] = []


def case(name: str, fn) -> None:
    try:
        fn()
        results.append((name, True, ""))
        print(f"PASS {name}", flush=True)
    except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the run
        detail = f"{type(e).__name__}: {e}"
        results.append((name, False, detail))
        print(f"FAIL {name}: {detail}", flush=True)
        traceback.print_exc(limit=3)


def expect_person(p: Optional[Person]) -> None:
    assert isinstance(p, Person), f"parsed is {p!r}"
    assert p.name and isinstance(p.age, int), p


def chat_cases(client: openai.OpenAI, model: str) -> None:
    def parse() -> None:
        c = client.chat.completions.parse(model=model, messages=MESSAGES, response_format=Person)
        expect_person(c.choices[0].message.parsed)
        assert c.usage and c.usage.total_tokens > 0

    def parse_nested() -> None:
        c = client.chat.completions.parse(model=model, messages=MESSAGES, response_format=Reasoning)
        r = c.choices[0].message.parsed
        assert isinstance(r, Reasoning) and r.steps and r.final_answer, r

    def stream() -> None:
        with client.chat.completions.stream(
            model=model, messages=MESSAGES, response_format=Person, stream_options={"include_usage": True}
        ) as s:
            kinds = {type(e).__name__ for e in s}
            final = s.get_final_completion()
        expect_person(final.choices[0].message.parsed)
        assert "ContentDeltaEvent" in kinds, kinds

    def logprobs() -> None:
        c = client.chat.completions.create(model=model, messages=MESSAGES, logprobs=True, top_logprobs=3)
        lp = c.choices[0].logprobs
        assert lp and lp.content, lp
        assert "".join(t.token for t in lp.content) == c.choices[0].message.content
        assert all(len(t.top_logprobs) == 3 and t.logprob <= 0 for t in lp.content)
        chunks = list(client.chat.completions.create(
            model=model, messages=MESSAGES, logprobs=True, top_logprobs=2, stream=True))
        streamed = [t for ch in chunks for c in ch.choices if c.logprobs and c.logprobs.content
                    for t in c.logprobs.content]
        assert streamed and all(len(t.top_logprobs) == 2 for t in streamed)

    if model in FILTERED:
        def filtered() -> None:
            try:
                client.chat.completions.parse(model=model, messages=MESSAGES, response_format=Person)
            except openai.ContentFilterFinishReasonError:
                return
            raise AssertionError("parse did not raise ContentFilterFinishReasonError")
        case(f"{model} chat parse: content filter", filtered)
        return
    if model in FAILING:
        def fails() -> None:
            try:
                client.chat.completions.parse(model=model, messages=MESSAGES, response_format=Person)
            except openai.APIError:
                return
            raise AssertionError("demo-error did not fail")
        case(f"{model} chat parse: API error", fails)
        return
    case(f"{model} chat parse", parse)
    case(f"{model} chat parse nested", parse_nested)
    case(f"{model} chat stream", stream)
    case(f"{model} chat logprobs", logprobs)


def responses_cases(client: openai.OpenAI, model: str) -> None:
    def parse() -> None:
        r = client.responses.parse(model=model, input="a person", text_format=Person)
        expect_person(r.output_parsed)
        assert r.usage and r.usage.input_tokens_details.cache_write_tokens >= 0

    def stream() -> None:
        with client.responses.stream(model=model, input="a person", text_format=Person) as s:
            kinds = {e.type for e in s}
            final = s.get_final_response()
        expect_person(final.output_parsed)
        assert "response.output_text.done" in kinds, kinds

    def logprobs() -> None:
        r = client.responses.create(model=model, input="hi", include=["message.output_text.logprobs"], top_logprobs=3)
        texts = [c for o in r.output if o.type == "message" for c in o.content if c.type == "output_text"]
        assert texts and texts[0].logprobs, texts
        assert "".join(t.token for t in texts[0].logprobs) == texts[0].text
        events = list(client.responses.create(model=model, input="hi", include=["message.output_text.logprobs"],
                                              top_logprobs=2, stream=True))
        done = [e for e in events if e.type == "response.output_text.done"]
        assert done and done[-1].logprobs and len(done[-1].logprobs[0].top_logprobs) == 2

    if model in FILTERED:
        def incomplete() -> None:
            r = client.responses.create(model=model, input="a person", text={"format": {"type": "json_object"}})
            assert r.status == "incomplete" and r.incomplete_details.reason == "content_filter", r.status
        case(f"{model} responses: incomplete (content filter)", incomplete)
        return
    if model in FAILING:
        def fails() -> None:
            try:
                client.responses.parse(model=model, input="a person", text_format=Person)
            except openai.APIError:
                return
            raise AssertionError("demo-error did not fail")
        case(f"{model} responses parse: API error", fails)
        return
    case(f"{model} responses parse", parse)
    case(f"{model} responses stream", stream)
    case(f"{model} responses logprobs", logprobs)


def batch_cases(client: openai.OpenAI) -> None:
    """files.create, batches.create/retrieve/list/cancel and files.content, strictly typed."""
    import io
    import json
    import time

    lines = [
        {"custom_id": f"c{i}", "method": "POST", "url": "/v1/chat/completions",
         "body": {"model": "demo", "messages": [{"role": "user", "content": text}]}}
        for i, text in enumerate(["one", "two [batch-fail]", "three"])
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    state = {}

    def upload() -> None:
        f = client.files.create(file=("in.jsonl", io.BytesIO(data)), purpose="batch")
        assert f.purpose == "batch" and f.bytes == len(data) and f.filename == "in.jsonl", f
        assert client.files.retrieve(f.id).id == f.id
        state["file"] = f.id

    def run() -> None:
        b = client.batches.create(input_file_id=state["file"], endpoint="/v1/chat/completions",
                                  completion_window="24h", metadata={"demo_ms": "300"})
        assert b.status == "validating", b.status
        for _ in range(200):
            b = client.batches.retrieve(b.id)
            if b.status in ("completed", "failed", "expired", "cancelled"):
                break
            time.sleep(0.05)
        assert b.status == "completed", b
        assert (b.request_counts.total, b.request_counts.completed, b.request_counts.failed) == (3, 2, 1), b
        out = [json.loads(l) for l in client.files.content(b.output_file_id).text.splitlines()]
        assert sorted(o["custom_id"] for o in out) == ["c0", "c2"], out
        assert out[0]["response"]["status_code"] == 200
        err = [json.loads(l) for l in client.files.content(b.error_file_id).text.splitlines()]
        assert [e["custom_id"] for e in err] == ["c1"], err
        assert any(x.id == b.id for x in client.batches.list(limit=5))

    def cancel() -> None:
        b = client.batches.create(input_file_id=state["file"], endpoint="/v1/responses",
                                  completion_window="24h", metadata={"demo_ms": "20000"})
        c = client.batches.cancel(b.id)
        assert c.status == "cancelling", c.status

    case("files create", upload)
    case("batches create, retrieve, list, files content", run)
    case("batches cancel", cancel)


def main() -> int:
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/debug/palaver"
    server = subprocess.Popen([binary, "serve-demo"], stdout=subprocess.PIPE, text=True)
    try:
        base_url = server.stdout.readline().strip()
        strict = openai.OpenAI(base_url=base_url, api_key="sk-demo", max_retries=0,
                               _strict_response_validation=True)
        lenient = openai.OpenAI(base_url=base_url, api_key="sk-demo", max_retries=0)
        models = [m.id for m in strict.models.list()]
        case("models list", lambda: None if len(models) >= 9 else (_ for _ in ()).throw(AssertionError(models)))
        for model in models:
            chat_cases(strict, model)
            responses_cases(lenient if model in FUTURE else strict, model)
        batch_cases(strict)
    finally:
        server.terminate()
        server.wait(timeout=10)
    failed = [r for r in results if not r[1]]
    print(f"sdk-python (openai {openai.__version__}): {len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
