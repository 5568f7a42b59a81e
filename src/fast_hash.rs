//! The maps and sets keyed by numbers no outsider picks freely (PIDs the kernel hands out,
//! UIDs, NVML query and field ids), hashed with foldhash instead of the standard library's
//! SipHash. One home for the choice, so it is made once and used only where a profile
//! asked for it (issue 25: at 64 GPUs and 1,000 processes SipHash was 11.6 % of the
//! instructions, from maps keyed by PID). Maps keyed by text that comes from outside
//! (GPU ids from a remote host, label values) keep the default hasher.

use std::collections::{HashMap, HashSet};

/// foldhash's state, seeded per process as hashbrown's own default is: a key set cannot
/// be aimed at a seed it does not know, and hashing a `u32` is a few instructions instead
/// of SipHash's ~100. The crate is already in the build (hashbrown's default hasher).
pub type FastState = foldhash::fast::RandomState;

/// A `HashMap` with `FastState`; build it with `FastMap::default()` or `collect()`.
pub type FastMap<K, V> = HashMap<K, V, FastState>;

/// A `HashSet` with `FastState`.
pub type FastSet<T> = HashSet<T, FastState>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_maps_hash_the_same_key_differently_apart_from_their_contents() {
        use std::hash::BuildHasher;
        // Seeded per map as well as per process: what one map's layout says about its keys
        // says nothing about another's.
        let (a, b) = (FastState::default(), FastState::default());
        let same = (0..64u32).all(|pid| a.hash_one(pid) == b.hash_one(pid));
        assert!(
            !same,
            "every PID hashed alike by two states: the seed is fixed"
        );
        let map: FastMap<u32, &str> = [(1, "init"), (4242, "python")].into_iter().collect();
        assert_eq!(map.get(&4242), Some(&"python"));
        assert_eq!(map.get(&7), None);
    }
}
