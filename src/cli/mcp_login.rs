//! `palaver mcp login NAME` and `palaver mcp logout NAME`: the OAuth flow of a remote MCP
//! server (see `tools::mcp_oauth_login`), and forgetting its tokens (revoked first where the
//! authorization server has an endpoint for it). Tokens are never printed.

use super::exit::{EXIT_OK, EXIT_PROVIDER, EXIT_USAGE};
use crate::config::{Config, McpServer, Paths};
use crate::text::sanitize::sanitize;
use crate::tools::{mcp_oauth, mcp_oauth_client, mcp_oauth_login, mcp_oauth_store};

/// The URL of server `name` when it is a remote one OAuth applies to; else the exit status
/// after saying why not.
fn remote<'a>(cfg: &'a Config, name: &str) -> Result<(&'a McpServer, &'a str), u8> {
    let Some(server) = cfg.mcp.servers.get(name) else {
        let hint = crate::config::check::suggest(name, cfg.mcp.servers.keys().map(String::as_str))
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_default();
        say!("no [mcp.servers.{}] in config.toml{hint}", sanitize(name));
        return Err(EXIT_USAGE);
    };
    let Some(url) = server.url.as_deref() else {
        say!("`{}` is a stdio server: there is nothing to log in to", sanitize(name));
        return Err(EXIT_USAGE);
    };
    if !mcp_oauth_client::may_use_oauth(server) {
        say!(
            "`{}` has its own credentials in config.toml (bearer_token_env or an Authorization header): OAuth is not used",
            sanitize(name)
        );
        return Err(EXIT_USAGE);
    }
    Ok((server, url))
}

/// `palaver mcp login NAME`: 0 logged in, 1 the flow failed, 2 no such remote server.
pub async fn login(cfg: &Config, name: &str) -> u8 {
    let (server, url) = match remote(cfg, name) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let data_dir = Paths::from_env().data_dir;
    let show = |line: &str| eprintln!("{line}");
    match mcp_oauth_login::login(name, url, &server.headers, &data_dir, &show).await {
        Ok(()) => {
            println!("logged in to {}", sanitize(name));
            EXIT_OK
        }
        Err(e) => {
            say!("login to {} failed: {}", sanitize(name), sanitize(&e));
            EXIT_PROVIDER
        }
    }
}

/// `palaver mcp logout NAME`: the tokens deleted (and revoked where the server can); 0 done
/// (also when there were none), 2 no such remote server.
pub async fn logout(cfg: &Config, name: &str) -> u8 {
    let (_, url) = match remote(cfg, name) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let data_dir = Paths::from_env().data_dir;
    let stored = match mcp_oauth_store::load(&data_dir, name, url) {
        Ok(s) => s,
        Err(e) => {
            say!("{}", sanitize(&e));
            None
        }
    };
    if let Some(stored) = &stored {
        let revoked = match mcp_oauth::http() {
            Ok(http) => mcp_oauth::revoke(&http, stored).await,
            Err(e) => Err(e),
        };
        if let Err(e) = revoked {
            // The local copy goes anyway: logging out must not depend on the server answering.
            say!("{} (the tokens are deleted here all the same)", sanitize(&e));
        }
    }
    match mcp_oauth_store::delete(&data_dir, name) {
        Ok(true) => println!("logged out of {}", sanitize(name)),
        Ok(false) => println!("not logged in to {}", sanitize(name)),
        Err(e) => {
            say!("{}", sanitize(&e));
            return EXIT_PROVIDER;
        }
    }
    EXIT_OK
}

/// The OAuth state of a remote server for `mcp list`, when there are stored tokens for it.
#[must_use]
pub fn oauth_state(name: &str, server: &McpServer) -> Option<String> {
    let url = server.url.as_deref().filter(|_| mcp_oauth_client::may_use_oauth(server))?;
    let stored = mcp_oauth_store::load(&Paths::from_env().data_dir, name, url).ok()??;
    Some(match stored.expires_in() {
        None => "oauth: logged in".to_owned(),
        Some(left) if left > 0 => format!("oauth: logged in, expires in {}", duration(left)),
        Some(_) if stored.refresh_token.is_some() => "oauth: logged in, token expired (refreshed on use)".to_owned(),
        Some(_) => "oauth: needs login (token expired)".to_owned(),
    })
}

/// `45 s`, `12 min`, `3 h`, `2 d`.
fn duration(secs: i64) -> String {
    match secs {
        ..60 => format!("{secs} s"),
        60..3600 => format!("{} min", secs / 60),
        3600..86400 => format!("{} h", secs / 3600),
        _ => format!("{} d", secs / 86400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_short() {
        assert_eq!(duration(45), "45 s");
        assert_eq!(duration(600), "10 min");
        assert_eq!(duration(7200), "2 h");
        assert_eq!(duration(200_000), "2 d");
    }
}
