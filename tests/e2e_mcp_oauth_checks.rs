//! End to end: `palaver mcp login` against a scripted authorization server
//! (tests/mcp_server/oauth_as.py, its own protected resource here) that names another issuer in
//! its metadata, or issues an access token holding a control character: both are refused at
//! login, with the reason, and no token is stored.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn authorization_server(mode: &str) -> (Killed, String) {
    let script = format!("{}/tests/mcp_server/oauth_as.py", env!("CARGO_MANIFEST_DIR"));
    let mut child = Command::new("python3")
        .args([script.as_str(), "/dev/null"])
        .env("OAUTH_AS_MODE", mode)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let port = line.trim().strip_prefix("port ").unwrap().to_owned();
    (Killed(child), format!("http://127.0.0.1:{port}"))
}

/// A GET as the browser makes it: the status and the `Location`.
fn get(url: &str) -> (u16, Option<String>) {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let mut s = TcpStream::connect(host).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let location = text.lines().find_map(|l| l.strip_prefix("Location: ")).map(|l| l.trim().to_owned());
    (status, location)
}

/// `palaver mcp login prot`, playing the browser if it prints a URL; its stderr.
fn login(home: &Path) -> (bool, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["mcp", "login", "prot"])
        .env("PALAVER_HOME", home)
        .env("BROWSER", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            break;
        }
        seen.push_str(&line);
        if let Some(u) = line.trim().strip_prefix("http://") {
            let (status, to) = get(&format!("http://{u}"));
            assert_eq!(status, 302, "{seen}");
            get(&to.unwrap());
        }
    }
    (child.wait().unwrap().success(), seen)
}

fn home_for(url: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), format!("[mcp.servers.prot]\nurl = \"{url}/mcp\"\n")).unwrap();
    home
}

#[test]
fn metadata_naming_another_issuer_is_refused_at_login() {
    let (_as, url) = authorization_server("bad-issuer");
    let home = home_for(&url);
    let (ok, err) = login(home.path());
    assert!(!ok, "{err}");
    assert!(err.contains("names the issuer \"https://issuer.example\", not http://127.0.0.1:"), "{err}");
    assert!(err.contains("RFC 8414 §3.3") && !err.contains("open this URL"), "{err}");
    assert!(!home.path().join("mcp-oauth/prot.json").exists());
}

#[test]
fn an_access_token_with_a_control_character_is_refused_at_login_and_not_stored() {
    let (_as, url) = authorization_server("control-token");
    let home = home_for(&url);
    let (ok, err) = login(home.path());
    assert!(!ok, "{err}");
    assert!(err.contains("access_token holds control characters"), "{err}");
    assert!(!err.contains('\u{1b}'), "the token's escape never reaches the terminal");
    assert!(!home.path().join("mcp-oauth/prot.json").exists());
}
