//! The interactive loop, above `app` and `ui`: it ties the terminal (`tui`), the app's state
//! and effects (`app`) and drawing (`ui`) together. One channel of `Msg`s drained in bursts,
//! `State::apply` for each, the effects carried out, and a frame drawn when something changed
//! and the frame limiter allows. Idle means asleep: no tick and no draw until a message arrives.

mod frame_log;
mod unsaved;

use crate::app::attach::{AttachEffect, AttachMsg};
use crate::app::compare::runner::ColumnRunner;
use crate::app::effect::Effect;
use crate::app::msg::Msg;
use crate::app::persist::Reopen;
use crate::app::runner::Runner;
use crate::app::state::{State, TICK_MS, TargetInfo};
use crate::app::storage::Storage;
use crate::app::tools::{ToolEffect, ToolMsg};
use crate::app::transcript::NoticeKind;
use crate::config::{Config, Paths};
use crate::engine::target::{Target, TurnSettings};
use crate::tui::frame::FrameLimiter;
use crate::tui::input::{Input, TermEvent};
use crate::tui::terminal::TerminalGuard;
use crate::tui::{editor, osc52};
use crate::ui::{self, RenderCache, theme::Theme};
use std::collections::VecDeque;
use std::io::Write;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::{self, UnboundedSender};

/// A terminal event as the app's message.
fn to_msg(ev: TermEvent) -> Msg {
    match ev {
        TermEvent::Key(k) => Msg::Key(k),
        TermEvent::Mouse(m) => Msg::Mouse(m),
        TermEvent::Paste(s) => Msg::Paste(s),
        TermEvent::Resize { width, height } => Msg::Resize { width, height },
        TermEvent::Focus(focused) => Msg::Focus(focused),
    }
}

/// Most messages taken from the channel at once.
const BURST: usize = 1024;

/// Longest the loop applies queued messages before it looks again at keys and at a frame that
/// fell due: a fast stream's deltas are applied in slices, so they never hold up either.
const SLICE: Duration = Duration::from_millis(4);
/// Syntax highlighting one frame may do; code rows past it are drawn plain until later frames
/// reach them (`ui::frame_budget`), so a long block scrolling into view does not stall a frame.
const HIGHLIGHT_BUDGET: Duration = Duration::from_millis(4);
/// Markdown layout one frame may do; an answer that brought more between two frames (four
/// compare columns at full speed) is shown as far as this got, and later frames go on.
const LAYOUT_BUDGET: Duration = Duration::from_millis(4);

/// Runs the chat screen until the user quits; returns the exit status.
pub async fn run(target: Target, cfg: Config, paths: Paths, settings: TurnSettings) -> u8 {
    run_with(target, cfg, paths, settings, Reopen::default(), Vec::new()).await
}

/// [`run`], reopening a stored conversation first when `reopen` asks (`--continue`, `--resume`).
/// `providers`: the preset found by its key variable, or several to offer in a picker (nothing
/// configured).
pub async fn run_with(
    target: Target,
    cfg: Config,
    paths: Paths,
    settings: TurnSettings,
    reopen: Reopen,
    providers: Vec<(String, String)>,
) -> u8 {
    launch(target, cfg, paths, settings, Start { reopen, columns: Vec::new(), arena: false, providers }).await
}

/// [`run`] in compare mode: one column per target (2–4, resolved by the CLI), all fed from the
/// one composer; the first target is the chat's own.
pub async fn run_compare(columns: Vec<Target>, cfg: Config, paths: Paths, settings: TurnSettings) -> u8 {
    let Some(first) = columns.first().cloned() else { return 2 };
    launch(first, cfg, paths, settings, Start { columns, ..Start::default() }).await
}

/// The blind arena on two to four targets (`palaver compare --arena -m A -m B [-m C -m D]`).
pub async fn run_arena(columns: Vec<Target>, cfg: Config, paths: Paths, settings: TurnSettings) -> u8 {
    let Some(first) = columns.first().cloned() else { return 2 };
    launch(first, cfg, paths, settings, Start { columns, arena: true, ..Start::default() }).await
}

/// How the screen opens besides its target: a conversation to reopen, compare columns (an arena
/// or not), presets to offer in the provider picker.
#[derive(Default)]
struct Start {
    reopen: Reopen,
    columns: Vec<Target>,
    arena: bool,
    providers: Vec<(String, String)>,
}

async fn launch(target: Target, cfg: Config, paths: Paths, settings: TurnSettings, start: Start) -> u8 {
    let Start { reopen, columns, arena, providers } = start;
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let themes_dir = paths.themes_dir();
    // A theme chosen with `/theme` is newer than the config file's.
    let remembered = crate::config::remembered::Remembered::load(&paths).theme;
    let wanted = remembered.or_else(|| cfg.theme.clone()).unwrap_or_else(|| "dark".to_owned());
    let (theme, theme_name, theme_error) = match Theme::load(&wanted, Some(&themes_dir), no_color) {
        Ok(t) => (t, wanted, None),
        Err(e) => match Theme::load("dark", None, no_color) {
            Ok(t) => (t, "dark".to_owned(), Some(format!("theme {wanted}: {e}; using dark"))),
            Err(e2) => {
                eprintln!("palaver: cannot load a theme: {e}; {e2}");
                return 2;
            }
        },
    };
    let http = match crate::api::client::endpoint_client(&target.endpoint) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("palaver: cannot start the HTTP client: {e}");
            return 1;
        }
    };
    let mut state = State::new(TargetInfo::from_target(&target), settings, cfg, theme, &theme_name);
    load_user_commands(&mut state, &paths);
    state.demo_fallback.clone_from(&target.fallback);
    if !providers.is_empty() {
        state.offer_providers(&providers);
    }
    if let Some(e) = theme_error {
        state.transcript.push_notice(NoticeKind::Error, e);
    }
    let store = match Storage::start(&paths, &reopen, &mut state) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let guard = match TerminalGuard::enter(state.mouse) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("palaver: cannot take over the terminal: {e}");
            return 1;
        }
    };
    if let Ok(size) = guard.terminal.size() {
        state.apply(Msg::Resize { width: size.width, height: size.height });
    }
    let (tx, rx) = mpsc::unbounded_channel();
    crate::app::tools::setup(&mut state, &tx);
    if reopen.compact {
        // Through the loop, so the summary's request goes out as any other.
        let _ = tx.send(Msg::Compact(None));
    }
    let column_http = http.clone();
    let mut runner = Runner::new(tx.clone(), http, target.endpoint.clone(), themes_dir, no_color);
    // Off the first frame: the server's answer arrives as a message, as any other.
    if let Some(Effect::LearnWindow(model)) = state.window_lookup() {
        runner.learn_window(model);
    }
    let compare = ColumnRunner::new(tx.clone(), column_http, runner.clock(), state.cfg.clone(), &target, &columns)
        .with_votes(paths.database());
    let infos: Vec<TargetInfo> = columns.iter().map(TargetInfo::from_target).collect();
    // PALAVER_ARENA_SEED fixes the arena's order (tests); otherwise it is drawn from the clock.
    let seed = std::env::var("PALAVER_ARENA_SEED").ok().and_then(|s| s.parse().ok());
    let opened = match (arena, infos.is_empty()) {
        (true, _) => {
            state.open_arena(infos, seed.unwrap_or_else(|| crate::engine::evals::stats::Rng::from_time().next_u64()))
        }
        (false, false) => state.open_compare(infos),
        (false, true) => Ok(()),
    };
    if let Err(e) = opened {
        state.flash_error(e);
    }
    store.attach(tx.clone());
    let mut cache = RenderCache::default();
    (cache.images.mode, cache.images.font) = crate::tui::graphics::probe(no_color);
    let (images_tx, images_rx) = mpsc::unbounded_channel();
    // The terminal's events have a channel of their own, read before anything else, so a key
    // never waits behind the deltas of a fast stream already queued (see `Loop::run`).
    let (keys_tx, keys_rx) = mpsc::unbounded_channel();
    let mut app = Loop {
        state,
        guard,
        runner,
        input: Some(Input::spawn(keys_tx.clone(), to_msg)),
        keys_tx,
        tx,
        cache,
        store,
        compare,
        images_tx,
        paths: paths.clone(),
    };
    let status = app.run(rx, keys_rx, images_rx).await;
    if let Some(input) = app.input.take() {
        input.stop().await;
    }
    // MCP sessions end before the process does: a remote server gets its session's DELETE.
    app.state.tools.set.0.close_mcp().await;
    // A reply is never lost quietly: what could not be saved is offered once the screen closes.
    let store = app.store.handle();
    let saved = unsaved::flush(store.clone()).await;
    // A store that could not be opened at all (a read-only or full disk, a locked database)
    // kept nothing: a conversation held is offered as a failing write is.
    let has_messages = app.state.transcript.cells.iter().any(|c| c.message().is_some());
    let saved = saved.and_then(|()| unsaved::never_opened(app.state.persist.off_reason.as_deref(), has_messages));
    let resume = app.state.persist.id.clone().filter(|_| !app.state.transcript.cells.is_empty());
    let earlier_unread = app.state.head_unread();
    let unsaved = saved.is_err().then(|| unsaved::Unsaved {
        id: app.state.persist.id.clone(),
        title: app.state.persist.title.clone(),
        model: target.model.clone(),
        messages: app.state.transcript.cells.iter().filter_map(|c| c.message().cloned()).collect(),
    });
    // Dropping the guard restores the terminal; `target` (and a demo server in it) lives until here.
    drop(app);
    drop(target);
    // An MCP server still starting (one that never answers `initialize`) or a tool still
    // running is in a task nobody awaits any more: end its process group, or it outlives palaver.
    crate::tools::process::kill_all();
    match (saved, unsaved) {
        (Err(reason), Some(conv)) => {
            unsaved::offer(store, conv, unsaved::tail_only(reason, earlier_unread), status).await
        }
        _ => {
            if let Some(id) = resume {
                // Said on the restored terminal, where the user will look for it.
                // Not `println!`: after a hang-up the terminal is gone and a failed write must
                // not turn a clean exit into a panic.
                let _ = writeln!(
                    std::io::stdout(),
                    "palaver: conversation saved; to come back to it: palaver --resume {id}"
                );
            }
            status
        }
    }
}

struct Loop {
    state: State,
    guard: TerminalGuard,
    runner: Runner,
    input: Option<Input>,
    /// Where the input task sends the terminal's events (read first, see `run`).
    keys_tx: UnboundedSender<Msg>,
    tx: UnboundedSender<Msg>,
    cache: RenderCache,
    /// The history store (writes queue on its thread; reads run on blocking tasks).
    store: Storage,
    /// Compare columns' requests, one endpoint per provider.
    compare: ColumnRunner,
    /// Pictures made on blocking threads come back here (see `ui::images`).
    images_tx: UnboundedSender<(crate::ui::images::Key, crate::ui::images::Picture)>,
    /// Where remembered choices are written.
    paths: Paths,
}

impl Loop {
    async fn run(
        &mut self,
        mut rx: mpsc::UnboundedReceiver<Msg>,
        mut keys: mpsc::UnboundedReceiver<Msg>,
        mut images: mpsc::UnboundedReceiver<(crate::ui::images::Key, crate::ui::images::Picture)>,
    ) -> u8 {
        let mut frames = FrameLimiter::default();
        let mut burst = Vec::with_capacity(BURST);
        let mut backlog: VecDeque<Msg> = VecDeque::with_capacity(BURST);
        let mut next_tick: Option<tokio::time::Instant> = None;
        let mut seen = 0;
        // The last change came from the terminal (a key): its frame may come early.
        let mut typed = false;
        // A polite kill (SIGTERM) or a hang-up (SIGHUP) ends the loop like Ctrl+Q, so the guard
        // restores the terminal and the partial reply is saved.
        let mut terminate = terminate_signal();
        let mut log = frame_log::FrameLog::from_env();
        loop {
            // Keys first, before the frame: what was typed is in the next frame drawn, however
            // many deltas are queued (they are applied after it, in bursts between frames).
            let version = self.state.version;
            let start = Instant::now();
            while let Ok(msg) = keys.try_recv() {
                self.apply(msg).await;
            }
            log.applied(start.elapsed());
            typed |= self.state.version != version;
            if self.state.version != seen {
                seen = self.state.version;
                if std::mem::take(&mut typed) {
                    frames.request_typed();
                } else {
                    frames.request();
                }
            }
            let now = Instant::now();
            if frames.ready(now) {
                let sched = log.before_draw();
                let short = match self.draw() {
                    Ok(short) => short,
                    Err(e) => {
                        let _ = self.guard.suspend();
                        eprintln!("palaver: cannot draw: {e}");
                        return 1;
                    }
                };
                if log.on() {
                    let live = self.state.live.is_some() || self.state.compare.is_live();
                    log.frame(now, now.elapsed(), live, sched);
                }
                frames.drew(now);
                if short {
                    // Some code rows were drawn plain, or an answer's layout is behind its text:
                    // the next frame goes on.
                    frames.request();
                }
                continue;
            }
            if self.state.quit {
                return 0;
            }
            if !backlog.is_empty() {
                // A slice of what is queued, then back to the top: keys typed meanwhile, then a
                // frame if one fell due, then the next slice. The runtime has one thread: the
                // input task forwards a key only when this loop yields, so a slice cut short
                // does (one that emptied the queue goes on to wait for more, as before).
                let start = Instant::now();
                while let Some(msg) = backlog.pop_front() {
                    self.apply(msg).await;
                    if start.elapsed() >= SLICE {
                        break;
                    }
                }
                log.applied(start.elapsed());
                if !backlog.is_empty() {
                    tokio::task::yield_now().await;
                }
                continue;
            }
            next_tick = match (self.state.wants_tick(), next_tick) {
                (false, _) => None,
                (true, None) => Some(tokio::time::Instant::now() + Duration::from_millis(TICK_MS)),
                (true, t) => t,
            };
            let deadline = frames.deadline(now).map(tokio::time::Instant::from_std);
            tokio::select! {
                Some(msg) = keys.recv() => {
                    let version = self.state.version;
                    let start = Instant::now();
                    self.apply(msg).await;
                    log.applied(start.elapsed());
                    typed = self.state.version != version;
                }
                n = rx.recv_many(&mut burst, BURST) => {
                    if n == 0 {
                        return 0;
                    }
                    backlog.extend(burst.drain(..));
                }
                () = sleep_until(deadline), if deadline.is_some() => {}
                signal = terminated(&mut terminate) => {
                    // Saved at once (the reply as far as it got, naming the signal), then the
                    // guard restores the terminal; 130 is the contract's "interrupted" (DESIGN.md §2).
                    self.apply(Msg::Terminated(signal)).await;
                    return 130;
                }
                Some((key, picture)) = images.recv() => {
                    self.cache.images.insert(key, picture);
                    frames.request();
                }
                () = sleep_until(next_tick), if next_tick.is_some() => {
                    next_tick = None;
                    let now_ms = self.runner.now_ms();
                    self.apply(Msg::Tick { now_ms }).await;
                }
            }
        }
    }

    /// Draws a frame; whether its highlighting budget ran short (draw again soon).
    fn draw(&mut self) -> std::io::Result<bool> {
        let mut report = None;
        let (state, cache) = (&self.state, &mut self.cache);
        let budget = ui::frame_budget::FrameBudget::time(HIGHLIGHT_BUDGET, LAYOUT_BUDGET);
        self.guard.draw(|f| report = Some(ui::draw(f, state, cache)))?;
        let short = budget.starved();
        drop(budget);
        if let Some(r) = report {
            self.state.apply(Msg::Viewport(r));
        }
        // Pictures the frame asked for are decoded and scaled off the UI task.
        for job in self.cache.images.take_jobs() {
            let tx = self.images_tx.clone();
            tokio::task::spawn_blocking(move || {
                let picture = crate::ui::images::render(&job);
                let _ = tx.send((job.key, picture));
            });
        }
        Ok(short)
    }

    /// Writes a notification as `notify` in config.toml says (the app said when).
    fn notify(&mut self, text: &str) {
        use crate::config::notify::NotifyMode;
        let mode = self.state.cfg.notify_mode();
        if mode == NotifyMode::Command {
            let command = self.state.cfg.notify_command.clone().unwrap_or_default();
            if let Err(e) = crate::tui::notify::run_command(&command, text) {
                let text = format!("notify_command: {e}");
                let _ = self.tx.send(Msg::Store(crate::app::persist::StoreMsg::Notice { error: true, text }));
            }
            return;
        }
        let seq = crate::tui::notify::sequence(mode, text, &crate::tui::notify::TermKind::from_env());
        if !seq.is_empty() {
            // A terminal that cannot be written to fails the next draw loudly.
            let _ = self.guard.write_raw(seq.as_bytes());
        }
    }

    /// Applies a message and carries out its effects (and theirs, breadth first).
    async fn apply(&mut self, msg: Msg) {
        let mut queue: VecDeque<Effect> = self.state.apply(msg).into();
        while let Some(effect) = queue.pop_front() {
            match effect {
                Effect::StartRequest { id, api, body } => self.runner.start_request(id, api, body),
                Effect::CancelRequest { id } => self.runner.cancel(id),
                Effect::FetchModels => self.runner.fetch_models(),
                Effect::LearnWindow(model) => self.runner.learn_window(model),
                Effect::LoadTheme(name) => self.runner.load_theme(name),
                Effect::Copy(text) => {
                    // A terminal that cannot be written to shows nothing anyway; the next draw fails loudly.
                    let _ = self.guard.write_raw(osc52::sequence(&text).as_bytes());
                    // OSC 52 confirms nothing: a clipboard tool, where there is one, does.
                    let tx = self.tx.clone();
                    tokio::task::spawn_blocking(move || {
                        let (tool, tool_error) = match crate::tui::clipboard::system_copy(&text) {
                            Ok(t) => (Some(t.to_owned()), None),
                            Err(e) => (None, Some(e)),
                        };
                        let tmux_drops_osc52 = tool.is_none() && crate::tui::clipboard::tmux_drops_osc52();
                        let _ = tx.send(Msg::Copied(crate::app::msg::Copied { tool, tool_error, tmux_drops_osc52 }));
                    });
                }
                Effect::OpenEditor(draft) => {
                    let result = self.edit(draft).await;
                    queue.extend(self.state.apply(Msg::Edited(result)));
                }
                // The state already says so; the loop ends after this burst.
                Effect::Quit => {}
                Effect::Mouse(on) => {
                    // A terminal that cannot be written to fails the next draw loudly.
                    let _ = self.guard.set_mouse(on);
                }
                Effect::RememberTheme(name) => {
                    let (paths, tx) = (self.paths.clone(), self.tx.clone());
                    tokio::task::spawn_blocking(move || {
                        let mut r = crate::config::remembered::Remembered::load(&paths);
                        r.theme = Some(name);
                        if let Err(e) = r.save(&paths) {
                            let _ = tx.send(Msg::Store(crate::app::persist::StoreMsg::Notice { error: true, text: e }));
                        }
                    });
                }
                Effect::Persist(op) => self.store.run(op),
                Effect::Compare(e) => self.compare.run(e, &mut self.runner),
                Effect::Tools(ToolEffect::EditArgs(draft)) => {
                    let result = self.edit(draft).await;
                    queue.extend(self.state.apply(Msg::Tools(ToolMsg::ArgsEdited(result))));
                }
                Effect::Tools(ToolEffect::CopyCurl { provider, api, body }) => {
                    // A compare column's request goes to its own provider's endpoint.
                    let curl = if provider == self.state.target.provider {
                        Some(self.runner.curl(api, &body))
                    } else {
                        self.compare.curl(&provider, api, &body)
                    };
                    match curl {
                        Some(text) => queue.push_back(Effect::Copy(text)),
                        None => {
                            let text = format!("no curl: the endpoint of {provider} is not known yet");
                            let notice = crate::app::persist::StoreMsg::Notice { error: true, text };
                            queue.extend(self.state.apply(Msg::Store(notice)));
                        }
                    }
                }
                Effect::Tools(e) => self.runner.tool_effect(e),
                Effect::Attach(AttachEffect::PasteImage { cmd, policy }) => {
                    let tx = self.tx.clone();
                    tokio::task::spawn_blocking(move || {
                        let _ = tx.send(Msg::Attach(clipboard_attachment(cmd.as_deref(), &policy)));
                    });
                }
                Effect::Attach(e) => self.runner.attach_effect(e),
                Effect::Notify(text) => self.notify(&text),
            }
        }
    }

    /// Hands the terminal to `$EDITOR` and takes it back.
    async fn edit(&mut self, draft: String) -> Result<String, String> {
        if let Some(input) = self.input.take() {
            input.stop().await;
        }
        let _ = self.guard.suspend();
        let result =
            tokio::task::spawn_blocking(move || editor::edit(&draft)).await.unwrap_or_else(|e| Err(e.to_string()));
        let resumed = self.guard.resume();
        self.input = Some(Input::spawn(self.keys_tx.clone(), to_msg));
        if let Err(e) = resumed {
            return Err(format!("could not take the terminal back: {e}"));
        }
        result
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The signals that end the chat screen politely: SIGTERM (a polite kill) and SIGHUP (the
/// terminal or the SSH session went away). Without a handler SIGHUP killed palaver on the spot,
/// leaving the terminal raw on the alternate screen and the reply's last words unsaved.
#[cfg(unix)]
struct Terminate {
    term: Option<tokio::signal::unix::Signal>,
    hup: Option<tokio::signal::unix::Signal>,
}
#[cfg(not(unix))]
struct Terminate;

#[cfg(unix)]
fn terminate_signal() -> Terminate {
    use tokio::signal::unix::{SignalKind, signal};
    Terminate { term: signal(SignalKind::terminate()).ok(), hup: signal(SignalKind::hangup()).ok() }
}

#[cfg(not(unix))]
fn terminate_signal() -> Terminate {
    Terminate
}

/// Resolves with the signal's name when SIGTERM or SIGHUP arrives; never when neither can be
/// watched.
async fn terminated(t: &mut Terminate) -> &'static str {
    #[cfg(unix)]
    {
        async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            () = recv(&mut t.term) => "SIGTERM",
            () = recv(&mut t.hup) => "SIGHUP",
        }
    }
    #[cfg(not(unix))]
    {
        let _ = t;
        std::future::pending::<&'static str>().await
    }
}

/// The user's own slash commands (`<config dir>/commands/`, `.palaver/commands/` in the
/// workspace), read here so the state gets them as data; what was skipped is said once.
fn load_user_commands(state: &mut State, paths: &crate::config::Paths) {
    let root = crate::tools::setup::workspace(&state.cfg, paths)
        .map(|w| w.root().to_path_buf())
        .or_else(|_| std::env::current_dir().map_err(|e| e.to_string()))
        .unwrap_or_default();
    let (commands, notes) =
        crate::config::commands::load(&paths.config_dir.join("commands"), &root.join(".palaver").join("commands"));
    // A built-in command of the same name wins: said once, and the file is left out.
    let (shadowed, commands): (Vec<_>, Vec<_>) = commands.into_iter().partition(|c| {
        let slash = format!("/{}", c.name);
        crate::app::commands::COMMANDS.iter().any(|(b, _, _)| *b == slash)
    });
    let notes = notes
        .into_iter()
        .chain(shadowed.iter().map(|c| format!("/{} is built in, so {} is not used", c.name, c.path.display())));
    state.mine.commands = commands;
    for n in notes {
        let n = crate::text::sanitize::sanitize(&n).into_owned();
        state.transcript.push_notice(NoticeKind::Error, format!("commands: {n}"));
    }
}

/// The clipboard's image as an attachment (blocking: a clipboard tool runs), through the same
/// checks as a file: typed from its bytes, within the size limit; anything else is said.
fn clipboard_attachment(cmd: Option<&[String]>, policy: &crate::config::attachments::AttachmentPolicy) -> AttachMsg {
    let bytes = match crate::tui::clipboard_image::read(cmd, crate::tui::clipboard_image::WAIT) {
        Ok(b) => b,
        Err(e) => return AttachMsg::NoClipboardImage(crate::text::sanitize::sanitize(&e).into_owned()),
    };
    let result = crate::engine::attach_load::load("-", Some(bytes), policy).map_err(|e| e.0).and_then(|mut a| {
        if !a.is_image() {
            return Err(format!("no image on the clipboard: it holds {}", a.media_type));
        }
        let ext = a.media_type.rsplit('/').next().unwrap_or("png").to_owned();
        a.name = format!("clipboard.{ext}");
        Ok(a)
    });
    match result {
        Ok(a) => AttachMsg::Loaded { spec: "clipboard".into(), result: Ok(a), paste: None },
        Err(e) => AttachMsg::NoClipboardImage(e),
    }
}
