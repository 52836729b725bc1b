//! `@modelcontextprotocol/server-everything` (npm) over streamable HTTP on 127.0.0.1, for the
//! tests that run palaver against a real third-party MCP server. Installed into target/mcp-node
//! by `tests/mcp_server/install_everything.sh` (which `.ci/run` calls); without node the tests
//! skip with a loud note.

#![allow(clippy::disallowed_methods)] // tests read what they wrote

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A running server-everything; killed when dropped.
pub struct Everything {
    child: Child,
    pub url: String,
}

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Everything {
    /// Kills the server (kill -9), as a crash would.
    #[allow(dead_code)] // not every test target that includes this module kills it
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts server-everything in streamableHttp mode on a free port, or says loudly why not.
pub fn start() -> Option<Everything> {
    start_in("streamableHttp")
}

/// Starts server-everything in `mode` (`streamableHttp`: its URL ends in `/mcp`; `sse`, the
/// legacy transport: in `/sse`), or says loudly why not.
#[allow(dead_code)] // not every test file that includes this module starts the legacy mode
pub fn start_in(mode: &str) -> Option<Everything> {
    let root = env!("CARGO_MANIFEST_DIR");
    let install = Command::new("bash").arg(format!("{root}/tests/mcp_server/install_everything.sh")).status();
    let script = format!("{root}/target/mcp-node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !install.is_ok_and(|s| s.success()) || !std::path::Path::new(&script).exists() {
        eprintln!("!!!!!!!! SKIPPED: node or @modelcontextprotocol/server-everything is not available !!!!!!!!");
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
    let mut child = Command::new("node")
        .args([script.as_str(), mode])
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    // It says "listening on port N" (or "is running on port N") on stderr once it is.
    let mut lines = BufReader::new(child.stderr.take()?).lines();
    let ready = lines
        .by_ref()
        .take(50)
        .map_while(Result::ok)
        .any(|l| l.contains("listening on port") || l.contains("running on port"));
    assert!(ready, "server-everything did not start listening");
    // Keep draining its stderr so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    let path = if mode == "sse" { "sse" } else { "mcp" };
    Some(Everything { child, url: format!("http://127.0.0.1:{port}/{path}") })
}
