//! The demo's `/v1/files`: uploads streamed to a temporary folder of the server's own, file
//! objects as OpenAI returns them, and contents streamed back from disk. Batches keep their
//! input, output and error files here.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::errors;
use super::{DemoState, now};

/// One stored file's facts.
#[derive(Debug, Clone)]
pub struct FileMeta {
    pub id: String,
    pub filename: String,
    pub purpose: String,
    pub bytes: u64,
    pub created_at: u64,
}

impl FileMeta {
    pub fn json(&self) -> Value {
        json!({
            "id": self.id, "object": "file", "bytes": self.bytes, "created_at": self.created_at,
            "filename": self.filename, "purpose": self.purpose, "status": "processed",
            "expires_at": null, "status_details": null,
        })
    }
}

/// The files and the folder that holds them (made on first use, removed with the server).
#[derive(Default)]
pub struct Files {
    dir: OnceLock<Result<PathBuf, String>>,
    files: Mutex<HashMap<String, FileMeta>>,
    next: AtomicU64,
}

/// Folders of servers in this process: each its own.
static FOLDERS: AtomicU64 = AtomicU64::new(0);

impl Files {
    fn dir(&self) -> Result<&Path, String> {
        self.dir
            .get_or_init(|| {
                sweep_stale(&std::env::temp_dir());
                let n = FOLDERS.fetch_add(1, Ordering::Relaxed);
                let dir = std::env::temp_dir().join(format!("palaver-demo-{}-{n}", std::process::id()));
                std::fs::create_dir_all(&dir).map(|()| dir).map_err(|e| e.to_string())
            })
            .as_ref()
            .map(PathBuf::as_path)
            .map_err(Clone::clone)
    }

    fn map(&self) -> MutexGuard<'_, HashMap<String, FileMeta>> {
        // A panic while holding the lock leaves the map whole: keep serving it.
        self.files.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new file id and the path its content goes to.
    pub fn reserve(&self) -> Result<(String, PathBuf), String> {
        let id = format!("file-demo{:06}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let path = self.dir()?.join(&id);
        Ok((id, path))
    }

    /// Records a file whose content is at its reserved path.
    pub fn add(&self, meta: FileMeta) {
        self.map().insert(meta.id.clone(), meta);
    }

    pub fn get(&self, id: &str) -> Option<FileMeta> {
        self.map().get(id).cloned()
    }

    /// Where a stored file's content is.
    pub fn path(&self, id: &str) -> Option<PathBuf> {
        let dir = self.dir().ok()?;
        self.map().contains_key(id).then(|| dir.join(id))
    }
}

/// Removes the folders of demo servers that are gone: one stopped by a signal or `kill -9`
/// never ran its `Drop`, and a batch bench leaves hundreds of megabytes. Only on Linux, where
/// `/proc` says which processes are alive.
fn sweep_stale(tmp: &Path) {
    if !cfg!(target_os = "linux") {
        return;
    }
    let Ok(entries) = std::fs::read_dir(tmp) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("palaver-demo-")).and_then(|r| r.split('-').next())
        else {
            continue;
        };
        let alive = pid.parse::<u32>().is_ok_and(|p| Path::new("/proc").join(p.to_string()).exists());
        if pid.parse::<u32>().is_ok() && !alive {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        if let Some(Ok(dir)) = self.dir.get() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// `POST /v1/files` (multipart: `purpose`, `file`).
pub async fn upload(State(state): State<Arc<DemoState>>, req: Request) -> Response {
    let content_type = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let Some(boundary) = super::multipart::boundary(content_type) else {
        return errors::bad_request("Expected a multipart/form-data body with `file` and `purpose`", None);
    };
    let (id, path) = match state.files.reserve() {
        Ok(v) => v,
        Err(e) => return errors::bad_request(&format!("the demo cannot store files: {e}"), None),
    };
    let upload = match super::multipart::receive(&boundary, req.into_body(), &path).await {
        Ok(u) => u,
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            return errors::bad_request(&e, Some("file"));
        }
    };
    let Some(filename) = upload.filename.clone() else {
        let _ = std::fs::remove_file(&path);
        return errors::bad_request("Missing required parameter: 'file'", Some("file"));
    };
    let purpose = upload.field("purpose").unwrap_or_default().to_owned();
    if !matches!(purpose.as_str(), "batch" | "assistants" | "user_data" | "fine-tune" | "evals" | "vision") {
        let _ = std::fs::remove_file(&path);
        return errors::bad_request(&format!("'{purpose}' is not one of the supported purposes"), Some("purpose"));
    }
    let meta = FileMeta { id, filename, purpose, bytes: upload.bytes, created_at: now() };
    let body = meta.json();
    state.files.add(meta);
    axum::Json(body).into_response()
}

/// `GET /v1/files/{id}`.
pub async fn retrieve(State(state): State<Arc<DemoState>>, UrlPath(id): UrlPath<String>) -> Response {
    match state.files.get(&id) {
        Some(meta) => axum::Json(meta.json()).into_response(),
        None => no_such_file(&id),
    }
}

/// `GET /v1/files/{id}/content`, streamed from disk.
pub async fn content(State(state): State<Arc<DemoState>>, UrlPath(id): UrlPath<String>) -> Response {
    let Some(path) = state.files.path(&id) else { return no_such_file(&id) };
    let Ok(file) = tokio::fs::File::open(&path).await else { return no_such_file(&id) };
    let stream = futures_util::stream::unfold(file, |mut file| async move {
        use tokio::io::AsyncReadExt;
        let mut buf = vec![0u8; 64 * 1024];
        match file.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok::<Bytes, std::io::Error>(Bytes::from(buf)), file))
            }
            Err(e) => Some((Err(e), file)),
        }
    });
    ([(header::CONTENT_TYPE, "application/octet-stream")], Body::from_stream(stream)).into_response()
}

pub fn no_such_file(id: &str) -> Response {
    let body = errors::body(&format!("No such File object: {id}"), "invalid_request_error", Some("id"), None);
    (StatusCode::NOT_FOUND, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn folders_of_servers_that_are_gone_are_swept_and_live_ones_kept() {
        let tmp = std::env::temp_dir().join(format!("palaver-sweep-test-{}", std::process::id()));
        let dead = tmp.join("palaver-demo-999999999-0");
        let live = tmp.join(format!("palaver-demo-{}-7", std::process::id()));
        let other = tmp.join("palaver-demo-notapid-0");
        for d in [&dead, &live, &other] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join("file-demo000001"), "x").unwrap();
        }
        sweep_stale(&tmp);
        assert!(!dead.exists());
        assert!(live.exists() && other.exists());
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
