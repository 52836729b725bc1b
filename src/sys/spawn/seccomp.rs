//! The seccomp filter a sandboxed command runs under while its network is closed. Landlock
//! (ABI 4) refuses only TCP `bind` and `connect`: UDP, raw, netlink and packet sockets would
//! stay open, and a Unix socket reaches whatever listens on the machine (the user's tmux server,
//! Docker's socket, ssh-agent, a D-Bus bus): a sandboxed command drove tmux to write outside
//! its workspace. So `socket` fails with `EPERM` for every family, Unix included, while
//! `socketpair` may still make Unix pairs (connected to nothing outside: pipes between the
//! command's own processes); `io_uring_setup` fails too, since io_uring can open and connect
//! sockets without those system calls. A process of another architecture (a 32-bit x86
//! program, whose `socketcall` the filter does not read) is killed by the filter rather than
//! let through.
//!
//! rust-vmm's `seccompiler` builds the BPF program and installs it (setting `no_new_privs`)
//! with a safe API: palaver keeps `unsafe_code = "forbid"`. The filter binds the calling
//! thread and everything it executes, like Landlock.

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// The x32 ABI's system calls on x86_64: the same numbers with this bit set, under the same
/// architecture, so the filter names them too.
#[cfg(target_arch = "x86_64")]
const X32_BIT: i64 = 0x4000_0000;

/// Why seccomp could not be had, in words for the notice.
pub const UNAVAILABLE: &str = "seccomp filters are not available here";

/// Installs the filter on the calling thread (and what it later executes).
///
/// # Errors
/// When this architecture has no filter or the kernel refuses it.
pub fn close_sockets() -> Result<(), String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let filter = SeccompFilter::new(rules()?, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)
        .map_err(|e| e.to_string())?;
    let program = BpfProgram::try_from(filter).map_err(|e| e.to_string())?;
    seccompiler::apply_filter(&program).map_err(|e| e.to_string())
}

/// The system calls refused: `socket` always, `socketpair` unless its first argument (the
/// family) is `AF_UNIX`, and `io_uring_setup` always.
fn rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
    let e = |e: seccompiler::BackendError| e.to_string();
    let family = u64::try_from(libc::AF_UNIX).map_err(|e| e.to_string())?;
    let not_unix =
        SeccompRule::new(vec![SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, family).map_err(e)?])
            .map_err(e)?;
    let mut pairs = vec![libc::SYS_socketpair];
    // No conditions: refused whatever its arguments.
    let mut always = vec![libc::SYS_socket, libc::SYS_io_uring_setup];
    #[cfg(target_arch = "x86_64")]
    {
        pairs.push(libc::SYS_socketpair | X32_BIT);
        always.extend([libc::SYS_socket | X32_BIT, libc::SYS_io_uring_setup | X32_BIT]);
    }
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = pairs.into_iter().map(|nr| (nr, vec![not_unix.clone()])).collect();
    rules.extend(always.into_iter().map(|nr| (nr, Vec::new())));
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_socketpairs_are_left_in_a_filtered_thread() {
        let (udp, tcp, unix, pair) = std::thread::spawn(|| {
            if let Err(e) = close_sockets() {
                eprintln!("no seccomp here: {e}");
                return None;
            }
            Some((
                std::net::UdpSocket::bind("127.0.0.1:0").map_err(|e| e.kind()),
                std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.kind()),
                std::os::unix::net::UnixDatagram::unbound().is_err(),
                std::os::unix::net::UnixStream::pair().is_ok(),
            ))
        })
        .join()
        .unwrap_or_else(|_| panic!("the filtered thread panicked"))
        .unwrap_or((
            Err(std::io::ErrorKind::PermissionDenied),
            Err(std::io::ErrorKind::PermissionDenied),
            true,
            true,
        ));
        assert_eq!(udp.err(), Some(std::io::ErrorKind::PermissionDenied));
        assert_eq!(tcp.err(), Some(std::io::ErrorKind::PermissionDenied));
        assert!(unix, "a Unix socket opened: it reaches any daemon listening on the machine");
        assert!(pair, "socketpair stays open");
        // The filter bound only that thread: this one still opens a UDP socket.
        assert!(std::net::UdpSocket::bind("127.0.0.1:0").is_ok());
    }
}
