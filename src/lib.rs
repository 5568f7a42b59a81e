//! gpuwatch: a terminal GPU monitor for shared multi-GPU servers.
//!
//! Data flows one way, with one owner of state:
//!
//! 1. `main` parses the CLI ([`cli`]), resolves [`config::Settings`], and [`launch`] builds
//!    a [`source::GpuSource`] and starts the TUI ([`app`]) or a headless mode
//!    ([`headless`], [`pick`], [`serve`]).
//! 2. [`sampler`] polls the source on tokio's blocking pool every interval and sends plain
//!    [`reading::Sample`]s over a bounded channel. It knows nothing of the UI.
//! 3. [`app`] waits on samples, keys, mouse and signals, maps keys through [`keymap`] and
//!    clicks through [`ui::hit`] to [`state::Action`]s, and hands every message to
//!    [`state::update`], the only code that changes [`state::State`]: the [`model::Model`]
//!    (readings, ring buffers in [`history`], process rows, holders, warnings) and the
//!    [`state::View`] (selection, scroll, panel, filter, dialog).
//! 4. [`ui::draw`] renders from `&State` only, after each handled message; [`layout`] is
//!    the geometry drawing, hit-testing and paging share.
//!
//! Imports point down only: `launch` → modes (`query`, `serve`, `app`, `pick`, `wait`,
//! `headless`, `alerts`) → settings (`config`, `cli`, `alert_settings`) → `ui` → `state` → `layout` → `model`
//! → sources (`record`, `sampler`, [`source`], `procinfo`, `history`) → helpers
//! (`safe_file`, `text_safe`, `quiet_pipe`) → [`wire`] → [`reading`] → `units`. ARCHITECTURE.md places every module; `tests/it/layers.rs`
//! checks it.

pub mod alert_settings;
pub mod alerts;
pub mod app;
pub mod cli;
pub mod config;
pub mod fast_hash;
pub mod fd_limit;
pub mod headless;
pub mod history;
pub mod http_client;
pub mod init;
pub mod keymap;
pub mod launch;
pub mod layout;
pub mod mode;
pub mod model;
pub mod pick;
pub mod present;
pub mod procinfo;
pub mod query;
pub mod quiet_pipe;
pub mod reading;
pub mod record;
pub mod resident;
pub mod safe_file;
pub mod sampler;
pub mod serve;
pub mod signals;
pub mod source;
pub mod state;
pub mod terminal;
pub mod text_safe;
pub mod ui;
pub mod units;
pub mod wait;
pub mod wire;
