//! Reading an attachment from where the user named it: a path, an `http(s)://` URL (sent as
//! a URL, never downloaded), or `-` (bytes already read from stdin). The size limit is checked
//! against the file's length before it is read, so a 3 GB file costs nothing. Blocking: the
//! chat screen calls it on a blocking task.

use super::attachment::{AttachError, Attachment, too_large};
use crate::config::attachments::AttachmentPolicy;
use std::path::Path;

/// Whether a spec names a URL.
#[must_use]
pub fn is_url(spec: &str) -> bool {
    let lower = spec.get(..8).unwrap_or(spec).to_ascii_lowercase();
    lower.starts_with("https://") || lower.starts_with("http://")
}

/// Loads every spec in order and checks them together against the provider's policy, before
/// anything is sent: the one path for `-a` and for a prompt set's `attach`. `stdin` is asked
/// for the bytes of each spec as it comes (only `-` has any).
///
/// # Errors
/// The first spec that cannot be loaded, or the set breaking a limit or the policy.
pub fn load_all(
    specs: &[String],
    mut stdin: impl FnMut(&str) -> Option<Vec<u8>>,
    policy: &AttachmentPolicy,
    api: crate::api::Api,
) -> Result<Vec<Attachment>, String> {
    let all =
        specs.iter().map(|spec| load(spec, stdin(spec), policy).map_err(|e| e.0)).collect::<Result<Vec<_>, _>>()?;
    super::attachment::check(&all, 0, policy, api)?;
    Ok(all)
}

/// Loads `spec` (see the module header); `stdin` holds the bytes for `-`.
///
/// # Errors
/// An unreadable path, a file over the per-file limit, or a type no provider takes.
pub fn load(spec: &str, stdin: Option<Vec<u8>>, policy: &AttachmentPolicy) -> Result<Attachment, AttachError> {
    if is_url(spec) {
        return Ok(Attachment::from_url(spec));
    }
    let limit = policy.max_file_bytes();
    if spec == "-" {
        let bytes = stdin.ok_or_else(|| AttachError("cannot attach -: nothing was piped on stdin".into()))?;
        if bytes.len() as u64 > limit {
            // Read no further than one byte past the limit: how much more there was is unknown.
            return Err(AttachError(format!(
                "cannot attach stdin: more than {} was piped, over the limit per file; nothing was sent \
                 (raise it in the provider's profile: attachments = {{ max_file_mb = … }})",
                crate::text::fmt::size(usize::try_from(limit).unwrap_or(usize::MAX))
            )));
        }
        return Attachment::from_bytes("stdin", bytes);
    }
    let path = Path::new(spec);
    // Only a regular file, judged before opening: opening a FIFO blocks until a writer comes,
    // and a device may never end. The open is non-blocking and checked again.
    let file = crate::sys::read::open_regular(path).map_err(|e| AttachError(format!("cannot attach {spec}: {e}")))?;
    let meta = file.metadata().map_err(|e| AttachError(format!("cannot attach {spec}: {e}")))?;
    if meta.len() > limit {
        return Err(AttachError(too_large(spec, meta.len(), limit, "max_file_mb")));
    }
    // One more byte than the limit: a file that grew since `metadata` is still caught.
    let bytes = crate::sys::read::head(file, usize::try_from(limit.saturating_add(1)).unwrap_or(usize::MAX))
        .map_err(|e| AttachError(format!("cannot attach {spec}: {e}")))?;
    if bytes.len() as u64 > limit {
        return Err(AttachError(too_large(spec, bytes.len() as u64, limit, "max_file_mb")));
    }
    let name = path.file_name().map_or_else(|| spec.to_owned(), |n| n.to_string_lossy().into_owned());
    let a = Attachment::from_bytes(&name, bytes)?;
    if let Some(d) = &a.data {
        // Encoded here, on the loading thread, so building a request later copies instead of encoding.
        let _ = d.data_uri(&a.media_type);
    }
    Ok(a)
}

/// Why an attachment loaded from `spec` should not go to a provider without the user saying
/// so: a file that usually holds secrets by its name, or one whose text holds a credential.
#[must_use]
pub fn secret_in(spec: &str, a: &Attachment) -> Option<String> {
    if is_url(spec) || spec == "-" {
        return None;
    }
    // By the name given and by the name it resolves to (a harmless-looking link to `.env`).
    let resolved = std::fs::canonicalize(spec).ok();
    let named = std::iter::once(Path::new(spec)).chain(resolved.as_deref());
    if let Some(kind) = named.filter_map(crate::tools::workspace::secret_kind).next() {
        return Some(format!("it usually holds secrets ({kind})"));
    }
    // Images are pixels; every other kind is scanned (text, PDFs keep much of theirs as text).
    let data = a.data.as_ref().filter(|_| !a.is_image())?;
    let kinds = crate::text::secrets::find(&String::from_utf8_lossy(data.bytes()));
    (!kinds.is_empty()).then(|| format!("it holds {}", crate::text::secrets::describe(&kinds)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_by_name_and_by_content() {
        let dir = tempfile::tempdir().unwrap();
        let env = dir.path().join(".env");
        std::fs::write(&env, "A=1").unwrap();
        let notes = dir.path().join("notes.txt");
        std::fs::write(&notes, format!("deploy notes\ntoken = ghp_{}\n", "a1".repeat(18))).unwrap();
        let plain = dir.path().join("plain.txt");
        std::fs::write(&plain, "hello").unwrap();
        let p = AttachmentPolicy::default();
        let why = |path: &Path| {
            let spec = path.to_str().unwrap();
            secret_in(spec, &load(spec, None, &p).unwrap())
        };
        assert_eq!(why(&env).as_deref(), Some("it usually holds secrets (environment secrets (.env))"));
        assert_eq!(why(&notes).as_deref(), Some("it holds a GitHub token"));
        assert_eq!(why(&plain), None);
        #[cfg(unix)]
        {
            let link = dir.path().join("innocent.txt");
            std::os::unix::fs::symlink(&env, &link).unwrap();
            assert!(why(&link).is_some_and(|w| w.contains("environment secrets")));
        }
    }

    #[test]
    fn limits_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.bin");
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(30 * 1024 * 1024).unwrap();
        let e = load(p.to_str().unwrap(), None, &AttachmentPolicy::default()).unwrap_err();
        assert!(e.0.contains("30.0 MB") && e.0.contains("20.0 MB") && e.0.contains("nothing was sent"), "{e}");
        assert!(load("/no/such/file.png", None, &AttachmentPolicy::default()).unwrap_err().0.contains("cannot attach"));
        assert!(load(dir.path().to_str().unwrap(), None, &AttachmentPolicy::default()).is_err());
    }

    #[test]
    fn type_from_bytes_not_name() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("looks_like.txt");
        std::fs::write(&p, b"%PDF-1.7\n%\xe2\xe3\n").unwrap();
        let a = load(p.to_str().unwrap(), None, &AttachmentPolicy::default()).unwrap();
        assert_eq!((a.kind, a.media_type.as_str()), (super::super::attachment::AttachKind::File, "application/pdf"));
        let s = load("-", Some(b"plain words".to_vec()), &AttachmentPolicy::default()).unwrap();
        assert_eq!((s.kind, s.name.as_str()), (super::super::attachment::AttachKind::Text, "stdin"));
        assert!(
            load(
                "-",
                Some(vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
                &AttachmentPolicy::default()
            )
            .is_err()
        );
        assert!(load("HTTPS://x.test/a.png", None, &AttachmentPolicy::default()).unwrap().is_image());
    }

    #[test]
    fn a_fifo_socket_or_device_is_refused_before_opening() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        // Opened for reading, the FIFO would block until a writer came.
        let e = load(fifo.to_str().unwrap(), None, &AttachmentPolicy::default()).unwrap_err();
        assert!(e.0.starts_with("cannot attach") && e.0.contains("FIFO") && e.0.contains("not a regular file"), "{e}");
        let e = load("/dev/zero", None, &AttachmentPolicy::default()).unwrap_err();
        assert!(e.0.contains("a device"), "{e}");
        let e = load(dir.path().to_str().unwrap(), None, &AttachmentPolicy::default()).unwrap_err();
        assert!(e.0.contains("a directory"), "{e}");
    }
}
