//! The one table from keys to actions. The help screen is generated from it, so a key
//! cannot work without being documented or be documented without working.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::model::procs::SortKey;
use crate::state::signal::Sig;
use crate::state::{Action, InputMode};

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
        keys: &[ch('q'), KeyCode::F(10)],
        label: "q, F10, Ctrl-C",
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
        help: "close help or view / back / clear focus, filters",
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
        keys: &[ch('s'), KeyCode::Right, KeyCode::F(6)],
        label: "s, →, F6",
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
        keys: &[],
        label: "0-9",
        action: Action::FocusGpu(0),
        help: "show only that GPU's processes (1 2: GPU 12; Esc: all)",
    },
    Binding {
        keys: &[ch('w')],
        label: "w",
        action: Action::ToggleWarnings,
        help: "list every warning (the bar shows as many as fit)",
    },
    Binding {
        keys: &[KeyCode::Tab],
        label: "Tab",
        action: Action::FocusNext,
        help: "focus the next GPU",
    },
    Binding {
        keys: &[KeyCode::BackTab],
        label: "Shift-Tab",
        action: Action::FocusPrev,
        help: "focus the previous GPU",
    },
    Binding {
        keys: &[ch('/'), KeyCode::F(3)],
        label: "/, F3",
        action: Action::OpenFilter,
        help: "filter: words, user:, gpu:, cmd:, pid:, vram>10G",
    },
    Binding {
        keys: &[ch('u')],
        label: "u",
        action: Action::ToggleUsers,
        help: "per-user view (Enter: that user's processes)",
    },
    Binding {
        keys: &[KeyCode::Enter],
        label: "Enter",
        action: Action::Choose,
        help: "process detail view (per-user view: choose a user)",
    },
    Binding {
        keys: &[ch('d')],
        label: "d",
        action: Action::GpuDetail,
        help: "the focused GPU's detail view (Tab: next GPU)",
    },
    Binding {
        keys: &[ch('e')],
        label: "e",
        action: Action::ToggleEnv,
        help: "the selected process's GPU environment",
    },
    Binding {
        keys: &[ch('T'), KeyCode::F(9)],
        label: "T, F9",
        action: Action::Signal(Sig::Term),
        help: "send SIGTERM to your selected process (asks first)",
    },
    Binding {
        keys: &[ch('I')],
        label: "I",
        action: Action::Signal(Sig::Int),
        help: "send SIGINT to your selected process (asks first)",
    },
    Binding {
        keys: &[ch('K')],
        label: "K",
        action: Action::Signal(Sig::Kill),
        help: "send SIGKILL to your selected process (asks first)",
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

/// Keys that mean something else while replaying a recording (checked before `BINDINGS`).
pub const REPLAY_BINDINGS: &[Binding] = &[
    Binding {
        keys: &[KeyCode::Left],
        label: "← (replay)",
        action: Action::SeekBack,
        help: "jump back 30 s",
    },
    Binding {
        keys: &[KeyCode::Right],
        label: "→ (replay)",
        action: Action::SeekForward,
        help: "jump forward 30 s",
    },
    Binding {
        keys: &[ch('-')],
        label: "- (replay)",
        action: Action::SpeedDown,
        help: "slower",
    },
    Binding {
        keys: &[ch('+'), ch('=')],
        label: "+ (replay)",
        action: Action::SpeedUp,
        help: "faster",
    },
];

/// Every binding, for the help screen and the README.
pub fn all_bindings() -> impl Iterator<Item = &'static Binding> {
    BINDINGS.iter().chain(REPLAY_BINDINGS)
}

/// The keys as a Markdown table, for the README (a test keeps the two identical).
pub fn markdown_table() -> String {
    let mut out = String::from("| key | action |\n| --- | --- |\n");
    for b in all_bindings() {
        let keys: Vec<String> = b.label.split(", ").map(|k| format!("`{k}`")).collect();
        out += &format!("| {} | {} |\n", keys.join(", "), b.help);
    }
    out
}

/// Maps a key event to an action in the given input mode. Only presses count (some
/// terminals also report releases).
pub fn action_for(key: KeyEvent, mode: InputMode) -> Option<Action> {
    if key.kind != KeyEventKind::Press {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    if ctrl && key.code == KeyCode::Char('c') {
        return Some(Action::Quit);
    }
    match mode {
        // A confirmation takes exactly `y`; any other key is a safe "no".
        InputMode::Dialog => Some(match key.code {
            KeyCode::Char('y') | KeyCode::Char('Y') => Action::Confirm,
            _ => Action::Cancel,
        }),
        InputMode::Filter => match key.code {
            KeyCode::Enter => Some(Action::FilterDone),
            KeyCode::Esc => Some(Action::FilterCancel),
            KeyCode::Backspace => Some(Action::FilterBackspace),
            KeyCode::Char(c) if !ctrl => Some(Action::FilterInput(c)),
            _ => None,
        },
        InputMode::Normal | InputMode::Replay => {
            if ctrl {
                return None;
            }
            if let KeyCode::Char(c @ '0'..='9') = key.code {
                return Some(Action::FocusGpu(c as u32 - '0' as u32));
            }
            let replay: &[Binding] = if mode == InputMode::Replay {
                REPLAY_BINDINGS
            } else {
                &[]
            };
            replay
                .iter()
                .chain(BINDINGS)
                .find(|b| b.keys.contains(&key.code))
                .map(|b| b.action)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn normal(k: KeyEvent) -> Option<Action> {
        action_for(k, InputMode::Normal)
    }

    #[test]
    fn keys_map_to_actions() {
        assert_eq!(normal(press(ch('q'))), Some(Action::Quit));
        assert_eq!(
            normal(KeyEvent::new(ch('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(normal(press(ch('c'))), Some(Action::ToggleCompact));
        assert_eq!(normal(press(KeyCode::Down)), Some(Action::SelectDown));
        assert_eq!(normal(press(ch('M'))), Some(Action::SortBy(SortKey::Vram)));
        assert_eq!(normal(press(ch('3'))), Some(Action::FocusGpu(3)));
        assert_eq!(normal(press(ch('T'))), Some(Action::Signal(Sig::Term)));
        assert_eq!(normal(press(ch('x'))), None);
    }

    /// "Instant and truthful" §5: the F-keys htop and nvtop users press: F1 help, F3
    /// search, F6 sort, F9 signal, F10 quit.
    #[test]
    fn f_keys_do_what_they_do_in_htop() {
        let f = |n| normal(press(KeyCode::F(n)));
        assert_eq!(f(1), Some(Action::ToggleHelp));
        assert_eq!(f(3), Some(Action::OpenFilter));
        assert_eq!(f(6), Some(Action::SortNext));
        assert_eq!(f(9), Some(Action::Signal(Sig::Term)));
        assert_eq!(f(10), Some(Action::Quit));
        for n in [1, 3, 6, 9, 10] {
            let named = BINDINGS.iter().any(|b| {
                b.keys.contains(&KeyCode::F(n)) && b.label.split(", ").any(|k| k == format!("F{n}"))
            });
            assert!(named, "F{n} is bound but its label does not say so");
        }
    }

    #[test]
    fn typing_a_filter_takes_every_character() {
        let f = |k| action_for(k, InputMode::Filter);
        assert_eq!(f(press(ch('q'))), Some(Action::FilterInput('q')));
        assert_eq!(f(press(ch('3'))), Some(Action::FilterInput('3')));
        assert_eq!(f(press(KeyCode::Backspace)), Some(Action::FilterBackspace));
        assert_eq!(f(press(KeyCode::Enter)), Some(Action::FilterDone));
        assert_eq!(f(press(KeyCode::Esc)), Some(Action::FilterCancel));
        assert_eq!(
            f(KeyEvent::new(ch('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
    }

    #[test]
    fn arrows_seek_only_while_replaying() {
        assert_eq!(normal(press(KeyCode::Left)), Some(Action::SortPrev));
        let replay = |k| action_for(k, InputMode::Replay);
        assert_eq!(replay(press(KeyCode::Left)), Some(Action::SeekBack));
        assert_eq!(replay(press(ch('+'))), Some(Action::SpeedUp));
        assert_eq!(
            replay(press(ch('s'))),
            Some(Action::SortNext),
            "other keys as usual"
        );
    }

    #[test]
    fn a_dialog_takes_only_y_as_yes() {
        let d = |k| action_for(k, InputMode::Dialog);
        assert_eq!(d(press(ch('y'))), Some(Action::Confirm));
        for k in [ch('n'), ch('q'), KeyCode::Enter, KeyCode::Esc, ch('T')] {
            assert_eq!(d(press(k)), Some(Action::Cancel), "{k:?}");
        }
    }

    #[test]
    fn releases_are_ignored() {
        let mut k = press(ch('q'));
        k.kind = KeyEventKind::Release;
        assert_eq!(normal(k), None);
    }

    #[test]
    fn no_key_is_bound_twice() {
        let mut seen = std::collections::HashSet::new();
        for b in BINDINGS
            .iter()
            .chain(REPLAY_BINDINGS)
            .filter(|b| !b.label.contains("replay"))
        {
            for k in b.keys {
                assert!(seen.insert(format!("{k:?}")), "{k:?} bound twice");
            }
        }
    }
}
