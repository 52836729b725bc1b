#!/usr/bin/env python3
"""A small OAuth 2.1 authorization server on 127.0.0.1 for palaver's MCP OAuth tests.

Serves RFC 8414 metadata, dynamic client registration (RFC 7591), /authorize that redirects
straight back with a code (the test plays the browser by GETting the URL palaver prints),
/token with the authorization_code grant (PKCE S256 verified, redirect_uri and resource
checked) and the refresh_token grant (rotating), /introspect for the resource server,
/revoke (RFC 7009), and two admin endpoints for the test: POST /admin/expire (every access
token issued so far stops being valid) and POST /admin/ttl?seconds=N (the lifetime of the
access tokens issued from then on).

Prints `port N` on stdout once listening; appends one line per event to the log file given as
the first argument (`register`, `authorize`, `token authorization_code`, `token refresh_token`,
`revoke`, `introspect active|inactive`, and `refused …` with the reason).
"""

import base64
import hashlib
import json
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

LOG = sys.argv[1] if len(sys.argv) > 1 else "/dev/null"
LOCK = threading.Lock()
CLIENTS = {}  # client_id -> registration
CODES = {}  # code -> {client_id, redirect_uri, challenge, resource, scope}
ACCESS = {}  # token -> {client_id, resource, scope, exp}
REFRESH = {}  # token -> {client_id, resource, scope}
TTL = [3600]
BASE = [""]
# OAUTH_AS_MODE: `bad-issuer` (its metadata names another issuer), `control-token` (the access
# token it issues holds a control character). With either it is its own protected resource too:
# POST /mcp answers 401 and /.well-known/oauth-protected-resource names this server.
MODE = __import__("os").environ.get("OAUTH_AS_MODE", "")


def log(line):
    with LOCK, open(LOG, "a") as f:
        f.write(line + "\n")


def s256(verifier):
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def issue(client_id, resource, scope):
    access, refresh = "at-" + secrets.token_urlsafe(16), "rt-" + secrets.token_urlsafe(16)
    ACCESS[access] = {"client_id": client_id, "resource": resource, "scope": scope, "exp": time.time() + TTL[0]}
    REFRESH[refresh] = {"client_id": client_id, "resource": resource, "scope": scope}
    return {"access_token": access, "token_type": "Bearer", "expires_in": TTL[0], "refresh_token": refresh, "scope": scope}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, status, body, headers=None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def refuse(self, why, error="invalid_request", status=400):
        log(f"refused {why}")
        self.reply(status, {"error": error, "error_description": why})

    def form(self):
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n).decode()
        if self.headers.get("Content-Type", "").startswith("application/json"):
            return json.loads(raw or "{}")
        return {k: v[0] for k, v in parse_qs(raw).items()}

    def do_GET(self):
        url = urlparse(self.path)
        if url.path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
            b = BASE[0]
            return self.reply(200, {
                "issuer": "https://issuer.example" if MODE == "bad-issuer" else b,
                "authorization_endpoint": b + "/authorize",
                "token_endpoint": b + "/token",
                "registration_endpoint": b + "/register",
                "revocation_endpoint": b + "/revoke",
                "introspection_endpoint": b + "/introspect",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "scopes_supported": ["mcp:tools"],
            })
        if url.path == "/.well-known/oauth-protected-resource" and MODE:
            return self.reply(200, {"resource": BASE[0] + "/mcp", "authorization_servers": [BASE[0]]})
        if url.path == "/authorize":
            return self.authorize({k: v[0] for k, v in parse_qs(url.query).items()})
        self.reply(404, {"error": "not_found"})

    def authorize(self, q):
        client = CLIENTS.get(q.get("client_id", ""))
        if client is None:
            return self.refuse("unknown client")
        if q.get("redirect_uri") not in client["redirect_uris"]:
            return self.refuse("redirect_uri not registered")
        if q.get("response_type") != "code" or q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            return self.refuse("PKCE S256 and response_type=code are required")
        if not q.get("resource"):
            return self.refuse("the resource parameter (RFC 8707) is required")
        code = "code-" + secrets.token_urlsafe(12)
        CODES[code] = {"client_id": q["client_id"], "redirect_uri": q["redirect_uri"], "challenge": q["code_challenge"],
                       "resource": q["resource"], "scope": q.get("scope", "mcp:tools")}
        log(f"authorize resource={q['resource']} scope={q.get('scope', '')}")
        target = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", "")})
        self.send_response(302)
        self.send_header("Location", target)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        url = urlparse(self.path)
        f = self.form()
        if url.path == "/mcp" and MODE:
            return self.reply(401, {"error": "unauthorized"})
        if url.path == "/register":
            if not f.get("redirect_uris"):
                return self.refuse("redirect_uris are required", "invalid_client_metadata")
            cid = "client-" + secrets.token_urlsafe(8)
            CLIENTS[cid] = {"redirect_uris": f["redirect_uris"]}
            log(f"register {f.get('client_name', '')} {f['redirect_uris'][0]}")
            return self.reply(201, {"client_id": cid, "redirect_uris": f["redirect_uris"],
                                    "token_endpoint_auth_method": "none"})
        if url.path == "/token":
            return self.token(f)
        if url.path == "/introspect":
            t = ACCESS.get(f.get("token", ""))
            if t is None or t["exp"] < time.time():
                log("introspect inactive")
                return self.reply(200, {"active": False})
            log("introspect active")
            return self.reply(200, {"active": True, "client_id": t["client_id"], "scope": t["scope"],
                                    "exp": int(t["exp"]), "aud": t["resource"]})
        if url.path == "/revoke":
            token = f.get("token", "")
            gone = REFRESH.pop(token, None) or ACCESS.pop(token, None)
            if gone is not None:
                for k in [k for k, v in ACCESS.items() if v["client_id"] == gone["client_id"]]:
                    del ACCESS[k]
            log(f"revoke {f.get('token_type_hint', '')} known={gone is not None}")
            return self.reply(200, {})
        if url.path == "/admin/expire":
            for v in ACCESS.values():
                v["exp"] = 0
            log("admin expire")
            return self.reply(200, {})
        if url.path == "/admin/ttl":
            TTL[0] = int(parse_qs(url.query)["seconds"][0])
            log(f"admin ttl {TTL[0]}")
            return self.reply(200, {})
        self.reply(404, {"error": "not_found"})

    def token(self, f):
        grant = f.get("grant_type")
        if grant == "authorization_code":
            c = CODES.pop(f.get("code", ""), None)
            if c is None:
                return self.refuse("unknown or used code", "invalid_grant")
            if f.get("client_id") != c["client_id"] or f.get("redirect_uri") != c["redirect_uri"]:
                return self.refuse("client_id or redirect_uri differ from the authorization", "invalid_grant")
            if s256(f.get("code_verifier", "")) != c["challenge"]:
                return self.refuse("PKCE verifier does not match", "invalid_grant")
            if f.get("resource") != c["resource"]:
                return self.refuse("resource differs from the authorization", "invalid_target")
            log("token authorization_code")
            issued = issue(c["client_id"], c["resource"], c["scope"])
            if MODE == "control-token":
                issued["access_token"] = "tok\x1b[2Jen"
            return self.reply(200, issued)
        if grant == "refresh_token":
            r = REFRESH.pop(f.get("refresh_token", ""), None)
            if r is None or r["client_id"] != f.get("client_id"):
                return self.refuse("unknown refresh token", "invalid_grant")
            if f.get("resource") != r["resource"]:
                return self.refuse("resource differs from the grant", "invalid_target")
            log("token refresh_token")
            return self.reply(200, issue(r["client_id"], r["resource"], r["scope"]))
        self.refuse(f"unsupported grant {grant}", "unsupported_grant_type")


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    BASE[0] = f"http://127.0.0.1:{server.server_port}"
    print(f"port {server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
