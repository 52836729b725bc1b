//! The run's view of Ctrl+C (and SIGTERM, SIGHUP). The listener belongs to the command line
//! (`cli::interrupt`), which hands each run one of these.

use tokio::sync::watch;

/// Whether the user asked the run to stop: never set when no listener was installed (tests,
/// compare columns driven by another loop).
#[derive(Clone)]
pub struct Stop {
    flag: Option<watch::Receiver<bool>>,
    /// The signal that asked the run to end, when it was not Ctrl+C.
    signal: fn() -> Option<&'static str>,
}

impl Stop {
    /// A stop watching `flag`, naming the signal with `signal`.
    #[must_use]
    pub fn new(flag: Option<watch::Receiver<bool>>, signal: fn() -> Option<&'static str>) -> Self {
        Self { flag, signal }
    }

    /// A stop that never fires.
    #[must_use]
    pub fn never() -> Self {
        Self::new(None, || None)
    }

    /// Whether the user pressed Ctrl+C.
    #[must_use]
    pub fn is_set(&self) -> bool {
        self.flag.as_ref().is_some_and(|rx| *rx.borrow())
    }

    /// The signal that asked this run to end, when it was SIGTERM or SIGHUP (`None` for
    /// Ctrl+C): a reply it cut short is stored naming it.
    #[must_use]
    pub fn ended_by(&self) -> Option<&'static str> {
        (self.signal)()
    }

    /// Resolves once the user has pressed Ctrl+C (at once if they already have).
    pub async fn fired(&mut self) {
        match self.flag.as_mut() {
            Some(rx) => {
                if rx.wait_for(|set| *set).await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending::<()>().await,
        }
    }
}
