#!/usr/bin/env python3
"""An MCP server built with the PyPI `mcp` package (FastMCP) with OAuth turned on, for palaver's
tests: streamable HTTP at http://127.0.0.1:PORT/mcp, a resource server whose tokens come from the
authorization server at the URL given as the first argument (tests/mcp_server/oauth_as.py),
checked there by introspection and bound to this server as their resource (RFC 8707). Its
401 answers carry `WWW-Authenticate: Bearer … resource_metadata=…` and it serves the RFC 9728
protected-resource metadata: all of that is the `mcp` package's, not ours.

Prints `port N` on stdout once listening. Tool: `whisper(text)` → "the protected server heard: TEXT".
"""

import asyncio
import socket
import sys

import httpx
import uvicorn
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

AS_URL = sys.argv[1]


class Introspection(TokenVerifier):
    """Asks the authorization server whether a token is active (RFC 7662)."""

    async def verify_token(self, token: str) -> AccessToken | None:
        async with httpx.AsyncClient() as client:
            r = await client.post(AS_URL + "/introspect", data={"token": token})
        v = r.json()
        if not v.get("active"):
            return None
        return AccessToken(token=token, client_id=v["client_id"], scopes=v.get("scope", "").split(),
                           expires_at=v.get("exp"), resource=v.get("aud"))


def main():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    mcp = FastMCP(
        "oauth-protected",
        host="127.0.0.1",
        port=port,
        token_verifier=Introspection(),
        auth=AuthSettings(
            issuer_url=AS_URL,
            resource_server_url=f"http://127.0.0.1:{port}/mcp",
            required_scopes=["mcp:tools"],
            validate_token_resource=True,
        ),
        log_level="WARNING",
    )

    # Read-only, so headless `--tools auto` runs it without asking.
    @mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def whisper(text: str) -> str:
        """Repeats the text, for callers with a valid token only."""
        return f"the protected server heard: {text}"

    config = uvicorn.Config(mcp.streamable_http_app(), log_level="warning")
    server = uvicorn.Server(config)
    print(f"port {port}", flush=True)
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
