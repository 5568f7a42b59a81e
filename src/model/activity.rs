//! How busy a GPU must be to count as idle or free: the utilization levels the warnings,
//! the per-user view, the header's free list and `pick` share, in one place so they agree.

/// At or below this utilization (%) a GPU is idle: a process holding VRAM there for long
/// is an idle holder, and its VRAM counts as idle VRAM in the per-user view.
pub const IDLE_MAX_UTIL: u32 = 1;

/// At or below this utilization (%) a GPU with no process and almost no VRAM in use is
/// free (the header, `--once`, `pick`'s ranking). Higher than idle: with no process at
/// all, display and driver housekeeping may still show a few percent.
pub const FREE_MAX_UTIL: u32 = 5;

/// `pick --max-util`'s default: a GPU may be this busy (%) and still be picked, so a
/// GPU with a teammate's light job can be chosen when no free one is left.
pub const PICK_MAX_UTIL_DEFAULT: u32 = 10;
