//! Attachments in the chat screen: `/attach PATH` (Tab completes the path), a pasted file path
//! taken as an attachment, the chips above the composer (removable before sending), and
//! opening an image in the system viewer. Reading files, listing folders and spawning the
//! viewer are effects (`AttachEffect`), carried out off the UI task; their answers come back as
//! `AttachMsg`. Nothing here loses the draft: a failure says why and leaves the text as it was.

use super::effect::Effect;
use super::state::State;
use crate::config::attachments::AttachmentPolicy;
use crate::engine::attachment::{Attachment, Blob};

/// Answers of the attachment effects.
#[derive(Debug, Clone)]
pub enum AttachMsg {
    /// A file was read (or could not be). `paste` is the pasted text when it came from a paste,
    /// so a paste that was not a file goes into the draft after all.
    Loaded { spec: String, result: Result<Attachment, String>, paste: Option<String> },
    /// Tab completion of `/attach PATH`: the draft it was asked for, the completed draft, and
    /// the names that still match when more than one does.
    Completed { typed: String, draft: Option<String>, candidates: Vec<String> },
    /// The system viewer was started on this file.
    Opened(std::path::PathBuf),
    /// The system viewer could not show the image: why, and where the file is.
    OpenFailed(String),
    /// `/paste-image` found no image on the clipboard: why.
    NoClipboardImage(String),
    /// A file that holds secrets (by name or content) was read but not attached: `why` says
    /// what it holds; attaching the same path again sends it.
    Secret { spec: String, why: String, paste: Option<String> },
}

/// What an image to open is made of.
#[derive(Debug, Clone, PartialEq)]
pub enum ImageSource {
    /// Bytes kept in memory (an attachment): written to a file first.
    Bytes { name: String, data: Blob },
    /// A file already on disk (a generated image palaver saved).
    File(std::path::PathBuf),
}

/// Attachment work for the runner.
#[derive(Debug, Clone, PartialEq)]
pub enum AttachEffect {
    /// Read, type and check a file (on a blocking task); answer with `AttachMsg::Loaded`.
    /// `confirmed`: the user was told the file holds secrets and attached it again.
    Load { spec: String, policy: AttachmentPolicy, paste: Option<String>, confirmed: bool },
    /// List the folder of the path being typed; answer with `AttachMsg::Completed`.
    Complete { typed: String },
    /// Open an image in the system viewer (`xdg-open`, `open`), never waiting for it.
    Open(ImageSource),
    /// Read an image from the system clipboard (with `cmd` when configured); the interactive
    /// loop runs it (the clipboard is the terminal's side) and answers with `AttachMsg::Loaded`.
    PasteImage { cmd: Option<Vec<String>>, policy: AttachmentPolicy },
}

/// The command prefix completion works on.
pub const ATTACH: &str = "/attach ";

/// A pasted text that may be a path: one line, not long, looking like a path (absolute, home,
/// relative with a slash, or a `file://` URL). Quotes a file manager adds are taken off.
#[must_use]
pub fn pasted_path(text: &str) -> Option<String> {
    let t = text.trim().trim_matches(|c| c == '\'' || c == '"');
    if t.is_empty() || t.len() > 4096 || t.contains('\n') {
        return None;
    }
    let t = t.strip_prefix("file://").unwrap_or(t);
    let looks = t.starts_with('/') || t.starts_with("~/") || t.starts_with("./") || t.starts_with("../");
    looks.then(|| t.to_owned())
}

impl State {
    /// `/attach PATH`: read it in the background; the chip appears when it is loaded.
    pub(crate) fn attach_command(&mut self, spec: Option<String>, fx: &mut Vec<Effect>) {
        let Some(spec) = spec.filter(|s| !s.trim().is_empty()) else {
            self.flash("/attach takes a path (Tab completes it) or an https:// URL");
            return;
        };
        let policy = self.target.attachments;
        // Asked about this very path just now: attaching it again is the user's yes.
        let confirmed = self.attach_warned.take().is_some_and(|w| w == spec);
        fx.push(Effect::Attach(AttachEffect::Load { spec, policy, paste: None, confirmed }));
    }

    /// A paste that looks like a path is offered as an attachment; true when it was taken
    /// (the text goes into the draft later if it turns out not to be a file).
    pub(crate) fn paste_as_attachment(&mut self, text: &str, fx: &mut Vec<Effect>) -> bool {
        let Some(spec) = pasted_path(text) else { return false };
        let policy = self.target.attachments;
        fx.push(Effect::Attach(AttachEffect::Load { spec, policy, paste: Some(text.to_owned()), confirmed: false }));
        true
    }

    /// Tab in the composer: completes the path of `/attach …`; false when the draft is not one.
    pub(crate) fn complete_attach_path(&mut self, fx: &mut Vec<Effect>) -> bool {
        let typed = self.composer.text();
        if !typed.starts_with(ATTACH) || typed.contains('\n') {
            return false;
        }
        fx.push(Effect::Attach(AttachEffect::Complete { typed }));
        true
    }

    /// Removes the newest chip; says so.
    pub(crate) fn remove_attachment(&mut self) {
        let pasted = self.pasted_paths.pop().flatten();
        match (self.attachments.pop(), pasted) {
            (Some(a), Some(text)) => {
                // It was a paste: the user may have meant the text.
                self.composer.paste(&text);
                self.flash(format!("removed {}; the pasted path is in the draft", a.name));
            }
            (Some(a), None) => self.flash(format!("removed {}", a.name)),
            (None, _) => self.flash("nothing is attached"),
        }
    }

    /// Opens the selected message's first image (attached or generated) in the system viewer.
    pub(crate) fn open_image(&mut self, fx: &mut Vec<Effect>) {
        let Some(m) = self.selected.and_then(|id| self.transcript.message(id)) else {
            self.flash("select a message with an image first");
            return;
        };
        let source = m
            .attachments
            .iter()
            .find_map(|a| {
                a.data
                    .as_ref()
                    .filter(|_| a.is_image())
                    .map(|d| ImageSource::Bytes { name: a.name.clone(), data: d.clone() })
            })
            .or_else(|| {
                m.item_notes
                    .values()
                    .filter_map(|n| n.get("saved_path").and_then(|p| p.as_str()))
                    // From the message's JSON: only a file palaver saved under `<data dir>/images/`.
                    .find_map(crate::engine::images::saved_image)
                    .map(ImageSource::File)
            });
        match source {
            Some(s) => {
                self.flash("opening the image in the system viewer…");
                fx.push(Effect::Attach(AttachEffect::Open(s)));
            }
            None => self.flash("this message has no image to open"),
        }
    }

    /// Applies an attachment answer.
    pub(crate) fn on_attach(&mut self, msg: AttachMsg) {
        self.dirty = true;
        match msg {
            AttachMsg::Loaded { result: Ok(a), paste, .. } => {
                let earlier = crate::engine::attachment::history_bytes(&self.transcript.request_refs())
                    + self.attachments.iter().map(|a| a.size).sum::<u64>();
                // In a compare the columns' providers decide, each for itself.
                let checked = self.compare_attach_check(std::slice::from_ref(&a)).unwrap_or_else(|| {
                    crate::engine::attachment::check(
                        std::slice::from_ref(&a),
                        earlier,
                        &self.target.attachments,
                        self.target.api,
                    )
                    .map(|()| Vec::new())
                });
                match checked {
                    Ok(refused) => {
                        let key = self.keymap.hint(super::keymap::Action::Detach);
                        let undo = if paste.is_some() { " and types the path instead" } else { "" };
                        let not = if refused.is_empty() {
                            String::new()
                        } else {
                            format!(" · sent without it to {}", refused.join("; "))
                        };
                        let text = format!("attached {}{not} · {key} removes it{undo}", a.describe());
                        self.flash_about(text, false, super::state::FlashAbout::Attachments);
                        self.attachments.push(a);
                        self.pasted_paths.resize(self.attachments.len() - 1, None);
                        self.pasted_paths.push(paste);
                    }
                    Err(e) => self.flash_error(e),
                }
            }
            AttachMsg::NoClipboardImage(why) => self.flash_error(why),
            // A paste that is not a readable file was text after all.
            AttachMsg::Loaded { result: Err(_), paste: Some(text), .. } => self.composer.paste(&text),
            AttachMsg::Loaded { spec, result: Err(e), paste: None } => {
                self.flash_error(e);
                // The command line comes back so the path can be fixed; a draft typed since stays.
                if self.composer.text().is_empty() {
                    self.composer.set_text(&format!("{ATTACH}{spec}"));
                }
            }
            AttachMsg::Secret { spec, why, .. } => {
                self.flash_error(format!(
                    "not attached: {} — {why}; /attach it again to send it to the provider anyway",
                    crate::text::sanitize::sanitize(&spec)
                ));
                self.attach_warned = Some(spec.clone());
                if self.composer.text().is_empty() {
                    self.composer.set_text(&format!("{ATTACH}{spec}"));
                }
            }
            AttachMsg::Completed { typed, draft, candidates } => {
                if self.composer.text() != typed {
                    return;
                }
                if let Some(d) = draft {
                    self.composer.set_text(&d);
                }
                if candidates.len() > 1 {
                    let shown: Vec<&str> = candidates.iter().take(8).map(String::as_str).collect();
                    let more = if candidates.len() > 8 {
                        format!(" … {} more", candidates.len() - 8)
                    } else {
                        String::new()
                    };
                    self.flash(format!("{}{more}", shown.join("  ")));
                } else if candidates.is_empty() {
                    self.flash("no file matches");
                }
            }
            AttachMsg::Opened(path) => self.flash(format!("opened {} in the system viewer", path.display())),
            AttachMsg::OpenFailed(e) => {
                // The whole reason and path, wrapped in the transcript: a status line would cut them.
                self.transcript.push_notice(crate::app::transcript::NoticeKind::Error, e);
                self.flash_error("the image could not be opened: see why in the transcript");
            }
        }
    }
}

/// Completes the path in `typed` (`/attach some/pa`): the longest common extension of the
/// names in its folder that start with what was typed. Directories get a trailing slash.
/// Blocking (it lists a folder).
#[must_use]
pub fn complete(typed: &str) -> (Option<String>, Vec<String>) {
    let Some(path) = typed.strip_prefix(ATTACH) else { return (None, Vec::new()) };
    let expanded = match path.strip_prefix("~/") {
        Some(rest) => {
            std::env::var_os("HOME").map_or_else(|| path.to_owned(), |h| format!("{}/{rest}", h.to_string_lossy()))
        }
        None => path.to_owned(),
    };
    let (dir, stem) = match expanded.rfind('/') {
        Some(i) => (&expanded[..=i], &expanded[i + 1..]),
        None => ("", expanded.as_str()),
    };
    let Ok(entries) = std::fs::read_dir(if dir.is_empty() { "." } else { dir }) else { return (None, Vec::new()) };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let hidden = name.starts_with('.') && !stem.starts_with('.');
            (name.starts_with(stem) && !hidden).then(|| if e.path().is_dir() { format!("{name}/") } else { name })
        })
        .collect();
    names.sort();
    let Some(first) = names.first() else { return (None, names) };
    let mut common = first.clone();
    for n in &names[1..] {
        let same = common.chars().zip(n.chars()).take_while(|(a, b)| a == b).count();
        common = common.chars().take(same).collect();
    }
    let typed_dir = &path[..path.len() - stem.len()];
    (Some(format!("{ATTACH}{typed_dir}{common}")), names)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::app::msg::Msg;
    use crate::app::test_state;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    fn png() -> Attachment {
        let mut bytes = Vec::new();
        image::RgbImage::new(4, 4).write_to(&mut std::io::Cursor::new(&mut bytes), image::ImageFormat::Png).unwrap();
        Attachment::from_bytes("p.png", bytes).unwrap()
    }

    fn enter(s: &mut State) -> Vec<Effect> {
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)))
    }

    #[test]
    fn a_chip_goes_with_the_next_message_and_comes_back_if_it_fails() {
        let mut s = test_state();
        s.apply(Msg::Attach(AttachMsg::Loaded { spec: "p.png".into(), result: Ok(png()), paste: None }));
        assert_eq!(s.attachments.len(), 1);
        // Attachments alone can be sent.
        let fx = enter(&mut s);
        let Some(Effect::StartRequest { id, body, .. }) =
            fx.into_iter().find(|e| matches!(e, Effect::StartRequest { .. }))
        else {
            panic!("no request")
        };
        assert_eq!(body["messages"][0]["content"][0]["type"], "image_url");
        assert!(s.attachments.is_empty());
        let err = crate::engine::message::ErrorInfo {
            status: Some(500),
            message: "down".into(),
            kind: "http".into(),
            body: serde_json::Value::Null,
        };
        s.apply(Msg::Wire { id, event: Box::new(crate::api::client::WireEvent::Failed(err)), now_ms: 5 });
        assert_eq!(s.attachments.len(), 1, "the chip is back with the draft");
    }

    #[test]
    fn a_file_holding_secrets_asks_and_attaching_it_again_sends_it() {
        let mut s = test_state();
        let why = "it holds a private key (PEM block)".to_owned();
        s.apply(Msg::Attach(AttachMsg::Secret { spec: "notes.txt".into(), why, paste: None }));
        assert!(s.attachments.is_empty(), "nothing attached before the user says so");
        let flash = s.flash.as_ref().unwrap();
        assert!(
            flash.error && flash.text.contains("notes.txt") && flash.text.contains("private key"),
            "{}",
            flash.text
        );
        assert!(flash.text.contains("/attach it again"), "{}", flash.text);
        assert_eq!(s.composer.text(), "/attach notes.txt");
        let load = |fx: &[Effect]| {
            fx.iter().find_map(|e| match e {
                Effect::Attach(AttachEffect::Load { spec, confirmed, .. }) => Some((spec.clone(), *confirmed)),
                _ => None,
            })
        };
        // Enter on the command that came back is the user's yes, for that path only.
        let fx = enter(&mut s);
        assert_eq!(load(&fx), Some(("notes.txt".into(), true)));
        let mut fx = Vec::new();
        s.attach_command(Some("notes.txt".into()), &mut fx);
        assert_eq!(load(&fx), Some(("notes.txt".into(), false)), "one yes, once");
        let why = "it usually holds secrets (environment secrets (.env))".to_owned();
        s.apply(Msg::Attach(AttachMsg::Secret { spec: ".env".into(), why, paste: None }));
        let mut fx = Vec::new();
        s.attach_command(Some("other.txt".into()), &mut fx);
        assert_eq!(load(&fx), Some(("other.txt".into(), false)));
    }

    #[test]
    fn failures_keep_the_draft() {
        let mut s = test_state();
        s.composer.set_text("half a question");
        let err = AttachMsg::Loaded {
            spec: "/nope.png".into(),
            result: Err("cannot attach /nope.png: missing".into()),
            paste: None,
        };
        s.apply(Msg::Attach(err));
        assert_eq!(s.composer.text(), "half a question");
        assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("missing")));
        // A pasted "path" that is no file is pasted as text after all.
        let paste = AttachMsg::Loaded { spec: "/x".into(), result: Err("no".into()), paste: Some(" /x y".into()) };
        s.apply(Msg::Attach(paste));
        assert!(s.composer.text().ends_with(" /x y"), "{}", s.composer.text());
        // The command comes back to be fixed when the composer was empty.
        s.composer.clear();
        s.apply(Msg::Attach(AttachMsg::Loaded { spec: "./typo.png".into(), result: Err("bad".into()), paste: None }));
        assert_eq!(s.composer.text(), "/attach ./typo.png");
    }

    #[test]
    fn a_pasted_path_is_offered_as_an_attachment() {
        let mut s = test_state();
        let fx = s.apply(Msg::Paste("/tmp/photo.png".into()));
        assert!(matches!(&fx[..], [Effect::Attach(AttachEffect::Load { paste: Some(_), .. })]), "{fx:?}");
        assert!(s.composer.text().is_empty());
        let fx = s.apply(Msg::Paste("just words".into()));
        assert!(fx.is_empty());
        assert_eq!(s.composer.text(), "just words");
        // Taken as a chip; removing it types the path after all.
        s.composer.clear();
        s.apply(Msg::Attach(AttachMsg::Loaded {
            spec: "/tmp/p.png".into(),
            result: Ok(png()),
            paste: Some("/tmp/p.png".into()),
        }));
        assert_eq!((s.attachments.len(), s.composer.text().as_str()), (1, ""));
        s.remove_attachment();
        assert_eq!((s.attachments.len(), s.composer.text().as_str()), (0, "/tmp/p.png"));
    }

    #[test]
    fn v_opens_the_selected_messages_image() {
        let mut s = test_state();
        let mut user = crate::engine::message::Message::user("look");
        user.attachments.push(png());
        let id = s.transcript.push_message(user);
        s.selected = Some(id);
        let mut fx = Vec::new();
        s.open_image(&mut fx);
        assert!(
            matches!(&fx[..], [Effect::Attach(AttachEffect::Open(ImageSource::Bytes { name, .. }))] if name == "p.png"),
            "{fx:?}"
        );
        let text = s.transcript.push_message(crate::engine::message::Message::user("no image"));
        s.selected = Some(text);
        let mut fx = Vec::new();
        s.open_image(&mut fx);
        assert!(fx.is_empty());
        // A `saved_path` from the message's JSON (an import) outside `<data dir>/images/`.
        let mut reply = crate::engine::message::Message::assistant_pending();
        reply.item_notes.entry(0).or_default().insert("saved_path".into(), "/etc/passwd".into());
        s.selected = Some(s.transcript.push_message(reply));
        let mut fx = Vec::new();
        s.open_image(&mut fx);
        assert!(fx.is_empty(), "{fx:?}");
    }

    #[test]
    fn a_viewer_that_fails_is_said_with_the_file() {
        let mut s = test_state();
        s.apply(Msg::Attach(AttachMsg::OpenFailed(
            "cannot open the image: xdg-open failed (exit 3); the file is /d/open/ab.png".into(),
        )));
        let notice = s.transcript.cells.iter().rev().find_map(|c| match c {
            crate::app::transcript::Cell::Notice(n) => Some(n.text.clone()),
            crate::app::transcript::Cell::Message(_) => None,
        });
        assert!(
            notice.is_some_and(|t| t.contains("exit 3") && t.contains("/d/open/ab.png")),
            "the reason and the path stay readable"
        );
        assert!(s.flash.as_ref().is_some_and(|f| f.error));
        s.apply(Msg::Attach(AttachMsg::Opened("/d/open/ab.png".into())));
        assert!(s.flash.as_ref().is_some_and(|f| !f.error && f.text.contains("/d/open/ab.png")));
    }

    #[test]
    fn pasted_paths() {
        assert_eq!(pasted_path("'/tmp/a b.png'\n"), Some("/tmp/a b.png".into()));
        assert_eq!(pasted_path("file:///x/y.pdf"), Some("/x/y.pdf".into()));
        assert_eq!(pasted_path("hello world"), None);
        assert_eq!(pasted_path("/a\n/b"), None);
    }

    #[test]
    fn completes_a_unique_name_and_lists_many() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("photo.png"), b"x").unwrap();
        std::fs::write(dir.path().join("paper-1.pdf"), b"x").unwrap();
        std::fs::write(dir.path().join("paper-2.pdf"), b"x").unwrap();
        let base = dir.path().display().to_string();
        let (d, c) = complete(&format!("{ATTACH}{base}/ph"));
        assert_eq!(d, Some(format!("{ATTACH}{base}/photo.png")));
        assert_eq!(c.len(), 1);
        let (d, c) = complete(&format!("{ATTACH}{base}/pa"));
        assert_eq!(d, Some(format!("{ATTACH}{base}/paper-")));
        assert_eq!(c, vec!["paper-1.pdf".to_owned(), "paper-2.pdf".to_owned()]);
    }
}
