#!/usr/bin/env python3
"""A tiny OpenAI-compatible server that misbehaves on purpose, for the faults that
llmock and aimock do not script (or not precisely enough).

    python3 faultserver.py PORT

Binds 127.0.0.1 only. The request's `model` picks the behaviour, for both
`POST /v1/chat/completions` and `POST /v1/responses`, streaming or not:

  ok                a normal reply: TEXT, finish, usage
  truncated         three text deltas, then a clean end of body: no finish, no [DONE]
  malformed         text, one frame that is not JSON, more text, a normal finish
  malformed-end     text, then a frame that is not JSON, then the end of body (no finish)
  done-trailer      a normal reply; on the Responses API followed by `data: [DONE]` after
                    response.completed, as the LiteLLM proxy sends it
  drop-before       reads the request and closes the socket without a byte
  drop-after-1      headers and one text event, then the socket is cut
  big-delta         one 10 MiB text delta (BIG), then a normal finish
  unknown-events    comments, unknown `event:` names, unknown JSON types and an unknown
                    Responses output item, around a normal reply
  retry-date        429 with `Retry-After` as an HTTP date 1 s ahead, then a normal reply
  html-502          502 with an HTML body (what a real gateway sends), then a normal reply
  content-filter    text, then a content_filter stop (Responses: status incomplete,
                    incomplete_details.reason content_filter)
  error-frame       text, then an error frame in the stream (chat: {"error":…};
                    Responses: `response.failed`)

Standard library only, so it runs even when no package could be installed.
"""

from __future__ import annotations

import email.utils
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TEXT = "Fault server says hello in six words."
BIG = "abcdefghij" * (1024 * 1024)  # 10 MiB
PARTS = ["Alpha ", "beta ", "gamma ", "delta ", "epsilon."]

_counts: dict[tuple, int] = {}
_lock = threading.Lock()


def seen(key: tuple) -> int:
    """How many times this (model, path, prompt) was asked before."""
    with _lock:
        n = _counts.get(key, 0)
        _counts[key] = n + 1
        return n


def chat_chunk(delta: dict | None = None, finish: str | None = None, usage: dict | None = None) -> dict:
    chunk = {"id": "chatcmpl-fault", "object": "chat.completion.chunk", "created": 1, "model": "fault",
             "choices": [] if delta is None and finish is None else
             [{"index": 0, "delta": delta or {}, "finish_reason": finish}]}
    if usage is not None:
        chunk["usage"] = usage
    return chunk


USAGE_CHAT = {"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11}
USAGE_RESP = {"input_tokens": 5, "output_tokens": 6, "total_tokens": 11}


def resp_obj(status: str, text: str, extra: dict | None = None) -> dict:
    r = {"id": "resp_fault", "object": "response", "created_at": 1, "model": "fault", "status": status,
         "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                     "content": [{"type": "output_text", "text": text, "annotations": []}]}],
         "usage": USAGE_RESP}
    r.update(extra or {})
    return r


def resp_head() -> list[tuple[str, dict]]:
    return [
        ("response.created", {"type": "response.created", "response": {"id": "resp_fault", "status": "in_progress",
                                                                         "model": "fault", "output": []}}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                        "item": {"type": "message", "id": "msg_1", "status": "in_progress",
                                                 "role": "assistant", "content": []}}),
    ]


def resp_delta(d: str) -> tuple[str, dict]:
    return ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "msg_1",
                                           "output_index": 0, "content_index": 0, "delta": d})


def resp_done(text: str, status: str = "completed", extra: dict | None = None) -> tuple[str, dict]:
    kind = {"completed": "response.completed", "incomplete": "response.incomplete",
            "failed": "response.failed"}[status]
    return (kind, {"type": kind, "response": resp_obj(status, text, extra)})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "faultserver"

    def log_message(self, fmt, *args):  # keep the suite's output clean
        pass

    # -- plumbing -------------------------------------------------------------
    def start_sse(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def sse(self, data, event: str | None = None) -> None:
        payload = data if isinstance(data, str) else json.dumps(data)
        head = f"event: {event}\n" if event else ""
        self.chunk(f"{head}data: {payload}\n\n".encode())

    def raw(self, text: str) -> None:
        self.chunk(text.encode())

    def cut(self) -> None:
        """Drop the connection with no chunked terminator (an RST, not a FIN)."""
        self.wfile.flush()
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        except OSError:
            pass
        self.connection.close()
        self.close_connection = True

    def json_reply(self, status: int, body, headers: dict | None = None, content_type="application/json") -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    # -- routes -----------------------------------------------------------------
    def do_GET(self):
        if self.path.rstrip("/") in ("/health", "/v1/models"):
            self.json_reply(200, {"object": "list", "data": [{"id": "ok", "object": "model"}]})
        else:
            self.json_reply(404, {"error": {"message": "not found"}})

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}")
        path = self.path.split("?")[0]
        if path.endswith("/chat/completions"):
            api = "chat"
        elif path.endswith("/responses"):
            api = "responses"
        else:
            self.json_reply(404, {"error": {"message": f"no route {path}"}})
            return
        model = body.get("model", "ok")
        stream = bool(body.get("stream"))
        prompt = json.dumps(body.get("messages") or body.get("input"))
        attempt = seen((model, api, prompt))
        fn = getattr(self, "s_" + model.replace("-", "_"), None)
        if fn is None:
            self.json_reply(404, {"error": {"message": f"unknown scenario model {model}", "type": "invalid_request_error"}})
            return
        fn(api, stream, attempt)

    # -- a normal reply, in any shape --------------------------------------------
    def normal(self, api: str, stream: bool, text: str = TEXT, pieces: list[str] | None = None) -> None:
        pieces = pieces or [text[i:i + 8] for i in range(0, len(text), 8)]
        if not stream:
            if api == "chat":
                self.json_reply(200, {"id": "chatcmpl-fault", "object": "chat.completion", "created": 1,
                                      "model": "fault", "usage": USAGE_CHAT, "choices": [
                                          {"index": 0, "finish_reason": "stop",
                                           "message": {"role": "assistant", "content": text}}]})
            else:
                self.json_reply(200, resp_obj("completed", text))
            return
        self.start_sse()
        if api == "chat":
            self.sse(chat_chunk({"role": "assistant", "content": ""}))
            for p in pieces:
                self.sse(chat_chunk({"content": p}))
            self.sse(chat_chunk({}, "stop"))
            self.sse(chat_chunk(usage=USAGE_CHAT))
            self.sse("[DONE]")
        else:
            for ev, d in resp_head():
                self.sse(d, ev)
            for p in pieces:
                ev, d = resp_delta(p)
                self.sse(d, ev)
            ev, d = resp_done(text)
            self.sse(d, ev)
        self.end_chunks()

    def s_ok(self, api, stream, attempt):
        self.normal(api, stream)

    def s_truncated(self, api, stream, attempt):
        self.start_sse()
        if api == "chat":
            self.sse(chat_chunk({"role": "assistant", "content": ""}))
            for p in PARTS[:3]:
                self.sse(chat_chunk({"content": p}))
        else:
            for ev, d in resp_head():
                self.sse(d, ev)
            for p in PARTS[:3]:
                ev, d = resp_delta(p)
                self.sse(d, ev)
        self.end_chunks()  # a clean end of body, but no finish and no terminator

    def s_malformed(self, api, stream, attempt):
        self.start_sse()
        if api == "chat":
            self.sse(chat_chunk({"role": "assistant", "content": ""}))
            self.sse(chat_chunk({"content": PARTS[0]}))
            self.raw('data: {"id":"chatcmpl-fault","choices":[{"index":0,"delta":{"content":"LOST\n\n')
            for p in PARTS[1:]:
                self.sse(chat_chunk({"content": p}))
            self.sse(chat_chunk({}, "stop"))
            self.sse(chat_chunk(usage=USAGE_CHAT))
            self.sse("[DONE]")
        else:
            for ev, d in resp_head():
                self.sse(d, ev)
            ev, d = resp_delta(PARTS[0])
            self.sse(d, ev)
            self.raw('event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"LOST\n\n')
            for p in PARTS[1:]:
                ev, d = resp_delta(p)
                self.sse(d, ev)
            ev, d = resp_done("".join(PARTS))
            self.sse(d, ev)
        self.end_chunks()

    def s_malformed_end(self, api, stream, attempt):
        self.start_sse()
        if api == "chat":
            self.sse(chat_chunk({"role": "assistant", "content": PARTS[0]}))
            self.raw('data: {"id":"chatcmpl-fault","choices":[{"index":0,"delta":{},"finish_reason":"st\n\n')
        else:
            for ev, d in resp_head():
                self.sse(d, ev)
            ev, d = resp_delta(PARTS[0])
            self.sse(d, ev)
            self.raw('event: response.completed\ndata: {"type":"response.completed","response":{"id":"resp_fa\n\n')
        self.end_chunks()

    def s_done_trailer(self, api, stream, attempt):
        if api == "chat" or not stream:
            self.normal(api, stream)
            return
        self.start_sse()
        for ev, d in resp_head():
            self.sse(d, ev)
        ev, d = resp_delta(TEXT)
        self.sse(d, ev)
        ev, d = resp_done(TEXT)
        self.sse(d, ev)
        self.sse("[DONE]")
        self.end_chunks()

    def s_drop_before(self, api, stream, attempt):
        self.cut()

    def s_drop_after_1(self, api, stream, attempt):
        self.start_sse()
        if api == "chat":
            self.sse(chat_chunk({"role": "assistant", "content": PARTS[0]}))
        else:
            for ev, d in resp_head():
                self.sse(d, ev)
            ev, d = resp_delta(PARTS[0])
            self.sse(d, ev)
        time.sleep(0.05)
        self.cut()

    def s_big_delta(self, api, stream, attempt):
        self.normal(api, stream, BIG, [BIG])

    def s_unknown_events(self, api, stream, attempt):
        if not stream:
            if api == "chat":
                self.json_reply(200, {"id": "chatcmpl-fault", "object": "chat.completion", "created": 1,
                                      "model": "fault", "usage": USAGE_CHAT, "x_vendor_extension": {"a": 1},
                                      "choices": [{"index": 0, "finish_reason": "stop", "x_choice_extra": True,
                                                   "message": {"role": "assistant", "content": TEXT,
                                                               "x_message_extra": [1, 2]}}]})
            else:
                r = resp_obj("completed", TEXT)
                r["output"].insert(0, {"type": "mystery_item", "id": "mys_1", "status": "completed", "payload": 42})
                self.json_reply(200, r)
            return
        self.start_sse()
        self.raw(": keep-alive comment\n\n")
        if api == "chat":
            self.sse(chat_chunk({"role": "assistant", "content": ""}))
            self.sse({"type": "vendor.keepalive", "seq": 1}, "ping")
            self.sse(chat_chunk({"content": TEXT[:12]}))
            self.raw("event: vendor-metrics\ndata: {\"latency_ms\": 12}\n\n")
            self.sse({"object": "chat.completion.chunk", "choices": [], "x_weird": True})
            self.sse(chat_chunk({"content": TEXT[12:]}))
            self.raw("retry: 1000\nid: 7\n\n")
            self.sse(chat_chunk({}, "stop"))
            self.sse(chat_chunk(usage=USAGE_CHAT))
            self.sse("[DONE]")
        else:
            for ev, d in resp_head():
                self.sse(d, ev)
            self.sse({"type": "response.vendor_progress", "percent": 50}, "response.vendor_progress")
            ev, d = resp_delta(TEXT[:12])
            self.sse(d, ev)
            self.sse({"type": "response.output_item.added", "output_index": 1,
                      "item": {"type": "mystery_item", "id": "mys_1", "status": "in_progress"}},
                     "response.output_item.added")
            self.sse({"type": "response.mystery_item.progress", "output_index": 1, "item_id": "mys_1"},
                     "response.mystery_item.progress")
            self.sse({"type": "totally.unknown", "x": 1}, "totally.unknown")
            ev, d = resp_delta(TEXT[12:])
            self.sse(d, ev)
            ev, d = resp_done(TEXT)
            self.sse(d, ev)
        self.end_chunks()

    def s_retry_date(self, api, stream, attempt):
        if attempt == 0:
            when = email.utils.formatdate(time.time() + 2, usegmt=True)
            self.json_reply(429, {"error": {"message": "Slow down (fault server)", "type": "rate_limit_error"}},
                            {"Retry-After": when})
            return
        self.normal(api, stream)

    def s_html_502(self, api, stream, attempt):
        if attempt == 0:
            self.json_reply(502, b"<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad "
                                 b"Gateway</h1></center><hr><center>nginx</center></body></html>",
                            content_type="text/html")
            return
        self.normal(api, stream)

    def s_content_filter(self, api, stream, attempt):
        text = "I started to answer but"
        if not stream:
            if api == "chat":
                self.json_reply(200, {"id": "chatcmpl-fault", "object": "chat.completion", "created": 1,
                                      "model": "fault", "usage": USAGE_CHAT, "choices": [
                                          {"index": 0, "finish_reason": "content_filter",
                                           "message": {"role": "assistant", "content": text}}]})
            else:
                self.json_reply(200, resp_obj("incomplete", text,
                                              {"incomplete_details": {"reason": "content_filter"}}))
            return
        self.start_sse()
        if api == "chat":
            self.sse(chat_chunk({"role": "assistant", "content": text}))
            self.sse(chat_chunk({}, "content_filter"))
            self.sse(chat_chunk(usage=USAGE_CHAT))
            self.sse("[DONE]")
        else:
            for ev, d in resp_head():
                self.sse(d, ev)
            ev, d = resp_delta(text)
            self.sse(d, ev)
            ev, d = resp_done(text, "incomplete", {"incomplete_details": {"reason": "content_filter"}})
            self.sse(d, ev)
        self.end_chunks()

    def s_error_frame(self, api, stream, attempt):
        self.start_sse()
        if api == "chat":
            self.sse(chat_chunk({"role": "assistant", "content": PARTS[0]}))
            self.sse({"error": {"message": "The server had an error while processing your request (fault server)",
                                "type": "server_error", "code": "server_error"}})
        else:
            for ev, d in resp_head():
                self.sse(d, ev)
            ev, d = resp_delta(PARTS[0])
            self.sse(d, ev)
            ev, d = resp_done(PARTS[0], "failed", {"error": {"code": "server_error",
                                                            "message": "The model failed mid-answer (fault server)"}})
            self.sse(d, ev)
        self.end_chunks()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main() -> None:
    port = int(sys.argv[1])
    srv = Server(("127.0.0.1", port), Handler)
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
