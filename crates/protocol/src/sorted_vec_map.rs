//! A map (and a set) kept as a vector sorted by key, for the handful of
//! entries a worker holds per slot (running tasks, claims in doubt, task
//! leases).
//!
//! Iteration is in key order, exactly like the `BTreeMap` it replaces, so
//! every output a node derives from iterating it comes out in the same order.
//! It is faster below a few hundred entries (one cache line holds several,
//! lookups are a short scan, no node allocation per insert), and inserting a
//! key larger than every other is a push.

use std::borrow::Borrow;

#[derive(Clone, Debug)]
pub struct SortedVecMap<K, V> {
    entries: Vec<(K, V)>,
}

impl<K: Ord, V> Default for SortedVecMap<K, V> {
    fn default() -> Self {
        SortedVecMap::new()
    }
}

impl<K: Ord, V> SortedVecMap<K, V> {
    pub const fn new() -> SortedVecMap<K, V> {
        SortedVecMap {
            entries: Vec::new(),
        }
    }

    #[inline]
    fn find<Q: Ord + ?Sized>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
    {
        // The common case is a handful of entries: a linear scan from the
        // front beats a binary search's unpredictable branches there.
        // The walk stops at the first key not below `key` and only then
        // asks whether it is equal: one compare per entry passed, where a
        // three-way `cmp` per entry cost several.
        if self.entries.len() <= 8 {
            let i = self
                .entries
                .iter()
                .position(|(k, _)| k.borrow() >= key)
                .unwrap_or(self.entries.len());
            return match self.entries.get(i) {
                Some((k, _)) if k.borrow() == key => Ok(i),
                _ => Err(i),
            };
        }
        self.entries.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn contains_key(&self, key: &K) -> bool {
        self.find(key).is_ok()
    }

    pub fn get(&self, key: &K) -> Option<&V> {
        self.find(key).ok().map(|i| &self.entries[i].1)
    }

    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.find(key).ok().map(|i| &mut self.entries[i].1)
    }

    /// Insert or replace; returns the value replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        // Fast path: a key past every other (monotonic ids) is a push.
        if self.entries.last().is_none_or(|(last, _)| *last < key) {
            self.entries.push((key, value));
            self.assert_ordered_around(self.entries.len() - 1);
            return None;
        }
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (key, value));
                self.assert_ordered_around(i);
                None
            }
        }
    }

    /// The keys stay strictly increasing: an entry just placed at `i` is
    /// above its left neighbour and below its right one. Two compares per
    /// insert, and a duplicate or misplaced key (which every lookup would
    /// then answer wrongly) stops the run where it happened.
    #[inline]
    fn assert_ordered_around(&self, i: usize) {
        let key = &self.entries[i].0;
        if let Some(prev) = i.checked_sub(1) {
            assert!(
                self.entries[prev].0 < *key,
                "sorted map: key at {i} not above its left neighbour"
            );
        }
        if let Some((next, _)) = self.entries.get(i + 1) {
            assert!(
                *key < *next,
                "sorted map: key at {i} not below its right neighbour"
            );
        }
    }

    pub fn remove(&mut self, key: &K) -> Option<V> {
        let i = self.find(key).ok()?;
        // The last entry (a worker's one claim, its newest run) is a pop:
        // `Vec::remove` calls `memmove` even to move nothing.
        if i + 1 == self.entries.len() {
            self.entries.pop().map(|(_, v)| v)
        } else {
            Some(self.entries.remove(i).1)
        }
    }

    /// Remove the `i`-th entry in key order (a place from `index_of`).
    pub fn remove_at(&mut self, i: usize) -> (K, V) {
        // The last entry is a pop, as in `remove`.
        if i + 1 == self.entries.len() {
            self.entries.pop().expect("not empty")
        } else {
            self.entries.remove(i)
        }
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&K, &mut V)> {
        self.entries.iter_mut().map(|(k, v)| (&*k, v))
    }

    /// The `i`-th entry in key order.
    pub fn entry_at(&self, i: usize) -> (&K, &V) {
        let (k, v) = &self.entries[i];
        (k, v)
    }

    /// The `i`-th entry in key order, its value mutable.
    pub fn entry_at_mut(&mut self, i: usize) -> (&K, &mut V) {
        let (k, v) = &mut self.entries[i];
        (k, v)
    }

    /// Where `key` is in key order (for `entry_at`): valid until the next
    /// insertion or removal.
    pub fn index_of(&self, key: &K) -> Option<usize> {
        self.find(key).ok()
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.entries.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }
}

/// A set kept as a sorted vector: a [`SortedVecMap`] without values, with
/// `BTreeSet`'s answers.
#[derive(Clone, Debug)]
pub struct SortedVecSet<K> {
    map: SortedVecMap<K, ()>,
}

impl<K: Ord> Default for SortedVecSet<K> {
    fn default() -> Self {
        SortedVecSet::new()
    }
}

impl<K: Ord> SortedVecSet<K> {
    pub const fn new() -> SortedVecSet<K> {
        SortedVecSet {
            map: SortedVecMap::new(),
        }
    }

    // The worker's one set (`releasing`) is only added to and taken from;
    // the tests ask these.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    #[cfg(test)]
    pub fn contains(&self, key: &K) -> bool {
        self.map.contains_key(key)
    }

    /// Whether `key` was new.
    pub fn insert(&mut self, key: K) -> bool {
        self.map.insert(key, ()).is_none()
    }

    /// Whether `key` was there.
    pub fn remove(&mut self, key: &K) -> bool {
        self.map.remove(key).is_some()
    }

    pub fn clear(&mut self) {
        self.map.clear();
    }
}

impl<K: Ord, V> std::ops::Index<&K> for SortedVecMap<K, V> {
    type Output = V;

    fn index(&self, key: &K) -> &V {
        self.get(key).expect("key present")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Same answers and the same iteration order as a `BTreeMap`, for any
    /// mix of operations, on both sides of the linear/binary search switch.
    #[test]
    fn behaves_like_a_btree_map() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for key_space in [4u64, 16, 64, 1_000] {
            let mut ours = SortedVecMap::new();
            let mut theirs = BTreeMap::new();
            for _ in 0..20_000 {
                let key = next() % key_space;
                match next() % 4 {
                    0 | 1 => {
                        let value = next();
                        assert_eq!(ours.insert(key, value), theirs.insert(key, value));
                    }
                    2 if key % 2 == 0 => assert_eq!(ours.remove(&key), theirs.remove(&key)),
                    2 => assert_eq!(
                        ours.index_of(&key).map(|i| ours.remove_at(i)),
                        theirs.remove_entry(&key)
                    ),
                    3 => assert_eq!(ours.get(&key), theirs.get(&key)),
                    _ => assert_eq!(ours.contains_key(&key), theirs.contains_key(&key)),
                }
                assert_eq!(ours.len(), theirs.len());
            }
            let a: Vec<_> = ours.iter().map(|(k, v)| (*k, *v)).collect();
            let b: Vec<_> = theirs.iter().map(|(k, v)| (*k, *v)).collect();
            assert_eq!(a, b);
            assert!(ours.keys().eq(theirs.keys()));
        }
    }

    /// The order assertion fires on a map whose keys a broken insert left
    /// out of order, and stays silent on every correct insert above.
    #[test]
    #[should_panic(expected = "not above its left neighbour")]
    fn a_duplicate_key_fails_the_order_assertion() {
        let mut map = SortedVecMap::new();
        map.insert(1u32, ());
        // What an insert that pushed a re-inserted last key would leave.
        map.entries.push((1, ()));
        map.assert_ordered_around(1);
    }

    #[test]
    fn the_set_behaves_like_a_btree_set() {
        let mut ours = SortedVecSet::new();
        let mut theirs = std::collections::BTreeSet::new();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..5_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let key = state % 24;
            match (state >> 32) % 3 {
                0 => assert_eq!(ours.insert(key), theirs.insert(key)),
                1 => assert_eq!(ours.remove(&key), theirs.remove(&key)),
                _ => assert_eq!(ours.contains(&key), theirs.contains(&key)),
            }
            assert_eq!(ours.len(), theirs.len());
        }
        ours.clear();
        assert_eq!(ours.len(), 0);
    }
}
