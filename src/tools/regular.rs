//! Opening a file only when it is a regular file. Opening a FIFO for reading blocks until a
//! writer comes (perhaps never), and a device or `/dev/zero` never ends: a blocked thread would
//! keep palaver alive after its work is done. The kind is checked before opening (following
//! links, as the open does), and the open itself is non-blocking and checked again on the open
//! descriptor, so a file swapped for a FIFO in between is still caught without waiting.

use std::fs::File;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;

/// Why a path cannot be read as a file, when it is not a regular one: "a FIFO (named pipe)",
/// "a socket", "a device", "a directory".
#[must_use]
pub fn not_regular(kind: std::fs::FileType) -> Option<&'static str> {
    if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some("a directory")
    } else if kind.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_block_device() || kind.is_char_device() {
        Some("a device")
    } else {
        Some("not a regular file")
    }
}

/// Why opening failed: the file is not a regular one (never opened, or opened without waiting
/// and closed), or the system's error.
#[derive(Debug)]
pub enum OpenError {
    /// What the path is instead of a regular file (see [`not_regular`]).
    NotRegular(&'static str),
    /// Metadata or open failed.
    Io(std::io::Error),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotRegular(what) => write!(f, "it is {what}, not a regular file; only regular files are read"),
            Self::Io(e) => e.fmt(f),
        }
    }
}

/// Opens `path` for reading if it is a regular file, without ever waiting on it.
///
/// # Errors
/// The path is not a regular file, or cannot be examined or opened.
pub fn open_regular(path: &Path) -> Result<File, OpenError> {
    let meta = std::fs::metadata(path).map_err(OpenError::Io)?;
    if let Some(what) = not_regular(meta.file_type()) {
        return Err(OpenError::NotRegular(what));
    }
    // O_NONBLOCK: a FIFO swapped in after the check opens at once instead of waiting for a
    // writer; on a regular file the flag changes nothing.
    let nonblock = rustix::fs::OFlags::NONBLOCK.bits();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(i32::try_from(nonblock).unwrap_or(0))
        .open(path)
        .map_err(OpenError::Io)?;
    let meta = file.metadata().map_err(OpenError::Io)?;
    match not_regular(meta.file_type()) {
        Some(what) => Err(OpenError::NotRegular(what)),
        None => Ok(file),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
    }

    #[test]
    fn refuses_fifo_socket_device_and_directory_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        mkfifo(&fifo);
        let sock = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let cases = [
            (fifo.as_path(), "FIFO"),
            (sock.as_path(), "socket"),
            (Path::new("/dev/zero"), "device"),
            (dir.path(), "directory"),
        ];
        for (path, word) in cases {
            let e = open_regular(path).unwrap_err();
            assert!(matches!(e, OpenError::NotRegular(_)) && e.to_string().contains(word), "{path:?}: {e}");
        }
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        assert!(matches!(open_regular(&link), Err(OpenError::NotRegular("a FIFO (named pipe)"))));
    }

    #[test]
    fn opens_a_regular_file_and_reads_it() {
        use std::io::Read as _;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        std::fs::write(&p, "hello").unwrap();
        let mut s = String::new();
        open_regular(&p).unwrap().read_to_string(&mut s).unwrap();
        assert_eq!(s, "hello");
        assert!(matches!(open_regular(&dir.path().join("none")), Err(OpenError::Io(_))));
    }
}
