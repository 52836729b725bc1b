//! What an `[mcp.servers.NAME]` table means beyond its types: a stdio server (`command`) or a
//! remote one (`url`), never both, and the remote-only keys only with a `url`. Checked by
//! `palaver config check` and again when the server is started.

use super::McpServer;

/// How palaver reaches one MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio,
    /// Streamable HTTP (the MCP specification's current remote transport).
    Http,
    /// The legacy HTTP+SSE transport (an event stream and an endpoint to post to), used when a
    /// server refuses streamable HTTP.
    Sse,
}

impl Transport {
    /// The word shown on tool cards, in the inspector and by `palaver mcp list`.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Http => "streamable HTTP",
            Self::Sse => "HTTP+SSE (legacy)",
        }
    }
}

impl Transport {
    /// The word where room is short (the inspector's step list).
    #[must_use]
    pub fn short(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Http => "HTTP",
            Self::Sse => "SSE",
        }
    }
}

impl McpServer {
    /// The transport this table asks for (`url` wins for the label; [`Self::problems`] says
    /// when both are set).
    #[must_use]
    pub fn transport(&self) -> Transport {
        if self.url.is_some() { Transport::Http } else { Transport::Stdio }
    }

    /// Every problem with this server's table, each naming `[mcp.servers.NAME]`.
    #[must_use]
    pub fn problems(&self, name: &str) -> Vec<String> {
        let at = format!("[mcp.servers.{name}]");
        let mut out = Vec::new();
        match (&self.url, self.command.is_empty()) {
            (Some(_), false) => out.push(format!("{at} has both command and url: give one")),
            (None, true) => out.push(format!("{at} needs command = [...] (stdio) or url = \"http://…\" (HTTP)")),
            (Some(url), true) => {
                let lower = url.to_ascii_lowercase();
                if !(lower.starts_with("http://") || lower.starts_with("https://")) {
                    out.push(format!("{at} url must start with http:// or https://"));
                }
            }
            (None, false) => {
                if !self.headers.is_empty() || self.bearer_token_env.is_some() {
                    out.push(format!("{at} headers and bearer_token_env apply to a url server only"));
                }
            }
        }
        if let Some(var) = &self.bearer_token_env {
            if std::env::var(var).map_or(true, |v| v.trim().is_empty()) {
                out.push(format!("{at} bearer_token_env names {var}, which is not set"));
            }
        }
        for (k, v) in &self.headers {
            if reqwest::header::HeaderName::from_bytes(k.as_bytes()).is_err()
                || reqwest::header::HeaderValue::from_str(v).is_err()
            {
                out.push(format!("{at} header `{k}` is not a valid HTTP header"));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(url: &str) -> McpServer {
        McpServer { url: Some(url.to_owned()), ..McpServer::default() }
    }

    #[test]
    fn a_server_is_either_stdio_or_remote() {
        let stdio = McpServer { command: vec!["x".into()], ..McpServer::default() };
        assert!(stdio.problems("a").is_empty());
        assert_eq!(stdio.transport(), Transport::Stdio);
        assert!(remote("http://127.0.0.1:1/mcp").problems("a").is_empty());
        assert_eq!(remote("https://x/mcp").transport().label(), "streamable HTTP");

        let both = McpServer { command: vec!["x".into()], ..remote("http://h/mcp") };
        assert_eq!(both.problems("a"), ["[mcp.servers.a] has both command and url: give one"]);
        assert!(McpServer::default().problems("a")[0].contains("needs command"));
        assert!(remote("ftp://h").problems("a")[0].contains("must start with http"));
        let stray = McpServer { headers: [("x".into(), "y".into())].into(), ..stdio };
        assert!(stray.problems("a")[0].contains("url server only"));
    }

    #[test]
    fn an_unset_token_variable_and_bad_headers_are_named() {
        let s = McpServer {
            bearer_token_env: Some("PALAVER_TEST_SURELY_UNSET_TOKEN".into()),
            headers: [("bad name".into(), "v".into())].into(),
            ..remote("http://h/mcp")
        };
        assert_eq!(
            s.problems("r"),
            [
                "[mcp.servers.r] bearer_token_env names PALAVER_TEST_SURELY_UNSET_TOKEN, which is not set",
                "[mcp.servers.r] header `bad name` is not a valid HTTP header"
            ]
        );
    }
}
