//! When the status line goes by itself: about 10 s after it last changed. The state stays
//! pure (it reads no clock); the loop watches the line, keeps a deadline on tokio's clock
//! (paused in tests) and sends `Msg::StatusExpired` with the text it saw, which `update`
//! clears only if that text is still the one showing.

use tokio::time::Instant;

use crate::state::{Msg, STATUS_LASTS};

/// The status line the loop last saw and when it goes.
#[derive(Debug, Default)]
pub struct StatusExpiry {
    shown: Option<String>,
    deadline: Option<Instant>,
}

impl StatusExpiry {
    /// Notes the line now showing: a new one gets its own `STATUS_LASTS` from now.
    pub fn track(&mut self, status: &Option<String>) {
        if *status != self.shown {
            self.shown = status.clone();
            self.deadline = status.as_ref().map(|_| Instant::now() + STATUS_LASTS);
        }
    }

    /// Resolves when the line showing is due to go; never when none is.
    pub async fn due(&self) {
        match self.deadline {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    }

    /// The message that clears the line; the deadline is spent whether or not it clears
    /// (a line replaced meanwhile gets a deadline of its own from `track`).
    pub fn expire(&mut self) -> Msg {
        self.deadline = None;
        Msg::StatusExpired(self.shown.clone().unwrap_or_default())
    }
}
