//! Opening the history when it cannot be written (a read-only mount, a full disk): reading
//! only, with no migration, no writer thread and nothing created.

use super::{Inner, NoticeFn, StoreError, StoreHandle, StoreOptions};
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::sync::{Arc, Mutex};

impl StoreHandle {
    /// Opens the database for reading only: no migration, no writer thread, nothing created.
    /// For `history list|show|export` when the file or its directory cannot be written (a
    /// read-only mount, a full disk); writes through this handle are dropped with a notice.
    ///
    /// # Errors
    /// The file cannot be opened or is not a database.
    pub fn open_read_only(path: &Path, opts: StoreOptions) -> Result<Self, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
        // A WAL database in a directory that cannot be written opens only as immutable (no
        // -shm can be made); what a crashed writer left in the WAL is then not seen.
        let reader = Connection::open_with_flags(path, flags)
            .and_then(|c| c.query_row("PRAGMA user_version", [], |r| r.get::<_, u32>(0)).map(|_| c))
            .or_else(|_| Connection::open_with_flags(immutable_uri(path), flags))?;
        reader.busy_timeout(opts.busy_timeout)?;
        let found: u32 = reader.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        let notify: NoticeFn =
            opts.on_notice.clone().unwrap_or_else(|| Arc::new(|n| eprintln!("palaver: {}", n.message)));
        Ok(Self {
            inner: Arc::new(Inner {
                tx: None,
                live_in_flight: Arc::default(),
                reader: Mutex::new(reader),
                path: path.to_path_buf(),
                store_frames: opts.store_frames,
                notify,
                thread: None,
            }),
        })
        .and_then(|h| if found == 0 { Err(StoreError::Format("not a palaver database".into())) } else { Ok(h) })
    }
}

/// `file:PATH?immutable=1`, with the characters a URI gives meaning to escaped.
pub(super) fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' | '?' | '#' => uri.push_str(&format!("%{:02X}", c as u32)),
            c => uri.push(c),
        }
    }
    uri.push_str("?immutable=1");
    uri
}
