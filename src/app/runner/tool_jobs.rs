//! The runner's side of the tool loop: tool calls on their own tasks (dropped on cancel), and
//! the disk work the loop needs (saving generated images, reading a file for an approval diff,
//! exporting a flow). Results come back as `Msg::Tools`.

use super::Runner;
use crate::app::msg::Msg;
use crate::app::tools::{ToolEffect, ToolMsg};
use crate::engine::message::Message;
use crate::engine::tool_loop::{DEFAULT_TOOL_TIMEOUT, execute};
use std::time::Instant;

/// Largest file read for an approval diff.
const DIFF_READ_LIMIT: u64 = 256 * 1024;

impl Runner {
    /// Carries out a tool-loop effect (all but editing and copying, which need the terminal).
    pub fn tool_effect(&mut self, effect: ToolEffect) {
        match effect {
            ToolEffect::Run { owner, id, index, call, set, approved } => {
                self.tool_tasks.retain(|_, h| !h.is_finished());
                let tx = self.tx.clone();
                // An MCP server's progress reports go to the call's card.
                let progress_tx = self.tx.clone();
                let sink: crate::tools::mcp::live::ProgressSink = std::sync::Arc::new(move |progress| {
                    let _ = progress_tx.send(Msg::Tools(ToolMsg::Progress { owner, id, index, progress }));
                });
                let task = tokio::spawn(async move {
                    use futures_util::FutureExt;
                    let started = Instant::now();
                    // A tool that panics fails its own call; the turn carries on.
                    let run = crate::tools::mcp::live::with_progress(
                        sink,
                        execute(&set.0, &call, DEFAULT_TOOL_TIMEOUT, &approved),
                    );
                    let run = std::panic::AssertUnwindSafe(run);
                    let output = run.catch_unwind().await.unwrap_or_else(|p| {
                        crate::tools::ToolOutput::error(format!(
                            "the tool crashed: {}",
                            crate::engine::turn::panic_text(p.as_ref())
                        ))
                    });
                    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                    let _ = tx.send(Msg::Tools(ToolMsg::Done { owner, id, index, output, duration_ms }));
                });
                self.tool_tasks.insert((owner, id, index), task.abort_handle());
            }
            ToolEffect::GetPrompt { set, server, prompt, args } => {
                let tx = self.tx.clone();
                tokio::spawn(async move {
                    let client = set.0.mcp_clients().iter().find(|c| c.name() == server).cloned();
                    let got = match client {
                        Some(c) => c.get_prompt(&prompt, args).await,
                        None => Err(format!("MCP server `{server}` is not running")),
                    };
                    let _ = tx.send(Msg::Tools(ToolMsg::Prompt(got)));
                });
            }
            ToolEffect::Answer { reply, answer } => reply.send(answer),
            ToolEffect::SampleAnswer { reply, answer } => reply.send(answer),
            ToolEffect::Sample { server, api, model, body, reply } => {
                // Off the UI task; the server's request waits on `reply`.
                let rx = crate::engine::turn::spawn_request(
                    self.http.clone(),
                    self.endpoint.clone(),
                    api,
                    std::sync::Arc::new(body.into()),
                );
                let tx = self.tx.clone();
                tokio::spawn(async move {
                    let result = crate::engine::sampling::collect(rx, &model).await;
                    reply.send(result.as_ref().map(|r| r.sampled.clone()).map_err(Clone::clone));
                    let _ = tx.send(Msg::Tools(ToolMsg::Sampled { server, result }));
                });
            }
            ToolEffect::Relist { set, server, kind } => {
                let tx = self.tx.clone();
                tokio::spawn(async move {
                    let client = set.0.mcp_clients().iter().find(|c| c.name() == server).cloned();
                    let result = match client {
                        Some(c) => c.relist(kind).await,
                        None => Err(format!("MCP server `{server}` is not running")),
                    };
                    let _ = tx.send(Msg::Tools(ToolMsg::Relisted { server, kind, result }));
                });
            }
            ToolEffect::ReadResource { set, server, uri, name } => {
                let tx = self.tx.clone();
                tokio::spawn(async move {
                    let client = set.0.mcp_clients().iter().find(|c| c.name() == server).cloned();
                    let read = match client {
                        Some(c) => c.read_resource(&uri, &name).await,
                        None => Err(format!("MCP server `{server}` is not running")),
                    };
                    let parts = match read {
                        Ok(parts) => parts,
                        Err(e) => return drop(tx.send(Msg::Tools(ToolMsg::McpFailed(e)))),
                    };
                    for p in parts {
                        // Through the attachment path: its limits, its chip.
                        let msg = match crate::engine::attachment::Attachment::from_bytes(&p.name, p.bytes) {
                            Ok(a) => Msg::Attach(crate::app::attach::AttachMsg::Loaded {
                                spec: uri.clone(),
                                result: Ok(a),
                                paste: None,
                            }),
                            Err(e) => Msg::Tools(ToolMsg::McpFailed(e.0)),
                        };
                        let _ = tx.send(msg);
                    }
                });
            }
            ToolEffect::Cancel { owner, id } => {
                // Aborting drops the future, and with it any child process (spawned kill_on_drop).
                self.tool_tasks.retain(|&(o, msg, _), h| {
                    let hit = o == owner && msg == id;
                    if hit {
                        h.abort();
                    }
                    !hit
                });
            }
            ToolEffect::SaveImages { owner, id, items } => {
                let tx = self.tx.clone();
                tokio::task::spawn_blocking(move || {
                    let mut m = Message { items, ..Message::default() };
                    let dir = crate::config::Paths::from_env().data_dir;
                    let (_, notices) = crate::engine::images::save_generated_images(&mut m, &dir);
                    let saved = m
                        .item_notes
                        .iter()
                        .filter_map(|(i, n)| n.get("saved_path").and_then(|p| p.as_str()).map(|p| (*i, p.to_owned())))
                        .collect();
                    let _ = tx.send(Msg::Tools(ToolMsg::ImagesSaved { owner, id, saved, notices }));
                });
            }
            ToolEffect::ReadFile { owner, id, index, path } => {
                let tx = self.tx.clone();
                tokio::task::spawn_blocking(move || {
                    let content = read_for_diff(&path);
                    let _ = tx.send(Msg::Tools(ToolMsg::FileRead { owner, id, index, content }));
                });
            }
            ToolEffect::Export { json } => {
                let tx = self.tx.clone();
                tokio::task::spawn_blocking(move || {
                    let _ = tx.send(Msg::Tools(ToolMsg::Exported(export(&json))));
                });
            }
            ToolEffect::ExportPage { export, path } => {
                let tx = self.tx.clone();
                tokio::task::spawn_blocking(move || {
                    let _ = tx.send(Msg::Tools(ToolMsg::PageExported(export_page(*export, path))));
                });
            }
            // The loop handles these itself: they need the terminal.
            ToolEffect::EditArgs(_) | ToolEffect::CopyCurl { .. } => {}
        }
    }

    /// A `curl` command reproducing a request, the key read where the profile reads it.
    #[must_use]
    pub fn curl(&self, api: crate::api::Api, body: &serde_json::Value) -> String {
        curl_for(&self.endpoint, api, body)
    }
}

/// A `curl` command reproducing a request to `endpoint`, the key read where the profile reads it.
#[must_use]
pub fn curl_for(endpoint: &crate::api::client::Endpoint, api: crate::api::Api, body: &serde_json::Value) -> String {
    // A body with attachments is megabytes: past what a command line (and a clipboard)
    // takes. It goes to a file the command reads, so the copied command really works.
    let text = body.to_string();
    if text.len() <= CURL_INLINE {
        return endpoint.curl(api, body);
    }
    let dir = crate::config::Paths::from_env().data_dir.join("requests");
    let path = dir.join(format!("request-{}.json", crate::store::ids::now_ms()));
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, text)) {
        Ok(()) => endpoint.curl_file(api, &path.display().to_string()),
        Err(_) => endpoint.curl(api, body),
    }
}

/// Largest body copied inline in a curl command; larger ones go to a file (`--data-binary @…`).
const CURL_INLINE: usize = 64 * 1024;

/// The file as it is now; `None` when it does not exist.
fn read_for_diff(path: &str) -> Result<Option<String>, String> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
        Ok(m) if m.len() > DIFF_READ_LIMIT => {
            return Err(format!("it is {} bytes, too large to diff here", m.len()));
        }
        Ok(_) => {}
    }
    let budget =
        crate::sys::read::Budget::fixed("diff_read_bytes", usize::try_from(DIFF_READ_LIMIT).unwrap_or(usize::MAX));
    crate::sys::read::file_bytes(std::path::Path::new(path), budget)
        .map(|b| Some(String::from_utf8_lossy(&b).into_owned()))
        .map_err(|e| e.to_string())
}

/// Writes the conversation page to `path`, or into `<data dir>/exports/`; returns its path.
fn export_page(export: crate::store::export::Export, path: Option<String>) -> Result<String, String> {
    let id = export.id.clone();
    // Through the one redactor, as every export is (a secret stored before it was known).
    let html = crate::sys::secrets::redact(&crate::store::export_html::to_html(&export.with_blobs())).into_owned();
    let name = format!("conversation-{id}-{}.html", crate::store::ids::now_ms());
    let path = match path.map(|p| std::path::PathBuf::from(super::attach_jobs::expand_home(&p))) {
        // A folder the user named gets the page under its usual name.
        Some(dir) if dir.is_dir() => dir.join(name),
        Some(p) => p,
        None => {
            let dir = crate::config::Paths::from_env().data_dir.join("exports");
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            dir.join(name)
        }
    };
    refuse_to_clobber(&path)?;
    std::fs::write(&path, html).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path.display().to_string())
}

/// A file already at `path` is replaced only when it is a page palaver wrote (exporting again
/// to the same name): `/export html notes.md` must not wipe the user's notes.
fn refuse_to_clobber(path: &std::path::Path) -> Result<(), String> {
    let Ok(file) = std::fs::File::open(path) else { return Ok(()) };
    let head = crate::sys::read::head(file, 1024).unwrap_or_default();
    if String::from_utf8_lossy(&head).contains(crate::store::export_html::CSP) {
        return Ok(());
    }
    Err(format!("{} exists and is not a page palaver wrote; name another file", path.display()))
}

/// Writes a flow export into `<data dir>/flows/`; returns its path.
fn export(json: &serde_json::Value) -> Result<String, String> {
    let dir = crate::config::Paths::from_env().data_dir.join("flows");
    let name = format!("flow-{}.json", crate::store::ids::now_ms());
    let path = dir.join(name);
    let text = serde_json::to_string_pretty(json).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&path, text))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path.display().to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
    use super::export_page;
    use crate::store::export::{Export, FORMAT, VERSION};

    fn page() -> Export {
        Export {
            format: FORMAT.into(),
            version: VERSION,
            id: "c1".into(),
            title: "t".into(),
            model: None,
            provider: None,
            api: None,
            created_at: String::new(),
            updated_at: String::new(),
            compare_group: None,
            compare_column: None,
            active_branch: 0,
            messages: Vec::new(),
            branches: Vec::new(),
            attachments: std::collections::BTreeMap::new(),
        }
    }

    #[test]
    fn export_html_does_not_wipe_a_file_that_is_not_its_page() {
        let dir = tempfile::tempdir().unwrap();
        let notes = dir.path().join("notes.md");
        std::fs::write(&notes, "my notes").unwrap();
        let err = export_page(page(), Some(notes.display().to_string())).unwrap_err();
        assert!(err.contains("exists and is not a page palaver wrote"), "{err}");
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes");
        // A page palaver wrote is replaced: exporting again to the same name works.
        let chat = dir.path().join("chat.html");
        let target = Some(chat.display().to_string());
        assert_eq!(export_page(page(), target.clone()).unwrap(), chat.display().to_string());
        assert_eq!(export_page(page(), target).unwrap(), chat.display().to_string());
    }

    #[test]
    fn export_html_into_a_folder_writes_the_page_inside_it() {
        let dir = tempfile::tempdir().unwrap();
        let written = export_page(page(), Some(dir.path().display().to_string())).unwrap();
        let written = std::path::Path::new(&written);
        assert_eq!(written.parent(), Some(dir.path()));
        assert!(std::fs::read_to_string(written).unwrap().contains(crate::store::export_html::CSP));
    }
}
