#!/usr/bin/env python3
"""A tiny MCP server for palaver's tests: newline-delimited JSON-RPC 2.0 over stdio.

Modes (first argument):
  (none)   a normal server with the tools below
  --exit   prints to stderr and exits at once with status 3
  --hang   reads requests but never answers
  --crash-on-call  answers the handshake and tools/list, then exits on the first tools/call
  --endless-tools  tools/list pages forever, 100 tools a page
  --huge-list      tools/list answers with one 40 MB page
  --images         also lists `images`, which returns `count` 1x1 PNG images
"""

import json
import os
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else ""

# Two pages, to exercise pagination of tools/list.
PAGE_1 = [
    {
        "name": "echo",
        "description": "Echoes its arguments as JSON.",
        "inputSchema": {
            "type": "object",
            "properties": {"x": {"type": "integer"}, "text": {"type": "string"}},
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "write_note",
        "description": "Pretends to write a note.",
        "inputSchema": {
            "type": "object",
            "properties": {"note": {"type": "string"}},
            "required": ["note"],
        },
        "annotations": {"readOnlyHint": False, "destructiveHint": False},
    },
    {
        "name": "fail",
        "description": "Always fails.",
        "inputSchema": {"type": "object", "properties": {}},
    },
]
PAGE_2 = [
    {
        # No description, no annotations.
        "name": "mixed",
        "inputSchema": {"type": "object"},
    },
    {
        "name": "structured",
        "description": "Returns only structured content.",
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "env",
        "description": "Returns PALAVER_MCP_TEST from its environment.",
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
    },
    {
        # Clashes with palaver's built-in tool of the same name.
        "name": "current_time",
        "description": "The server's idea of the time.",
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "sleep",
        "description": "Sleeps for `seconds`.",
        "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}},
        "annotations": {"readOnlyHint": True},
    },
]


# A 1x1 PNG, as an MCP image block carries it.
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
IMAGES_TOOL = {
    "name": "images",
    "description": "Returns `count` tiny PNG images.",
    "inputSchema": {"type": "object", "properties": {"count": {"type": "integer"}}},
    "annotations": {"readOnlyHint": True},
}


# Prompts (prompts/list, prompts/get): `greet` has a required argument and an optional one.
PROMPTS = [
    {
        "name": "greet",
        "description": "Greets someone\x1b[31m politely.",
        "arguments": [
            {"name": "who", "description": "whom to greet", "required": True},
            {"name": "mood", "description": "how"},
        ],
    },
    {"name": "plain", "description": "A prompt without arguments."},
]


def get_prompt(name, args):
    if name == "greet":
        if "who" not in args:
            return None
        text_ = "Please greet %s in a %s way." % (args["who"], args.get("mood", "plain"))
        return {"description": "a greeting", "messages": [{"role": "user", "content": {"type": "text", "text": text_}}]}
    if name == "plain":
        return {"messages": [{"role": "user", "content": {"type": "text", "text": "A plain prompt from the server."}}]}
    return None


# Resources (resources/list, resources/read): a text note and a 1x1 PNG.
RESOURCES = [
    {"uri": "test://notes.txt", "name": "notes", "mimeType": "text/plain"},
    {"uri": "test://dot.png", "name": "dot", "mimeType": "image/png"},
]


def read_resource(uri):
    if uri == "test://notes.txt":
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "The secret word is pineapple."}]}
    if uri == "test://dot.png":
        return {"contents": [{"uri": uri, "mimeType": "image/png", "blob": PNG_1X1}]}
    return None


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def result(id_, res):
    send({"jsonrpc": "2.0", "id": id_, "result": res})


def error(id_, code, message):
    send({"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}})


def text(t, is_error=False):
    return {"content": [{"type": "text", "text": t}], "isError": is_error}


def call(name, args):
    if name == "echo":
        return text(json.dumps(args, sort_keys=True))
    if name == "write_note":
        return text("noted: " + str(args.get("note", "")))
    if name == "fail":
        return text("something went wrong", is_error=True)
    if name == "mixed":
        return {
            "content": [
                {"type": "text", "text": "first"},
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
                {"type": "text", "text": "second"},
            ]
        }
    if name == "structured":
        return {"content": [], "structuredContent": {"answer": 42}}
    if name == "env":
        return text(os.environ.get("PALAVER_MCP_TEST", "<unset>"))
    if name == "current_time":
        return text("tea time")
    if name == "images":
        count = int(args.get("count", 1))
        blocks = [{"type": "image", "data": PNG_1X1, "mimeType": "image/png"} for _ in range(count)]
        return {"content": [{"type": "text", "text": "%d images" % count}] + blocks}
    if name == "huge":
        # 40 MB in one message, past palaver's limit for one MCP message.
        return text("x" * (40 * 1024 * 1024))
    if name == "sleep":
        time.sleep(float(args.get("seconds", 1)))
        return text("slept")
    return None


def main():
    sys.stderr.write("test MCP server starting (this must not reach the terminal)\n")
    sys.stderr.flush()
    if MODE == "--exit":
        sys.stderr.write("fatal: cannot start\n")
        sys.exit(3)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        if MODE == "--hang":
            continue
        method = msg.get("method")
        id_ = msg.get("id")
        if id_ is None:
            # A notification (notifications/initialized, notifications/cancelled, ...).
            continue
        params = msg.get("params") or {}
        if method == "initialize":
            result(
                id_,
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
                    "serverInfo": {"name": "palaver-test-server", "version": "0.1.0"},
                },
            )
        elif method == "ping":
            result(id_, {})
        elif method == "tools/list" and MODE == "--endless-tools":
            n = int(params.get("cursor") or 0)
            page = [{"name": "t%d" % i, "inputSchema": {"type": "object"}} for i in range(n, n + 100)]
            result(id_, {"tools": page, "nextCursor": str(n + 100)})
        elif method == "tools/list" and MODE == "--huge-list":
            result(id_, {"tools": [{"name": "big", "description": "d" * (40 * 1024 * 1024), "inputSchema": {"type": "object"}}]})
        elif method == "tools/list":
            if params.get("cursor") == "page2":
                result(id_, {"tools": PAGE_2 + ([IMAGES_TOOL] if MODE == "--images" else [])})
            else:
                result(id_, {"tools": PAGE_1, "nextCursor": "page2"})
        elif method == "prompts/list":
            result(id_, {"prompts": PROMPTS})
        elif method == "prompts/get":
            res = get_prompt(params.get("name"), params.get("arguments") or {})
            if res is None:
                error(id_, -32602, "Invalid prompt or arguments: " + str(params.get("name")))
            else:
                result(id_, res)
        elif method == "resources/list":
            result(id_, {"resources": RESOURCES})
        elif method == "resources/read":
            res = read_resource(params.get("uri"))
            if res is None:
                error(id_, -32002, "Resource not found: " + str(params.get("uri")))
            else:
                result(id_, res)
        elif method == "tools/call":
            if MODE == "--crash-on-call":
                sys.exit(1)
            res = call(params.get("name"), params.get("arguments") or {})
            if res is None:
                error(id_, -32602, "Unknown tool: " + str(params.get("name")))
            else:
                result(id_, res)
        else:
            error(id_, -32601, "Method not found: " + str(method))


if __name__ == "__main__":
    main()
