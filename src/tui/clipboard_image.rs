//! Reading an image from the system clipboard (`/paste-image`, Ctrl+V) through the session's
//! tools: `wl-paste` on Wayland, `xclip` on X, `pngpaste` or `osascript` on macOS, or the
//! command `clipboard_image_cmd` names. Blocking, with a timeout: call it off the UI task.
//! What comes back is checked by the attachment path (typed from its bytes, never trusted).

use crate::sys::spawn::{Role, Spawn};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// How long a clipboard tool may take.
pub const WAIT: Duration = Duration::from_secs(3);
/// More than this is not a screenshot: refused rather than read into memory.
const MAX_BYTES: usize = 64 * 1024 * 1024;

/// The commands worth trying here, in order.
fn candidates() -> Vec<Vec<String>> {
    let words = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let set = |v: &str| std::env::var_os(v).is_some_and(|x| !x.is_empty());
    let mut out = Vec::new();
    if set("WAYLAND_DISPLAY") {
        out.push(words(&["wl-paste", "--no-newline", "--type", "image/png"]));
    }
    if set("DISPLAY") {
        out.push(words(&["xclip", "-selection", "clipboard", "-t", "image/png", "-o"]));
    }
    if cfg!(target_os = "macos") {
        out.push(words(&["pngpaste", "-"]));
        // The clipboard's PNG as hex («data PNGf…»), decoded below.
        out.push(words(&["osascript", "-e", "the clipboard as «class PNGf»"]));
    }
    out
}

/// The image bytes on the clipboard: from `cmd` when configured, else the first tool that has
/// one. `Err` says why there is none (no tool, an empty or non-image clipboard, a timeout).
///
/// # Errors
/// No clipboard tool here, or none gave an image.
pub fn read(cmd: Option<&[String]>, wait: Duration) -> Result<Vec<u8>, String> {
    let tools = match cmd {
        Some(c) if !c.is_empty() => vec![c.to_vec()],
        _ => candidates(),
    };
    if tools.is_empty() {
        return Err("no clipboard tool here (no Wayland or X display, not macOS; set clipboard_image_cmd)".into());
    }
    let mut failures = Vec::new();
    for argv in tools {
        match run(&argv, wait) {
            Ok(bytes) if argv.first().is_some_and(|p| p == "osascript") => match from_applescript(&bytes) {
                Some(b) => return Ok(b),
                None => failures.push("osascript: no image".to_owned()),
            },
            Ok(bytes) if !bytes.is_empty() => return Ok(bytes),
            Ok(_) => failures.push(format!("{}: no image", argv[0])),
            Err(e) => failures.push(format!("{}: {e}", argv[0])),
        }
    }
    Err(format!("no image on the clipboard ({})", failures.join("; ")))
}

/// Runs `argv`, reading its stdout until it exits or `wait` passes (then it is killed).
fn run(argv: &[String], wait: Duration) -> Result<Vec<u8>, String> {
    let (prog, args) = argv.split_first().ok_or("an empty command")?;
    let mut spawn = Spawn::helper(prog, Role::Contained);
    spawn.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = spawn.std().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound { "not installed".to_owned() } else { e.to_string() }
    })?;
    let mut out = child.stdout.take().ok_or("no output")?;
    // The reader thread ends when the child's stdout closes (it exits or is killed).
    let reader = std::thread::spawn(move || crate::sys::read::head(&mut out, MAX_BYTES + 1));
    let deadline = Instant::now() + wait;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer in {} s", wait.as_secs()));
            }
            Err(e) => return Err(e.to_string()),
        }
    };
    let bytes = reader.join().map_err(|_| "the reader failed".to_owned())?.map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("exit {}", status.code().unwrap_or(-1)));
    }
    if bytes.len() > MAX_BYTES {
        return Err(format!("more than {MAX_BYTES} bytes"));
    }
    Ok(bytes)
}

/// AppleScript prints `«data PNGf89504E47…»`: the hex between the tag and the guillemet.
fn from_applescript(out: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(out).ok()?;
    let hex = text.trim().strip_prefix("«data PNGf")?.strip_suffix('»')?;
    (0..hex.len()).step_by(2).map(|i| hex.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), script.into()]
    }

    #[test]
    fn a_configured_command_gives_the_bytes() {
        assert_eq!(read(Some(&sh("printf 'PNGDATA'")), WAIT).unwrap(), b"PNGDATA");
    }

    #[test]
    fn empty_failing_missing_or_slow_tools_say_why() {
        let e = read(Some(&sh("true")), WAIT).unwrap_err();
        assert!(e.starts_with("no image on the clipboard") && e.contains("no image"), "{e}");
        let e = read(Some(&sh("echo nope >&2; exit 1")), WAIT).unwrap_err();
        assert!(e.contains("exit 1"), "{e}");
        let e = read(Some(&["palaver-no-such-tool".to_owned()]), WAIT).unwrap_err();
        assert!(e.contains("not installed"), "{e}");
        let started = Instant::now();
        let e = read(Some(&sh("sleep 5")), Duration::from_millis(300)).unwrap_err();
        assert!(e.contains("no answer"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(3), "the timeout holds");
    }

    #[test]
    fn applescript_hex_is_decoded() {
        assert_eq!(from_applescript("«data PNGf89504E47»\n".as_bytes()), Some(vec![0x89, 0x50, 0x4E, 0x47]));
        assert_eq!(from_applescript(b"missing value"), None);
    }
}
