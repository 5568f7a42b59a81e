//! Basic auth against the web config's bcrypt hashes, as the exporter toolkit does it: an
//! unknown user costs the same bcrypt as a known one — a dummy hash of the configured cost,
//! not bcrypt's default (no user-name oracle by timing) — and a
//! pair that verified once is remembered, so a scrape every few seconds does not pay bcrypt's
//! ~50 ms each time. The memory holds a keyed hash of the password, never the password.

use std::collections::{BTreeMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex, OnceLock};

use base64::Engine;

/// Remembered successes; beyond this the memory starts over (a handful of scrapers need few).
const CACHE_MAX: usize = 256;

/// The highest bcrypt cost accepted: about a second per check; each step doubles it, and
/// 31 would let three wrong logins keep a core busy for days.
pub const MAX_COST: u32 = 14;

/// The users and their hashes; cheap to clone (shared).
#[derive(Clone)]
pub struct Users(Arc<Inner>);

struct Inner {
    hashes: BTreeMap<String, String>,
    /// The configured users' bcrypt cost (the highest, if they differ).
    cost: u32,
    /// Checked for an unknown user; made at the first such request (up to a second's work).
    dummy: OnceLock<String>,
    verified: Mutex<HashSet<u64>>,
    keyed: RandomState,
}

impl Users {
    /// Checks each hash's form now, so a typo fails at start, not at the first scrape.
    pub fn new(hashes: BTreeMap<String, String>) -> Result<Self, String> {
        let mut cost = 0;
        for (user, hash) in &hashes {
            let parts = hash
                .parse::<bcrypt::HashParts>()
                .map_err(|e| format!("basic_auth_users.{user}: not a bcrypt hash ({e})"))?;
            if parts.get_cost() > MAX_COST {
                return Err(format!(
                    "basic_auth_users.{user}: bcrypt cost {} is above {MAX_COST} (each login \
                     attempt would keep a core busy for seconds or more)",
                    parts.get_cost()
                ));
            }
            cost = cost.max(parts.get_cost());
        }
        Ok(Users(Arc::new(Inner {
            hashes,
            cost,
            dummy: OnceLock::new(),
            verified: Mutex::new(HashSet::new()),
            keyed: RandomState::new(),
        })))
    }

    /// Whether the `Authorization` header's value names a user with the right password.
    /// Blocking (bcrypt): call it on the blocking pool.
    pub fn allows(&self, authorization: Option<&[u8]>) -> bool {
        let Some((user, password)) = authorization.and_then(basic_credentials) else {
            return false;
        };
        let key = self.0.keyed.hash_one((&user, &password));
        if self.0.verified.lock().is_ok_and(|v| v.contains(&key)) {
            return true;
        }
        let ok = match self.0.hashes.get(&user) {
            Some(hash) => bcrypt::verify(&password, hash).unwrap_or(false),
            None => {
                // Same work as for a real user, then no.
                let _ = bcrypt::verify(&password, self.dummy_hash());
                false
            }
        };
        if ok && let Ok(mut v) = self.0.verified.lock() {
            if v.len() >= CACHE_MAX {
                v.clear();
            }
            v.insert(key);
        }
        ok
    }
}

impl Users {
    /// A hash no password is expected to match, at the users' cost, made once. At another
    /// cost an unknown user's answer would come measurably sooner or later than a known
    /// user's wrong password (measured: 72 ms against 300 ms).
    fn dummy_hash(&self) -> &str {
        self.0.dummy.get_or_init(|| {
            bcrypt::hash_with_salt("gpuwatch: no such user", self.0.cost, [7; 16])
                .map(|h| h.to_string())
                .unwrap_or_default()
        })
    }
}

/// `Basic base64(user:password)` → (user, password).
fn basic_credentials(value: &[u8]) -> Option<(String, String)> {
    let value = std::str::from_utf8(value).ok()?.trim();
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users() -> Users {
        let hash = bcrypt::hash_with_salt("s3cret", 4, [1; 16])
            .unwrap()
            .to_string();
        Users::new(BTreeMap::from([("alice".to_string(), hash)])).unwrap()
    }

    fn header(user_password: &str) -> Vec<u8> {
        let b64 = base64::engine::general_purpose::STANDARD.encode(user_password);
        format!("Basic {b64}").into_bytes()
    }

    #[test]
    fn the_right_password_passes_and_everything_else_does_not() {
        let u = users();
        assert!(u.allows(Some(&header("alice:s3cret"))));
        // Again, from memory.
        assert!(u.allows(Some(&header("alice:s3cret"))));
        assert!(!u.allows(Some(&header("alice:wrong"))));
        assert!(!u.allows(Some(&header("bob:s3cret"))));
        assert!(!u.allows(Some(b"Bearer abc")));
        assert!(!u.allows(Some(b"Basic !!!")));
        assert!(!u.allows(None));
    }

    /// Issue 26 item 8: a cost above 14 is refused at start, naming the user.
    #[test]
    fn a_cost_above_14_is_refused_naming_the_user() {
        // The form only: `$2b$31$` with a valid salt and digest, no 2^31 rounds spent here.
        let cheap = bcrypt::hash_with_salt("x", 4, [1; 16]).unwrap().to_string();
        let costly = cheap.replacen("$04$", "$15$", 1);
        let err = Users::new(BTreeMap::from([("bob".to_string(), costly)]))
            .err()
            .unwrap();
        assert!(
            err.starts_with("basic_auth_users.bob: bcrypt cost 15 is above 14"),
            "{err}"
        );
        let at_cap = cheap.replacen("$04$", "$14$", 1);
        assert!(Users::new(BTreeMap::from([("bob".to_string(), at_cap)])).is_ok());
    }

    /// Issue 26 item 9: the unknown-user check costs what a known user's does.
    #[test]
    fn the_dummy_hash_has_the_users_cost() {
        let u = users();
        assert!(!u.allows(Some(&header("mallory:s3cret"))));
        let dummy: bcrypt::HashParts = u.dummy_hash().parse().unwrap();
        assert_eq!(dummy.get_cost(), 4);
    }

    #[test]
    fn a_password_may_hold_colons() {
        assert_eq!(
            basic_credentials(&header("u:a:b")),
            Some(("u".into(), "a:b".into()))
        );
    }
}
