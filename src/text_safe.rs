//! Text that reaches a terminal made harmless: the one place control characters in names,
//! host names, user names, command lines and error reasons (all of which other people or
//! remote hosts choose) are shown escaped, as `ps` does, instead of being written raw where
//! they would set the title, clear the screen or switch screens. Every text output (the
//! `--once` snapshot, log lines on stderr, alert messages) passes through here; JSON and the
//! Prometheus text format have their own escaping and do not. Knows nothing of GPUs.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` must not be written raw: C0 controls (tab and line feed included: a line
/// feed inside a command would forge a row), DEL, C1 controls (U+0080..U+009F, which some
/// terminals read as CSI and OSC) and the bidirectional overrides and isolates, which
/// reorder what is shown after them.
fn unsafe_char(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// The bidirectional overrides and isolates (U+202A..U+202E, U+2066..U+2069): written raw,
/// they reorder what a terminal shows after them. The TUI's encoder replaces them too.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every unsafe character escaped: `\e` for ESC, `\t`, `\n`, `\r`, `\xNN` for the
/// other C0/C1 controls and DEL, `\u{NNNN}` for the bidi controls. Borrowed when nothing
/// needed escaping (the usual case), so it costs nothing on clean text.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        push_escaped(&mut out, c);
    }
    Cow::Owned(out)
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\u{1b}' => out.push_str("\\e"),
        '\t' => out.push_str("\\t"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        c if (c as u32) < 0x100 && unsafe_char(c) => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if unsafe_char(c) => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
        c => out.push(c),
    }
}

/// Multi-line text with each line escaped and the line breaks kept: the last pass over a
/// whole text output, so a field someone forgot to escape still cannot reach the terminal.
pub fn escape_lines(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c != '\n' && unsafe_char(c)) {
        return Cow::Borrowed(text);
    }
    let lines: Vec<Cow<'_, str>> = text.split('\n').map(escape).collect();
    Cow::Owned(lines.join("\n"))
}

/// Bytes that may not be UTF-8 (an environment value, a file name): valid text escaped as
/// above, every invalid byte as `\xNN`.
pub fn escape_bytes(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        out.push_str(&escape(chunk.valid()));
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_escaped_like_ps() {
        assert_eq!(
            escape("\u{1b}]0;owned\u{7}\u{1b}[2J sleep"),
            "\\e]0;owned\\x07\\e[2J sleep"
        );
        assert_eq!(escape("a\tb\nc\rd\u{7f}\u{9b}"), "a\\tb\\nc\\rd\\x7f\\x9b");
        assert_eq!(escape("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
    }

    #[test]
    fn clean_text_is_borrowed_unchanged() {
        let s = "python train.py --lr 3e-4 · ünïcode 😀 \\e";
        assert!(matches!(escape(s), Cow::Borrowed(t) if t == s));
    }

    #[test]
    fn lines_keep_their_breaks() {
        assert_eq!(escape_lines("a\u{1b}c\nb\n"), "a\\ec\nb\n");
    }

    #[test]
    fn invalid_bytes_are_escaped_too() {
        assert_eq!(escape_bytes(b"\xff1s\x1b"), "\\xff1s\\e");
    }
}
