//! `palaver mcp list` and `palaver mcp tools NAME`: the MCP servers of `config.toml` as palaver
//! meets them — each is started (or connected to) the way a run does, asked what it offers, and
//! closed. A server that fails says why in its own row; the others still list. Everything a
//! server sends (tool names, descriptions, error text) goes through the sanitiser.

use super::exit::{EXIT_OK, EXIT_PROVIDER, EXIT_USAGE};
use crate::config::{Config, McpServer};
use crate::text::sanitize::sanitize;
use crate::tools::mcp::McpClient;
use serde_json::{Value, json};

/// How a server authenticates, as the config and the stored OAuth tokens say (never the secret).
fn auth(name: &str, server: &McpServer) -> String {
    if let Some(state) = super::mcp_login::oauth_state(name, server) {
        return state;
    }
    match (&server.bearer_token_env, server.headers.keys().any(|k| crate::api::redact::is_secret_header(k))) {
        (Some(var), _) => format!("bearer token from {var}"),
        (None, true) => "secret header".to_owned(),
        (None, false) => "none".to_owned(),
    }
}

/// Where the server is: its command or URL (without credentials).
fn target(server: &McpServer) -> String {
    match &server.url {
        Some(url) => crate::api::redact::storable_url(url),
        None => server.command.join(" "),
    }
}

/// One server's row: started, asked, closed.
async fn row(name: &str, server: &McpServer) -> Value {
    let mut v = json!({
        "name": name,
        "transport": server.transport().label(),
        "target": sanitize(&target(server)),
    });
    match McpClient::start(name, server).await {
        Ok((client, specs)) => {
            // What it answered to (a url server may be on the legacy HTTP+SSE transport).
            v["transport"] = json!(client.transport().label());
            v["tools"] = json!(specs.len());
            match client.inventory().await {
                Ok((prompts, resources)) => {
                    v["state"] = json!("ready");
                    v["prompts"] = json!(prompts);
                    v["resources"] = json!(resources);
                }
                Err(e) => v["state"] = json!(format!("failed: {}", sanitize(&e))),
            }
            client.close().await;
        }
        Err(e) if e == crate::tools::mcp_oauth_client::needs_login(name) => {
            v["state"] = json!(sanitize(&e));
            v["auth"] = json!("oauth: needs login");
        }
        Err(e) => v["state"] = json!(format!("failed: {}", sanitize(&e))),
    }
    // After the start, which may have refreshed the token.
    if v["auth"].is_null() {
        v["auth"] = json!(auth(name, server));
    }
    v
}

fn count(v: &Value) -> String {
    v.as_u64().map_or_else(|| "–".to_owned(), |n| n.to_string())
}

/// `palaver mcp list`: 0 when every server started, 1 when one did not.
pub async fn list(cfg: &Config, json_out: bool) -> u8 {
    if cfg.mcp.servers.is_empty() {
        say!("no MCP servers: add [mcp.servers.NAME] with command = [...] or url = \"http://…/mcp\" to config.toml");
        return EXIT_OK;
    }
    let mut rows = Vec::new();
    for (name, server) in &cfg.mcp.servers {
        rows.push(row(name, server).await);
    }
    if json_out {
        println!("{}", Value::Array(rows.clone()));
    } else {
        for r in &rows {
            println!(
                "{}  {}  {}",
                r["name"].as_str().unwrap_or(""),
                r["transport"].as_str().unwrap_or(""),
                r["target"].as_str().unwrap_or("")
            );
            println!("  state      {}", r["state"].as_str().unwrap_or(""));
            println!(
                "  tools {}  prompts {}  resources {}",
                count(&r["tools"]),
                count(&r["prompts"]),
                count(&r["resources"])
            );
            println!("  auth       {}", r["auth"].as_str().unwrap_or(""));
        }
    }
    if rows.iter().all(|r| r["state"] == "ready") { EXIT_OK } else { EXIT_PROVIDER }
}

/// `palaver mcp tools NAME`: the server's tools as the model is offered them.
pub async fn tools(cfg: &Config, name: &str, json_out: bool) -> u8 {
    let Some(server) = cfg.mcp.servers.get(name) else {
        let hint = crate::config::check::suggest(name, cfg.mcp.servers.keys().map(String::as_str))
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_default();
        say!("no [mcp.servers.{}] in config.toml{hint}", sanitize(name));
        return EXIT_USAGE;
    };
    let (client, specs) = match McpClient::start(name, server).await {
        Ok(started) => started,
        Err(e) => {
            say!("MCP server `{name}` did not start: {}", sanitize(&e));
            return EXIT_PROVIDER;
        }
    };
    client.close().await;
    if json_out {
        let list: Vec<Value> = specs
            .iter()
            .map(|s| json!({"name": s.name, "description": s.description, "parameters": s.parameters, "asks": s.approval != crate::tools::Approval::Never}))
            .collect();
        println!("{}", Value::Array(list));
        return EXIT_OK;
    }
    println!("{name} ({}, {}): {} tools", client.transport().label(), sanitize(&target(server)), specs.len());
    for s in &specs {
        let asks = if s.approval == crate::tools::Approval::Never { "read-only" } else { "asks first" };
        let first = s.description.lines().next().unwrap_or("");
        println!("  {}  [{asks}]  {}", sanitize(&s.name), sanitize(first));
    }
    EXIT_OK
}
