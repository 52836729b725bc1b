//! What a sandboxed command's stderr says the sandbox refused, in words a user reads on the
//! card ("blocked by the sandbox (network closed)") rather than the program's own
//! ("Couldn't connect to server"). Programs never name the sandbox: curl says it could not
//! connect, wget "failed: Operation not permitted", Python `[Errno 1] Operation not permitted`
//! under a traceback naming `socket`, Node `EPERM` with `syscall: 'connect'`, a resolver that
//! could not send its UDP query "Temporary failure in name resolution".
//!
//! The rule, line by line:
//! - **network** (only while the sandbox closes it): a line with a phrase only a failed
//!   connection or lookup prints ([`NETWORK`]), or a refusal ([`REFUSED`]) within
//!   [`NEAR`] lines of a socket word ([`SOCKET_WORDS`]). With the network closed no connection
//!   can succeed, so whatever the program blames, the sandbox is why;
//! - **write**: "Read-only file system" / `EROFS` (the read-only bind mounts over `.git/hooks`
//!   and the like), or "Permission denied" / `EACCES` on a line that says it was writing
//!   ([`WRITING`]: `cannot create`, `cannot touch`, `could not lock`, Python's `Errno 13`…).
//!   Landlock refuses writes outside the writable paths with `EACCES` and never refuses a read
//!   or an exec, so a bare "Permission denied" (`./script.sh` not executable) is not labelled.
//!
//! A line that matches nothing labels nothing: the generic note ([`super::sandbox::Policy::failure_hint`])
//! still says the sandbox may be why.

/// What the sandbox refused, as its label says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Network,
    Write,
}

impl Refusal {
    /// The label a card's status and the model's result carry.
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Self::Network => "blocked by the sandbox (network closed)",
            Self::Write => "write refused by the sandbox",
        }
    }

    /// The refusals a tool's output was labelled with (its `[palaver: LABEL]` lines).
    #[must_use]
    pub fn in_output(text: &str) -> Vec<Self> {
        [Self::Network, Self::Write].into_iter().filter(|r| text.contains(&r.marker())).collect()
    }

    /// The line that labels a result with this refusal.
    #[must_use]
    pub fn marker(self) -> String {
        format!("[palaver: {}]", self.label())
    }
}

/// Phrases only a failed connection or name lookup prints (curl, wget, git, glibc, Python, Node).
const NETWORK: [&str; 10] = [
    "Couldn't connect to server",
    "Could not resolve host",
    "Failed to connect to",
    "Temporary failure in name resolution",
    "Name or service not known",
    "unable to resolve host",
    "Network is unreachable",
    "getaddrinfo EAI_AGAIN",
    "getaddrinfo ENOTFOUND",
    "Connecting to ",
];

/// How a refused system call reads.
const REFUSED: [&str; 4] = ["Operation not permitted", "Permission denied", "EPERM", "EACCES"];

/// Words that tie a nearby refusal to a socket (a traceback's frame, Node's `syscall:` field).
const SOCKET_WORDS: [&str; 6] = ["socket", "connect", "urlopen", "getaddrinfo", "http.client", "/dev/tcp/"];

/// How programs say a refused call was a write (matched lowercased): sh, coreutils, git,
/// Python, Node, and tools that say "for writing".
const WRITING: [&str; 19] = [
    "cannot create",
    "can't create",
    "cannot touch",
    "cannot remove",
    "cannot make",
    "cannot move",
    "cannot overwrite",
    "cannot write",
    "could not create",
    "could not write",
    "could not lock",
    "unable to create",
    "unable to write",
    "unable to unlink",
    "failed to create",
    "failed to write",
    "for writing",
    "errno 13",
    "eacces: permission denied, ",
];

/// Lines either side of a refusal searched for a socket word.
const NEAR: usize = 4;

/// The refusals `stderr` shows, network first; `network_closed`: the sandbox closes the
/// network (else no line is read as a network refusal).
#[must_use]
pub fn find(stderr: &[u8], network_closed: bool) -> Vec<Refusal> {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().collect();
    let (mut network, mut write) = (false, false);
    for (i, line) in lines.iter().enumerate() {
        let refused = says_refused(line);
        // A neighbour speaks for this line only when it is no refusal or failure of its own
        // (a refused write next to curl's "Failed to connect" stays a write).
        let near = &lines[i.saturating_sub(NEAR)..(i + NEAR + 1).min(lines.len())];
        let socket = refused
            && near
                .iter()
                .filter(|l| *l == line || !(says_refused(l) || says_network(l)))
                .any(|l| SOCKET_WORDS.iter().any(|w| l.to_lowercase().contains(w)));
        if network_closed && (says_network(line) || socket) {
            network = true;
        } else if line.contains("Read-only file system")
            || line.contains("EROFS")
            || (line.contains("Permission denied") || line.contains("EACCES")) && {
                let lower = line.to_lowercase();
                WRITING.iter().any(|w| lower.contains(w))
            }
        {
            write = true;
        }
    }
    [(network, Refusal::Network), (write, Refusal::Write)].into_iter().filter(|(on, _)| *on).map(|(_, r)| r).collect()
}

fn says_refused(line: &str) -> bool {
    REFUSED.iter().any(|r| line.contains(r))
}

/// A failed connection or lookup; wget's "Connecting to HOST... " line only when it failed.
fn says_network(line: &str) -> bool {
    NETWORK.iter().any(|p| line.contains(p)) && (!line.starts_with("Connecting to ") || line.contains("failed"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Refusal::{Network, Write};

    #[test]
    fn programs_refused_a_socket_read_as_the_network_closed() {
        let seen: [&str; 9] = [
            "nc: connect to 127.0.0.1 port 80 (tcp) failed: Operation not permitted",
            "curl: (7) Failed to connect to 127.0.0.1 port 18404 after 0 ms: Couldn't connect to server",
            "curl: (6) Could not resolve host: example.com",
            "Connecting to 127.0.0.1:18404... failed: Operation not permitted.",
            "wget: unable to resolve host address 'example.com'",
            "  File \"/usr/lib/python3.11/socket.py\", line 232, in __init__\n    _socket.socket.__init__(self)\n\
             PermissionError: [Errno 1] Operation not permitted",
            "urllib.error.URLError: <urlopen error [Errno 1] Operation not permitted>",
            "  errno: -1,\n  code: 'EPERM',\n  syscall: 'connect',\n  address: '127.0.0.1',",
            "socket: Operation not permitted\nssh: connect to host 127.0.0.1 port 22: failure",
        ];
        for s in seen {
            assert_eq!(find(s.as_bytes(), true), vec![Network], "{s}");
            // With the network open, a failed connection is the network's own business.
            assert!(!find(s.as_bytes(), false).contains(&Network), "{s}");
        }
        // bash's /dev/tcp under Landlock alone: EACCES on connect.
        assert_eq!(
            find(b"sh: connect: Permission denied\nsh: /dev/tcp/127.0.0.1/80: Permission denied", true),
            [Network]
        );
    }

    #[test]
    fn refused_writes_are_told_apart_from_the_network() {
        let write = "sh: 1: cannot create /home/u/outside: Permission denied";
        assert_eq!(find(write.as_bytes(), true), vec![Write]);
        assert_eq!(find(b"touch: cannot touch '.git/hooks/pre-commit': Read-only file system", false), vec![Write]);
        let both = format!("{write}\ncurl: (7) Failed to connect to h port 80 after 0 ms: Couldn't connect to server");
        assert_eq!(find(both.as_bytes(), true), vec![Network, Write]);
        // What is no refusal labels nothing; wget's "Connecting to" line alone is progress.
        assert!(find(b"grep: x: No such file or directory\nConnecting to h:80... connected.", true).is_empty());
        assert!(find(b"chmod: changing permissions of '/etc/x': Operation not permitted", true).is_empty());
        // Landlock never refuses an exec or a read: a script that is not executable is no write.
        assert!(find(b"sh: 1: ./build.sh: Permission denied", true).is_empty());
        for w in [
            "touch: cannot touch '/opt/x': Permission denied",
            "error: could not lock config file .git/config: Permission denied",
            "PermissionError: [Errno 13] Permission denied: '/home/u/out.txt'",
            "Error: EACCES: permission denied, open '/home/u/out.txt'",
            "mkdir: cannot create directory '/opt/d': Permission denied",
        ] {
            assert_eq!(find(w.as_bytes(), true), vec![Write], "{w}");
        }
    }

    #[test]
    fn labels_are_found_again_in_a_result() {
        let out = format!("exit status: 0\nstdout:\n\nstderr:\n…\n{}", Write.marker());
        assert_eq!(Refusal::in_output(&out), vec![Write]);
        assert!(Refusal::in_output("blocked by the sandbox (network closed) said the model").is_empty());
    }
}
