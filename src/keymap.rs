//! The one table from keys to actions. The help screen is generated from it, so a key
//! cannot work without being documented or be documented without working.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::state::Action;
use crate::state::procs::SortKey;

/// One binding: the keys, how help names them, and what they do.
pub struct Binding {
    pub keys: &'static [KeyCode],
    pub label: &'static str,
    pub action: Action,
    pub help: &'static str,
}

const fn ch(c: char) -> KeyCode {
    KeyCode::Char(c)
}

pub const BINDINGS: &[Binding] = &[
    Binding {
        keys: &[ch('q')],
        label: "q, Ctrl-C",
        action: Action::Quit,
        help: "quit",
    },
    Binding {
        keys: &[ch('?'), KeyCode::F(1)],
        label: "?, F1",
        action: Action::ToggleHelp,
        help: "show/hide this help",
    },
    Binding {
        keys: &[KeyCode::Esc],
        label: "Esc",
        action: Action::Back,
        help: "close help",
    },
    Binding {
        keys: &[KeyCode::Up, ch('k')],
        label: "↑, k",
        action: Action::SelectUp,
        help: "select previous process",
    },
    Binding {
        keys: &[KeyCode::Down, ch('j')],
        label: "↓, j",
        action: Action::SelectDown,
        help: "select next process",
    },
    Binding {
        keys: &[KeyCode::PageUp],
        label: "PgUp",
        action: Action::PageUp,
        help: "page up",
    },
    Binding {
        keys: &[KeyCode::PageDown],
        label: "PgDn",
        action: Action::PageDown,
        help: "page down",
    },
    Binding {
        keys: &[KeyCode::Home, ch('g')],
        label: "Home, g",
        action: Action::SelectFirst,
        help: "first process",
    },
    Binding {
        keys: &[KeyCode::End, ch('G')],
        label: "End, G",
        action: Action::SelectLast,
        help: "last process",
    },
    Binding {
        keys: &[ch('s'), KeyCode::Right],
        label: "s, →",
        action: Action::SortNext,
        help: "sort by next column",
    },
    Binding {
        keys: &[ch('S'), KeyCode::Left],
        label: "S, ←",
        action: Action::SortPrev,
        help: "sort by previous column",
    },
    Binding {
        keys: &[ch('r')],
        label: "r",
        action: Action::SortReverse,
        help: "reverse sort order",
    },
    Binding {
        keys: &[ch('M')],
        label: "M",
        action: Action::SortBy(SortKey::Vram),
        help: "sort by VRAM",
    },
    Binding {
        keys: &[ch('%')],
        label: "%",
        action: Action::SortBy(SortKey::GpuUtil),
        help: "sort by GPU%",
    },
    Binding {
        keys: &[ch('P')],
        label: "P",
        action: Action::SortBy(SortKey::Cpu),
        help: "sort by CPU%",
    },
    Binding {
        keys: &[ch('U')],
        label: "U",
        action: Action::SortBy(SortKey::User),
        help: "sort by user",
    },
    Binding {
        keys: &[ch('N')],
        label: "N",
        action: Action::SortBy(SortKey::Pid),
        help: "sort by PID",
    },
    Binding {
        keys: &[ch('E')],
        label: "E",
        action: Action::SortBy(SortKey::Time),
        help: "sort by elapsed time",
    },
    Binding {
        keys: &[ch('p'), ch(' ')],
        label: "p, Space",
        action: Action::TogglePause,
        help: "pause/resume updates",
    },
    Binding {
        keys: &[ch('c')],
        label: "c",
        action: Action::ToggleCompact,
        help: "compact/full GPU panels",
    },
    Binding {
        keys: &[ch('['), ch('<')],
        label: "[, <",
        action: Action::ScrollGpusUp,
        help: "scroll GPUs up",
    },
    Binding {
        keys: &[ch(']'), ch('>')],
        label: "], >",
        action: Action::ScrollGpusDown,
        help: "scroll GPUs down",
    },
];

/// The keys as a Markdown table, for the README (a test keeps the two identical).
pub fn markdown_table() -> String {
    let mut out = String::from("| key | action |\n| --- | --- |\n");
    for b in BINDINGS {
        let keys: Vec<String> = b.label.split(", ").map(|k| format!("`{k}`")).collect();
        out += &format!("| {} | {} |\n", keys.join(", "), b.help);
    }
    out
}

/// Maps a key event to an action. Only presses count (Windows terminals also send releases).
pub fn action_for(key: KeyEvent) -> Option<Action> {
    if key.kind != KeyEventKind::Press {
        return None;
    }
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        return matches!(key.code, KeyCode::Char('c')).then_some(Action::Quit);
    }
    BINDINGS
        .iter()
        .find(|b| b.keys.contains(&key.code))
        .map(|b| b.action)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn keys_map_to_actions() {
        assert_eq!(action_for(press(ch('q'))), Some(Action::Quit));
        assert_eq!(
            action_for(KeyEvent::new(ch('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(action_for(press(ch('c'))), Some(Action::ToggleCompact));
        assert_eq!(action_for(press(KeyCode::Down)), Some(Action::SelectDown));
        assert_eq!(
            action_for(press(ch('M'))),
            Some(Action::SortBy(SortKey::Vram))
        );
        assert_eq!(action_for(press(ch('x'))), None);
    }

    #[test]
    fn releases_are_ignored() {
        let mut k = press(ch('q'));
        k.kind = KeyEventKind::Release;
        assert_eq!(action_for(k), None);
    }

    #[test]
    fn no_key_is_bound_twice() {
        let mut seen = std::collections::HashSet::new();
        for b in BINDINGS {
            for k in b.keys {
                assert!(seen.insert(format!("{k:?}")), "{k:?} bound twice");
            }
        }
    }
}
