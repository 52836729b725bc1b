//! The MCP authorization specification's OAuth pieces, on palaver's reqwest and serde:
//! the `WWW-Authenticate` challenge, protected-resource metadata (RFC 9728), authorization
//! server metadata (RFC 8414, with the OpenID Connect discovery fallback), dynamic client
//! registration (RFC 7591), PKCE with S256 (RFC 7636), the authorization code and refresh
//! token grants with the `resource` indicator (RFC 8707), and revocation (RFC 7009).
//!
//! rmcp's `auth` feature does the same but brings the `oauth2` and `async-trait` crates; this
//! is the part palaver needs, with its own bounds: every response is capped at
//! [`MAX_BODY`], redirects stay within the origin, and what a server says goes into messages
//! only as its `error` code and description (never a body that could echo a token).

use super::mcp_oauth_store::{Stored, now};
use base64::Engine as _;
use reqwest::Url;
use serde::Deserialize;
use serde_json::Value;
use sha2::Digest as _;
use std::time::Duration;

/// The largest metadata, registration or token response read.
pub const MAX_BODY: usize = 256 * 1024;

/// How long one OAuth request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// An authorization server, as its metadata says.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct AuthServer {
    #[serde(default)]
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    #[serde(default)]
    pub revocation_endpoint: Option<String>,
    #[serde(default)]
    pub code_challenge_methods_supported: Vec<String>,
}

/// What discovery found for one MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    /// The resource indicator for grants: the protected resource's identifier.
    pub resource: String,
    /// The scopes to ask for (the challenge's, else the resource's), space-separated.
    pub scope: Option<String>,
    pub server: AuthServer,
}

/// The HTTP client for OAuth requests.
///
/// # Errors
/// When TLS cannot start.
pub fn http() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(REQUEST_TIMEOUT)
        .redirect(crate::api::client::same_origin_redirects())
        .build()
        .map_err(|e| format!("the HTTP client could not start: {e}"))
}

/// One parameter of a `WWW-Authenticate: Bearer …` challenge (quoted or not).
#[must_use]
pub fn challenge_param(header: &str, key: &str) -> Option<String> {
    let mut rest = header.trim();
    rest = rest.strip_prefix("Bearer").or_else(|| rest.strip_prefix("bearer")).unwrap_or(rest);
    loop {
        rest = rest.trim_start_matches([' ', ',', '\t']);
        let eq = rest.find('=')?;
        let name = rest[..eq].trim();
        let after = &rest[eq + 1..];
        let (value, tail) = if let Some(quoted) = after.strip_prefix('"') {
            let end = quoted.find('"')?;
            (&quoted[..end], &quoted[end + 1..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim(), &after[end..])
        };
        if name.eq_ignore_ascii_case(key) {
            return Some(value.to_owned());
        }
        rest = tail;
    }
}

/// The well-known URLs of `url` for `suffix`: with the URL's path inserted after the
/// well-known segment first (RFC 8414 §3.1, RFC 9728 §3.1), then at the root.
fn well_known(url: &Url, suffix: &str) -> Vec<String> {
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let mut out = Vec::new();
    if !path.is_empty() {
        out.push(format!("{origin}/.well-known/{suffix}{path}"));
    }
    out.push(format!("{origin}/.well-known/{suffix}"));
    out
}

/// Where an issuer's metadata may be: OAuth's, then OpenID Connect's (both insertions).
fn server_candidates(issuer: &Url) -> Vec<String> {
    let mut out = well_known(issuer, "oauth-authorization-server");
    out.extend(well_known(issuer, "openid-configuration"));
    let path = issuer.path().trim_end_matches('/');
    if !path.is_empty() {
        out.push(format!("{}{path}/.well-known/openid-configuration", issuer.origin().ascii_serialization()));
    }
    out.dedup();
    out
}

/// The body of a response as JSON, read up to [`MAX_BODY`].
async fn bounded_json(resp: reqwest::Response) -> Result<Value, String> {
    let budget = crate::sys::read::Budget::fixed("oauth_body_bytes", MAX_BODY);
    let body = crate::sys::read::body(resp, budget).await.map_err(|e| match e {
        crate::sys::read::ReadError::Io(e) => format!("reading the response failed: {e}"),
        e => e.about("the authorization server's response"),
    })?;
    serde_json::from_slice(&body).map_err(|_| "the response is not JSON".to_owned())
}

/// GETs JSON metadata; `Ok(None)` when it is not there (an error status).
async fn get_metadata(http: &reqwest::Client, url: &str) -> Result<Option<Value>, String> {
    let resp = http.get(url).header("Accept", "application/json").send().await;
    let resp = resp.map_err(|e| format!("{url}: {}", e.without_url()))?;
    if !resp.status().is_success() {
        return Ok(None);
    }
    bounded_json(resp).await.map(Some).map_err(|e| format!("{url}: {e}"))
}

/// Finds the protected resource's metadata and its authorization server's.
///
/// # Errors
/// When neither the challenge's metadata URL nor the well-known ones answer, or the
/// authorization server has no usable metadata or does not do PKCE with S256.
pub async fn discover(http: &reqwest::Client, server_url: &str, challenge: Option<&str>) -> Result<Discovery, String> {
    let url = Url::parse(server_url).map_err(|e| format!("{server_url}: {e}"))?;
    let mut candidates: Vec<String> =
        challenge.and_then(|c| challenge_param(c, "resource_metadata")).into_iter().collect();
    candidates.extend(well_known(&url, "oauth-protected-resource"));
    let mut resource_meta = None;
    for c in &candidates {
        if let Some(v) = get_metadata(http, c).await? {
            resource_meta = Some(v);
            break;
        }
    }
    let Some(meta) = resource_meta else {
        return Err(format!(
            "no OAuth protected-resource metadata at {} (the server does not say how to log in)",
            candidates.last().map_or("", String::as_str)
        ));
    };
    let issuer = meta["authorization_servers"].as_array().and_then(|a| a.first()).and_then(Value::as_str);
    let issuer = issuer.ok_or("the protected-resource metadata names no authorization server")?;
    let issuer_url = Url::parse(issuer).map_err(|_| "the authorization server's URL is not valid".to_owned())?;
    let server = authorization_server(http, &issuer_url).await?;
    // The resource named by the metadata, when it is this server's own origin. Metadata for
    // another origin is not this server's (RFC 9728 §3.3): refused, not quietly replaced.
    let resource = match meta["resource"].as_str().map(|r| (r, Url::parse(r))) {
        Some((_, Ok(r))) if r.origin() == url.origin() => r.to_string(),
        Some((r, _)) => {
            return Err(format!(
                "the protected-resource metadata is for {}, not {} (RFC 9728 §3.3); palaver will not log in with it",
                crate::text::sanitize::sanitize(r),
                crate::api::redact::storable_url(server_url)
            ));
        }
        None => server_url.to_owned(),
    };
    let scope = challenge.and_then(|c| challenge_param(c, "scope")).or_else(|| {
        let list = meta["scopes_supported"].as_array()?;
        let words: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
        (!words.is_empty()).then(|| words.join(" "))
    });
    Ok(Discovery { resource, scope, server })
}

/// The first metadata document of `issuer` that parses, checked for S256.
async fn authorization_server(http: &reqwest::Client, issuer: &Url) -> Result<AuthServer, String> {
    for c in server_candidates(issuer) {
        let Some(v) = get_metadata(http, &c).await? else { continue };
        let server: AuthServer = serde_json::from_value(v)
            .map_err(|e| format!("{c}: the authorization server metadata is not usable: {e}"))?;
        // RFC 8414 §3.3: metadata naming another issuer may be an attacker's, served to send the
        // code and tokens elsewhere.
        if Url::parse(&server.issuer).ok().as_ref() != Some(issuer) {
            return Err(format!(
                "{c}: the authorization server metadata names the issuer \"{}\", not {issuer} (RFC 8414 §3.3); \
                 palaver will not log in with it",
                crate::text::sanitize::sanitize(&server.issuer)
            ));
        }
        let endpoints = [Some(&server.authorization_endpoint), Some(&server.token_endpoint)];
        let more = [server.registration_endpoint.as_ref(), server.revocation_endpoint.as_ref()];
        if let Some(bad) = endpoints.into_iter().chain(more).flatten().find(|e| !secure_endpoint(e)) {
            let bad = crate::text::sanitize::sanitize(bad);
            return Err(format!(
                "{c}: the endpoint {bad} is neither https nor on this machine; palaver will not send a code or token there"
            ));
        }
        if !server.code_challenge_methods_supported.iter().any(|m| m == "S256") {
            return Err(format!(
                "{c}: the authorization server does not offer PKCE with S256; palaver will not log in without it"
            ));
        }
        return Ok(server);
    }
    Err(format!("no authorization server metadata for {issuer}"))
}

/// Whether codes and tokens may be sent to `url`: https, or plain http to this machine only
/// (OAuth 2.1 §1.5; the loopback is how local servers and the tests run).
fn secure_endpoint(url: &str) -> bool {
    let Ok(u) = Url::parse(url) else { return false };
    match u.scheme() {
        "https" => true,
        "http" => {
            let host = u.host_str().unwrap_or("").trim_start_matches('[').trim_end_matches(']');
            host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
        }
        _ => false,
    }
}

/// Random bytes, base64url without padding.
///
/// # Errors
/// When the system's random source cannot be read.
pub fn random_text(bytes: usize) -> Result<String, String> {
    use std::io::Read as _;
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(|e| format!("no random source: {}", e.kind()))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buf))
}

/// The S256 code challenge of a PKCE verifier.
#[must_use]
pub fn code_challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()))
}

/// The URL the user opens to authorize palaver.
///
/// # Errors
/// When the authorization endpoint is not a URL.
pub fn authorize_url(
    d: &Discovery,
    client_id: &str,
    redirect: &str,
    verifier: &str,
    state: &str,
) -> Result<String, String> {
    let mut url = Url::parse(&d.server.authorization_endpoint)
        .map_err(|_| "the authorization endpoint is not a valid URL".to_owned())?;
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code")
            .append_pair("client_id", client_id)
            .append_pair("redirect_uri", redirect)
            .append_pair("code_challenge", &code_challenge(verifier))
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", state)
            .append_pair("resource", &d.resource);
        if let Some(scope) = &d.scope {
            q.append_pair("scope", scope);
        }
    }
    Ok(url.to_string())
}

/// Registers palaver as a public client with `redirect` (RFC 7591).
///
/// # Errors
/// When the server offers no registration or refuses it.
pub async fn register(
    http: &reqwest::Client,
    d: &Discovery,
    redirect: &str,
) -> Result<(String, Option<String>), String> {
    let Some(endpoint) = &d.server.registration_endpoint else {
        return Err("the authorization server offers no dynamic client registration".to_owned());
    };
    let body = serde_json::json!({
        "client_name": "palaver",
        "redirect_uris": [redirect],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let resp = http.post(endpoint).json(&body).send().await;
    let resp = resp.map_err(|e| format!("client registration failed: {}", e.without_url()))?;
    let status = resp.status();
    let v = bounded_json(resp).await.map_err(|e| format!("client registration failed: {e}"))?;
    if !status.is_success() {
        return Err(format!("client registration failed: {}", oauth_error(status, &v)));
    }
    let id = v["client_id"].as_str().ok_or("client registration answered without a client_id")?;
    Ok((id.to_owned(), v["client_secret"].as_str().map(str::to_owned)))
}

/// `HTTP 400: invalid_grant (description)`, from an OAuth error body.
fn oauth_error(status: reqwest::StatusCode, v: &Value) -> String {
    let code = v["error"].as_str().unwrap_or("no error code");
    let mut out = format!("HTTP {}: {}", status.as_u16(), crate::text::sanitize::sanitize(code));
    if let Some(d) = v["error_description"].as_str() {
        out.push_str(&format!(" ({})", crate::text::sanitize::sanitize(d)));
    }
    out
}

/// Posts a grant to the token endpoint and folds the answer into `base`.
async fn grant(http: &reqwest::Client, base: &Stored, form: &[(&str, &str)]) -> Result<Stored, String> {
    let mut form: Vec<(&str, &str)> = form.to_vec();
    form.push(("client_id", &base.client_id));
    form.push(("resource", &base.resource));
    if let Some(secret) = &base.client_secret {
        form.push(("client_secret", secret));
    }
    let resp = http.post(&base.token_endpoint).header("Accept", "application/json").form(&form).send().await;
    let resp = resp.map_err(|e| format!("the token request failed: {}", e.without_url()))?;
    let status = resp.status();
    let v = bounded_json(resp).await.map_err(|e| format!("the token request failed: {e}"))?;
    if !status.is_success() {
        return Err(format!("the token request was refused: {}", oauth_error(status, &v)));
    }
    let access =
        v["access_token"].as_str().filter(|t| !t.is_empty()).ok_or("the token response has no access_token")?;
    // A token goes into an Authorization header at every request: one a header cannot carry
    // would fail each of them later, so it is refused now, and nothing is stored.
    if reqwest::header::HeaderValue::from_str(&format!("Bearer {access}")).is_err() || has_control(access) {
        return Err("the token response's access_token holds control characters or others an HTTP header \
                    cannot carry; palaver refused it and stored nothing"
            .to_owned());
    }
    if v["refresh_token"].as_str().is_some_and(has_control) {
        return Err("the token response's refresh_token holds control characters; palaver refused it and stored \
                    nothing"
            .to_owned());
    }
    if !v["token_type"].as_str().is_some_and(|t| t.eq_ignore_ascii_case("bearer")) {
        return Err("the token response is not a bearer token".to_owned());
    }
    let fresh = Stored {
        access_token: access.to_owned(),
        // A server that does not rotate the refresh token keeps the old one valid.
        refresh_token: v["refresh_token"].as_str().map(str::to_owned).or_else(|| base.refresh_token.clone()),
        expires_at: v["expires_in"].as_u64().map(|s| now() + s),
        obtained_at: Some(now()),
        scope: v["scope"].as_str().map(str::to_owned).or_else(|| base.scope.clone()),
        ..base.clone()
    };
    // Tokens join the one redactor the moment they arrive.
    crate::sys::secrets::register_all(fresh.secrets());
    Ok(fresh)
}

/// Whether `s` holds a control character (a tab included).
fn has_control(s: &str) -> bool {
    s.chars().any(char::is_control)
}

/// Exchanges an authorization code (with its PKCE verifier) for tokens.
///
/// # Errors
/// When the token endpoint refuses or answers something that is not a bearer token.
pub async fn exchange(
    http: &reqwest::Client,
    base: &Stored,
    code: &str,
    verifier: &str,
    redirect: &str,
) -> Result<Stored, String> {
    let form =
        [("grant_type", "authorization_code"), ("code", code), ("code_verifier", verifier), ("redirect_uri", redirect)];
    grant(http, base, &form).await
}

/// New tokens from the refresh token.
///
/// # Errors
/// When there is no refresh token or the server refuses it.
pub async fn refresh(http: &reqwest::Client, stored: &Stored) -> Result<Stored, String> {
    let Some(rt) = stored.refresh_token.clone() else {
        return Err("the access token expired and there is no refresh token".to_owned());
    };
    grant(http, stored, &[("grant_type", "refresh_token"), ("refresh_token", &rt)]).await
}

/// Revokes the refresh token (else the access token) where the server has an endpoint for it;
/// `Ok(false)` when it has none.
///
/// # Errors
/// When the server refuses the revocation.
pub async fn revoke(http: &reqwest::Client, stored: &Stored) -> Result<bool, String> {
    let Some(endpoint) = &stored.revocation_endpoint else { return Ok(false) };
    let (token, hint) = match &stored.refresh_token {
        Some(rt) => (rt.as_str(), "refresh_token"),
        None => (stored.access_token.as_str(), "access_token"),
    };
    let mut form = vec![("token", token), ("token_type_hint", hint), ("client_id", stored.client_id.as_str())];
    if let Some(secret) = &stored.client_secret {
        form.push(("client_secret", secret));
    }
    let resp = http.post(endpoint).form(&form).send().await;
    let resp = resp.map_err(|e| format!("revoking the token failed: {}", e.without_url()))?;
    if resp.status().is_success() {
        Ok(true)
    } else {
        Err(format!("revoking the token failed: HTTP {}", resp.status().as_u16()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_parsed_quoted_or_not() {
        let h = r#"Bearer error="invalid_token", error_description="no token", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp", scope=mcp:tools"#;
        assert_eq!(
            challenge_param(h, "resource_metadata").as_deref(),
            Some("http://h/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(challenge_param(h, "scope").as_deref(), Some("mcp:tools"));
        assert_eq!(challenge_param(h, "realm"), None);
        assert_eq!(challenge_param("Bearer", "scope"), None);
        assert_eq!(challenge_param(r#"Bearer realm="unterminated"#, "realm"), None);
    }

    #[test]
    fn well_known_urls_insert_the_path_first() {
        let u = Url::parse("http://127.0.0.1:8/mcp").unwrap();
        assert_eq!(
            well_known(&u, "oauth-protected-resource"),
            [
                "http://127.0.0.1:8/.well-known/oauth-protected-resource/mcp",
                "http://127.0.0.1:8/.well-known/oauth-protected-resource"
            ]
        );
        let root = Url::parse("https://as.example/").unwrap();
        assert_eq!(
            server_candidates(&root),
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration"
            ]
        );
        let tenant = Url::parse("https://as.example/t1").unwrap();
        assert_eq!(server_candidates(&tenant).len(), 5);
        assert_eq!(server_candidates(&tenant)[4], "https://as.example/t1/.well-known/openid-configuration");
    }

    /// A server on 127.0.0.1 with `/.well-known/oauth-protected-resource` (at the root only)
    /// and authorization server metadata `meta` at the OAuth well-known URL.
    async fn metadata_server(meta: Value) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        // `"issuer": "SELF"` stands for this server's own URL.
        let meta: Value = serde_json::from_str(&meta.to_string().replace("\"SELF\"", &format!("\"{base}/\""))).unwrap();
        let resource = serde_json::json!({
            "resource": format!("{base}/mcp"), "authorization_servers": [format!("{base}/")], "scopes_supported": ["a", "b"]
        });
        let app = axum::Router::new()
            .route(
                "/.well-known/oauth-protected-resource",
                axum::routing::get(move || async move { axum::Json(resource) }),
            )
            .route(
                "/.well-known/oauth-authorization-server",
                axum::routing::get(move || async move { axum::Json(meta) }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await });
        base
    }

    #[tokio::test]
    async fn discovery_falls_back_to_the_root_well_known_and_checks_the_server() {
        let good = |issuer: &str| {
            serde_json::json!({"issuer": issuer, "authorization_endpoint": "https://as/authorize",
            "token_endpoint": "https://as/token", "code_challenge_methods_supported": ["plain", "S256"]})
        };
        let base = metadata_server(good("SELF")).await;
        let d = discover(&http().unwrap(), &format!("{base}/mcp"), None).await.unwrap();
        assert_eq!(d.resource, format!("{base}/mcp"));
        assert_eq!(d.scope.as_deref(), Some("a b"));
        assert_eq!(d.server.token_endpoint, "https://as/token");
        // The challenge's scope wins over the metadata's.
        let d = discover(&http().unwrap(), &format!("{base}/mcp"), Some("Bearer scope=\"c\"")).await.unwrap();
        assert_eq!(d.scope.as_deref(), Some("c"));

        // Another issuer than the one asked for is refused, whatever else the metadata says.
        let base = metadata_server(good("https://issuer.example")).await;
        let e = discover(&http().unwrap(), &format!("{base}/mcp"), None).await.unwrap_err();
        assert!(e.contains("names the issuer \"https://issuer.example\", not http://127.0.0.1:"), "{e}");
        assert!(e.contains("RFC 8414 §3.3"), "{e}");

        let plain = serde_json::json!({"issuer": "SELF", "authorization_endpoint": "https://as/a", "token_endpoint": "https://as/t",
            "code_challenge_methods_supported": ["plain"]});
        let base = metadata_server(plain).await;
        let e = discover(&http().unwrap(), &format!("{base}/mcp"), None).await.unwrap_err();
        assert!(e.contains("does not offer PKCE with S256"), "{e}");

        let cleartext = serde_json::json!({"issuer": "SELF", "authorization_endpoint": "https://as/a", "token_endpoint": "http://as.example/t",
            "code_challenge_methods_supported": ["S256"]});
        let base = metadata_server(cleartext).await;
        let e = discover(&http().unwrap(), &format!("{base}/mcp"), None).await.unwrap_err();
        assert!(e.contains("http://as.example/t is neither https nor on this machine"), "{e}");

        let e = discover(&http().unwrap(), "http://127.0.0.1:9/mcp", None).await.unwrap_err();
        assert!(e.starts_with("http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp: "), "{e}");
    }

    #[test]
    fn codes_and_tokens_go_to_https_or_this_machine_only() {
        assert!(secure_endpoint("https://as.example/token"));
        assert!(secure_endpoint("http://127.0.0.1:9/token"));
        assert!(secure_endpoint("http://[::1]:9/token"));
        assert!(secure_endpoint("http://localhost/token"));
        assert!(!secure_endpoint("http://as.example/token"));
        assert!(!secure_endpoint("http://10.0.0.1/token"));
        assert!(!secure_endpoint("javascript:alert(1)"));
        assert!(!secure_endpoint("not a url"));
    }

    #[test]
    fn pkce_matches_rfc_7636_and_state_is_random() {
        // RFC 7636 appendix B.
        assert_eq!(
            code_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let (a, b) = (random_text(32).unwrap(), random_text(32).unwrap());
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
    }

    #[test]
    fn the_authorize_url_carries_pkce_state_and_resource() {
        let d = Discovery {
            resource: "http://127.0.0.1:8/mcp".into(),
            scope: Some("a b".into()),
            server: AuthServer { authorization_endpoint: "http://as/authorize?x=1".into(), ..AuthServer::default() },
        };
        let url = authorize_url(&d, "cid", "http://127.0.0.1:5/callback", "verifier", "st4te").unwrap();
        let q: std::collections::HashMap<String, String> =
            Url::parse(&url).unwrap().query_pairs().into_owned().collect();
        assert_eq!(q["x"], "1");
        assert_eq!(q["code_challenge"], code_challenge("verifier"));
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(q["state"], "st4te");
        assert_eq!(q["resource"], "http://127.0.0.1:8/mcp");
        assert_eq!(q["redirect_uri"], "http://127.0.0.1:5/callback");
        assert_eq!(q["scope"], "a b");
    }

    #[test]
    fn metadata_parses_without_optional_fields_and_errors_are_sanitised() {
        let v = serde_json::json!({"issuer": "i", "authorization_endpoint": "a", "token_endpoint": "t"});
        let s: AuthServer = serde_json::from_value(v).unwrap();
        assert!(s.code_challenge_methods_supported.is_empty());
        let e = oauth_error(
            reqwest::StatusCode::BAD_REQUEST,
            &serde_json::json!({"error": "invalid_grant", "error_description": "bad\u{1b}[2J"}),
        );
        assert_eq!(e, "HTTP 400: invalid_grant (bad)");
    }
}
