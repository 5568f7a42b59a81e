//! The detail views end to end in a real terminal: the demo runs in a tmux pane, Enter on
//! a process row and `d` on a focused GPU open their views, Esc goes back, and the views
//! keep redrawing with each sample. Skipped (with a message) only when tmux is missing.

use crate::common;

use std::time::Duration;

use common::tmux::Tmux;

const WAIT: Duration = Duration::from_secs(15);

#[test]
fn enter_on_a_process_and_d_on_a_gpu_open_their_detail_views() {
    let Some(t) = Tmux::start("detail", 80, 24) else {
        return;
    };
    t.launch_demo("");
    // Select the first row, open it: the process view with its charts and facts.
    t.send(&["g"]);
    t.send(&["Enter"]);
    let screen = t.wait_for("parents:", WAIT);
    assert!(screen.contains("command: "), "{screen}");
    assert!(screen.contains("Esc: back"), "{screen}");
    assert!(screen.contains("VRAM ━"), "{screen}");
    t.send(&["Escape"]);
    let screen = t.wait_for("Processes (", WAIT);
    assert!(!screen.contains("parents:"), "{screen}");
    // Focus GPU 0, open its view; Tab moves the view to GPU 1.
    t.send(&["0"]);
    t.send(&["d"]);
    let screen = t.wait_for("GPU 0 · NVIDIA", WAIT);
    assert!(screen.contains("temperature"), "{screen}");
    assert!(screen.contains("P-state"), "{screen}");
    t.send(&["Tab"]);
    t.wait_for("GPU 1 · NVIDIA", WAIT);
    t.send(&["Escape"]);
    t.wait_for("Processes (", WAIT);
    t.send(&["q"]);
    t.wait_restored();
    t.exit_status_is(0);
}
