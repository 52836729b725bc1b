//! The interactive part of an MCP server's OAuth login: ask the server (unauthenticated) for
//! its challenge, discover, register a client for a loopback redirect on 127.0.0.1 (an
//! ephemeral port), send the user's browser to the authorization URL (printed, and opened
//! with `$BROWSER` or the system's opener where there is one), wait for the redirect with its
//! code (its `state` checked), exchange the code with the PKCE verifier, and keep the tokens.

use super::mcp_oauth::{self as oauth, Discovery};
use super::mcp_oauth_store::{self as store, Stored};
use std::path::Path;
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

/// How long the user has to finish in the browser.
const CALLBACK_TIMEOUT: Duration = Duration::from_secs(300);

/// The largest redirect request read from the browser.
const MAX_REQUEST: usize = 16 * 1024;

/// Logs in to server `name` at `url`: the whole flow, the tokens saved under `data_dir`.
/// `show` gets the (sanitised) lines for the user: the URL to open.
///
/// # Errors
/// A message for the user (no token in it) at the first step that fails.
pub async fn login(
    name: &str,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    data_dir: &Path,
    show: &dyn Fn(&str),
) -> Result<(), String> {
    let http = oauth::http()?;
    let challenge = probe(&http, url, headers).await?;
    let d = oauth::discover(&http, url, challenge.as_deref()).await?;
    let listener =
        TcpListener::bind("127.0.0.1:0").await.map_err(|e| format!("no loopback port for the redirect: {e}"))?;
    let port = listener.local_addr().map_err(|e| format!("no loopback port: {e}"))?.port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let (client_id, client_secret) = oauth::register(&http, &d, &redirect).await?;
    let verifier = oauth::random_text(48)?;
    let state = oauth::random_text(24)?;
    let auth_url = oauth::authorize_url(&d, &client_id, &redirect, &verifier, &state)?;
    show(&format!("open this URL in a browser to log in to {name}:"));
    show(&format!("  {}", crate::text::sanitize::sanitize(&auth_url)));
    open_browser(&auth_url);
    let code = match tokio::time::timeout(CALLBACK_TIMEOUT, callback(&listener, &state)).await {
        Ok(code) => code?,
        Err(_) => return Err(format!("no redirect from the browser within {} s", CALLBACK_TIMEOUT.as_secs())),
    };
    let base = base(url, &d, client_id, client_secret);
    let stored = oauth::exchange(&http, &base, &code, &verifier, &redirect).await?;
    store::save(data_dir, name, &stored)
}

/// The stored record before any token: who the client is and where its endpoints are.
fn base(url: &str, d: &Discovery, client_id: String, client_secret: Option<String>) -> Stored {
    Stored {
        server_url: url.to_owned(),
        resource: d.resource.clone(),
        client_id,
        client_secret,
        token_endpoint: d.server.token_endpoint.clone(),
        revocation_endpoint: d.server.revocation_endpoint.clone(),
        scope: d.scope.clone(),
        ..Stored::default()
    }
}

/// An unauthenticated `initialize`: the server's `WWW-Authenticate` challenge when it answers
/// 401, `None` when it answers otherwise (discovery then tries the well-known URLs).
async fn probe(
    http: &reqwest::Client,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<Option<String>, String> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "palaver", "version": env!("CARGO_PKG_VERSION")}}});
    let mut req = http.post(url).header("Accept", "application/json, text/event-stream").json(&body);
    for (k, v) in headers {
        req = req.header(k, v);
    }
    let resp =
        req.send().await.map_err(|e| format!("{}: {}", crate::api::redact::storable_url(url), e.without_url()))?;
    if resp.status() != reqwest::StatusCode::UNAUTHORIZED {
        return Ok(None);
    }
    Ok(resp.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).map(str::to_owned))
}

/// Opens `url` with `$BROWSER` (a `%s` in it is replaced by the URL) or the system's opener;
/// quietly nothing when there is none: the URL is printed anyway.
fn open_browser(url: &str) {
    let browser = std::env::var("BROWSER").ok().filter(|b| !b.trim().is_empty());
    let (program, mut args): (String, Vec<String>) = match browser {
        Some(b) => {
            let mut words = b.split_whitespace().map(str::to_owned);
            let Some(first) = words.next() else { return };
            (first, words.collect())
        }
        None if cfg!(target_os = "macos") => ("open".to_owned(), Vec::new()),
        None => ("xdg-open".to_owned(), Vec::new()),
    };
    if args.iter().any(|a| a.contains("%s")) {
        args = args.into_iter().map(|a| a.replace("%s", url)).collect();
    } else {
        args.push(url.to_owned());
    }
    // Lasting: the browser it starts outlives it on purpose.
    let mut spawn = crate::sys::spawn::Spawn::helper(program, crate::sys::spawn::Role::Lasting);
    spawn
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let spawned = spawn.std();
    if let Ok(mut child) = spawned {
        // Reaped on its own thread, so no zombie is left while palaver waits for the redirect.
        std::thread::spawn(move || child.wait());
    }
}

/// Waits for the browser's redirect to `/callback` with `state`; answers it with a short page.
async fn callback(listener: &TcpListener, state: &str) -> Result<String, String> {
    loop {
        let (mut sock, _) = listener.accept().await.map_err(|e| format!("the redirect listener failed: {e}"))?;
        let Some(target) = read_target(&mut sock).await else { continue };
        let Ok(url) = reqwest::Url::parse(&format!("http://127.0.0.1{target}")) else { continue };
        if url.path() != "/callback" {
            let _ = respond(&mut sock, "404 Not Found", "not here").await;
            continue;
        }
        let q: std::collections::HashMap<String, String> = url.query_pairs().into_owned().collect();
        let verdict = redirect_verdict(&q, state);
        let page = match &verdict {
            Ok(_) => "palaver is logged in. You can close this tab.",
            Err(_) => "palaver could not log in; see the terminal.",
        };
        let _ = respond(&mut sock, if verdict.is_ok() { "200 OK" } else { "400 Bad Request" }, page).await;
        return verdict;
    }
}

/// The code of a redirect, or why it is refused: a wrong `state` (another site's redirect), or
/// the authorization server's `error`.
pub fn redirect_verdict(q: &std::collections::HashMap<String, String>, state: &str) -> Result<String, String> {
    if q.get("state").map(String::as_str) != Some(state) {
        return Err("the redirect's state does not match this login: refused".to_owned());
    }
    if let Some(e) = q.get("error") {
        let desc = q.get("error_description").map(|d| format!(" ({d})")).unwrap_or_default();
        return Err(crate::text::sanitize::sanitize(&format!("the authorization server said {e}{desc}")).into_owned());
    }
    q.get("code").filter(|c| !c.is_empty()).cloned().ok_or_else(|| "the redirect has no code".to_owned())
}

/// The request target of a `GET` (up to [`MAX_REQUEST`] bytes read).
async fn read_target(sock: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < MAX_REQUEST {
        let n = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut chunk)).await.ok()?.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&buf);
    let mut words = text.lines().next()?.split(' ');
    (words.next()? == "GET").then(|| words.next().map(str::to_owned))?
}

async fn respond(sock: &mut tokio::net::TcpStream, status: &str, text: &str) -> std::io::Result<()> {
    let body = format!("<!doctype html><title>palaver</title><p>{text}</p>\n");
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    sock.write_all(head.as_bytes()).await?;
    sock.write_all(body.as_bytes()).await?;
    sock.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> std::collections::HashMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn a_redirect_is_taken_only_with_this_logins_state() {
        assert_eq!(redirect_verdict(&q(&[("code", "c1"), ("state", "s")]), "s"), Ok("c1".to_owned()));
        assert!(
            redirect_verdict(&q(&[("code", "c1"), ("state", "other")]), "s")
                .unwrap_err()
                .contains("state does not match")
        );
        assert!(redirect_verdict(&q(&[("code", "c1")]), "s").is_err());
        let e = redirect_verdict(&q(&[("error", "access_denied"), ("state", "s")]), "s").unwrap_err();
        assert_eq!(e, "the authorization server said access_denied");
        assert!(redirect_verdict(&q(&[("state", "s")]), "s").is_err());
    }

    #[tokio::test]
    async fn the_callback_ignores_other_paths_and_checks_state() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let browser = tokio::spawn(async move {
            let http = reqwest::Client::new();
            let favicon = http.get(format!("http://127.0.0.1:{port}/favicon.ico")).send().await.unwrap();
            assert_eq!(favicon.status(), 404);
            let r = http.get(format!("http://127.0.0.1:{port}/callback?code=abc&state=s1")).send().await.unwrap();
            assert_eq!(r.status(), 200);
        });
        assert_eq!(callback(&listener, "s1").await, Ok("abc".to_owned()));
        browser.await.unwrap();
    }
}
