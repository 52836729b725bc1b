//! Strips terminal control sequences from model and tool text. (Placeholder.)

use std::borrow::Cow;

/// Text safe to put in a span: no ESC/CSI/OSC/DCS/C1/bidi controls; tabs become spaces.
#[must_use]
pub fn sanitize(s: &str) -> Cow<'_, str> {
    Cow::Borrowed(s)
}
