//! A linearizable, durable, versioned document store with one unique
//! secondary index (each index key names at most one document; callers embed
//! the document's identity in the index key, as in `pending/<task>`).
//!
//! Requests are applied atomically in arrival order. Every write takes the next
//! value of one global revision counter as the document's version.

use leasehold_interface::{Document, KeyClasses, StoreReply, StoreRequest, Version};
use rustc_hash::FxBuildHasher;
use serde::Serialize;
use std::borrow::Borrow;
use std::collections::{BTreeSet, HashMap, btree_set, hash_map};
use std::hash::Hash;
use std::ops::Bound;

/// A scan never returns more than this, whatever the caller asked for.
pub const MAX_SCAN_LIMIT: u32 = 10_000;

struct Entry<K, V> {
    version: Version,
    value: V,
    /// The document's index key, and the slot of the copy its index entry
    /// shows.
    index: Option<(K, u32)>,
}

/// An index entry shows a copy of the document it points at: an index scan
/// (every idle worker polls the pending index) then reads the index alone
/// instead of one document lookup per result. The copies sit in a slab
/// named by slot from both the index entry and the document's entry, so a
/// write that keeps its index key (a running task's progress) refreshes the
/// copy without searching the index, an index entry is four bytes for the
/// B-tree's shifts and merges, and a task's copy costs no allocation.
struct Shown<K, V> {
    /// The document's key.
    key: K,
    version: Version,
    value: V,
    /// An index entry names this slot (false once freed).
    indexed: bool,
}

/// The unique secondary index: its entries, by index key, name the slot of
/// the copy they show.
///
/// A tree per key class (see [`KeyClasses`]): the protocol's pending
/// entries, a handful between a create and its claim, sit in a tree of
/// their own instead of in the leftmost leaf of the running tasks' tree,
/// where every claim's removal underflowed it (a steal or merge in one
/// removal of three).
struct SecondaryIndex<K, V> {
    /// By class (`K::class()`).
    entries: Vec<BTreeSet<IndexEntry<K>>>,
    copies: Copies<K, V>,
}

/// One index entry: an index key and the slot of the copy it shows, kept
/// together in a set rather than as a map's key and value, so that the
/// B-tree's inserts, removals and rebalancing move one array of entries
/// instead of a keys' array and a values' array (two `memmove`s each).
/// Ordered, compared and borrowed by `key` alone: the index is unique, so
/// the set is searched by index key as a map would be.
struct IndexEntry<K> {
    key: K,
    at: u32,
}

impl<K: PartialEq> PartialEq for IndexEntry<K> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl<K: Eq> Eq for IndexEntry<K> {}

impl<K: Ord> PartialOrd for IndexEntry<K> {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<K: Ord> Ord for IndexEntry<K> {
    #[inline]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

impl<K> Borrow<K> for IndexEntry<K> {
    #[inline]
    fn borrow(&self) -> &K {
        &self.key
    }
}

/// The index entries' copies, by slot; freed slots are reused.
struct Copies<K, V> {
    slots: Vec<Shown<K, V>>,
    free: Vec<u32>,
}

impl<K, V> Copies<K, V> {
    /// A slot holding `shown`, named by a new index entry.
    fn add(&mut self, shown: Shown<K, V>) -> u32 {
        debug_assert!(shown.indexed);
        match self.free.pop() {
            Some(at) => {
                self.slots[at as usize] = shown;
                at
            }
            None => {
                let at = u32::try_from(self.slots.len()).expect("index copies past u32 slots");
                self.slots.push(shown);
                at
            }
        }
    }

    /// Refresh the copy in slot `at` to its document's version and value,
    /// just written.
    fn refresh(&mut self, at: u32, version: Version, value: &V)
    where
        V: Clone,
    {
        let copy = &mut self.slots[at as usize];
        copy.version = version;
        copy.value = value.clone();
    }

    /// Free the slot `at` once its index entry is gone.
    fn release(&mut self, at: u32) {
        self.slots[at as usize].indexed = false;
        self.free.push(at);
    }
}

/// Operation counts, by kind. Reads: gets and scans. Writes: everything that
/// can change a document, counted whether or not its condition held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StoreStats {
    pub gets: u64,
    pub scans: u64,
    pub index_scans: u64,
    pub creates: u64,
    pub conditional_puts: u64,
    pub unconditional_puts: u64,
    pub deletes: u64,
    pub conflicts: u64,
    pub unavailable: u64,
    pub docs_returned_by_scans: u64,
}

impl StoreStats {
    pub fn reads(&self) -> u64 {
        self.gets + self.scans + self.index_scans
    }
    pub fn writes(&self) -> u64 {
        self.creates + self.conditional_puts + self.unconditional_puts + self.deletes
    }
}

/// The documents' map: keyed by the simulation's own keys (no adversary to
/// flood a bucket), so rustc's fast multiply-rotate hasher rather than the
/// standard library's keyed SipHash. It has no random seed, and the map is
/// only probed, never iterated (see [`VersionedStore`]): its order cannot
/// reach a run.
///
/// "Never iterated" is held by the type: it offers probes by key and no
/// iterator, so no later change can let the map's order decide anything.
struct DocumentMap<K, V>(HashMap<K, Entry<K, V>, FxBuildHasher>);

impl<K: Hash + Eq, V> DocumentMap<K, V> {
    fn new() -> DocumentMap<K, V> {
        // The fixed, unseeded hasher, named here so that no default can
        // slip a per-process seed in.
        DocumentMap(HashMap::with_hasher(FxBuildHasher))
    }

    #[inline]
    fn get(&self, key: &K) -> Option<&Entry<K, V>> {
        self.0.get(key)
    }

    #[inline]
    fn get_mut(&mut self, key: &K) -> Option<&mut Entry<K, V>> {
        self.0.get_mut(key)
    }

    #[inline]
    fn entry(&mut self, key: K) -> hash_map::Entry<'_, K, Entry<K, V>> {
        self.0.entry(key)
    }

    #[inline]
    fn remove(&mut self, key: &K) -> Option<Entry<K, V>> {
        self.0.remove(key)
    }

    fn reserve(&mut self, more: usize) {
        self.0.reserve(more);
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The keys of one class of documents (see [`KeyClasses`]): in order once a
/// scan or a delete has reached the class, until then as they were created.
enum ClassKeys<K> {
    /// No scan nor delete has reached the class yet: its keys unordered, a
    /// create's push instead of an ordered insert (friday-rush scans
    /// heartbeats only, and creates a task document per task).
    Unordered(Vec<K>),
    Ordered(BTreeSet<K>),
}

impl<K: Ord> ClassKeys<K> {
    /// Add `key`, absent until now.
    #[inline(always)]
    fn insert(&mut self, key: K) {
        match self {
            ClassKeys::Unordered(keys) => keys.push(key),
            ClassKeys::Ordered(keys) => {
                let fresh = keys.insert(key);
                assert!(fresh, "an ordered key without its document");
            }
        }
    }

    /// The class's keys in order, ordered now if they were not yet (once
    /// per class and run).
    fn ordered(&mut self) -> &mut BTreeSet<K> {
        if let ClassKeys::Unordered(keys) = self {
            let count = keys.len();
            let ordered: BTreeSet<K> = std::mem::take(keys).into_iter().collect();
            assert!(ordered.len() == count, "a key created twice");
            *self = ClassKeys::Ordered(ordered);
        }
        match self {
            ClassKeys::Ordered(keys) => keys,
            ClassKeys::Unordered(_) => unreachable!("ordered just now"),
        }
    }

    /// The class's keys in order, which [`Self::ordered`] made them.
    fn as_ordered(&self) -> &BTreeSet<K> {
        match self {
            ClassKeys::Ordered(keys) => keys,
            ClassKeys::Unordered(_) => unreachable!("a scan of an unordered class"),
        }
    }
}

/// Documents are found by key through a hash map (a conditional write, the
/// commonest request, is one probe instead of a B-tree descent); their keys
/// are kept in order beside it, by class, for scans, which are rare on
/// documents (every poll scans the index). The map is only probed, never
/// iterated, so its order cannot reach a run.
pub struct VersionedStore<K, V> {
    docs: DocumentMap<K, V>,
    /// The keys of `docs`, by class (`K::class()`).
    order: Vec<ClassKeys<K>>,
    index: SecondaryIndex<K, V>,
    revision: Version,
    stats: StoreStats,
    pages: SparePages<K, V>,
}

/// The most emptied scan pages [`SparePages`] keeps.
const SPARE_PAGES: usize = 64;

/// The most documents a kept page has room for: a larger one (a scan with a
/// large limit) is freed, so that the spares hold no more than a few pages'
/// worth of a run's usual scans.
const SPARE_PAGE_DOCS: usize = 256;

/// Emptied scan pages, given back by the simulator once a node has stepped
/// on the reply that carried them ([`VersionedStore::recycle`]), for the next
/// scans to fill: a scan that finds documents (a poll that finds work,
/// more often per event the larger the fleet) otherwise allocated its page,
/// the run's one allocation per event that grew with the fleet. Bounded:
/// at most `SPARE_PAGES` pages, each with room for at most `SPARE_PAGE_DOCS`.
struct SparePages<K, V> {
    pages: Vec<Vec<Document<K, V>>>,
}

impl<K, V> SparePages<K, V> {
    fn new() -> Self {
        SparePages {
            pages: Vec::with_capacity(SPARE_PAGES),
        }
    }

    /// An empty page, a spare one if any is left.
    fn take(&mut self) -> Vec<Document<K, V>> {
        let page = self.pages.pop().unwrap_or_default();
        debug_assert!(page.is_empty());
        page
    }

    /// Keep `page` (emptied) for a later scan, unless the spares are full
    /// or it is too large to keep.
    fn put(&mut self, mut page: Vec<Document<K, V>>) {
        debug_assert!(self.pages.len() <= SPARE_PAGES);
        let capacity = page.capacity();
        if self.pages.len() < SPARE_PAGES && capacity > 0 && capacity <= SPARE_PAGE_DOCS {
            page.clear();
            self.pages.push(page);
        }
    }
}

impl<K: Ord + Hash + Clone + KeyClasses, V: Clone> Default for VersionedStore<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

fn document<K: Clone, V: Clone>(key: &K, e: &Entry<K, V>) -> Document<K, V> {
    Document {
        key: key.clone(),
        version: e.version,
        value: e.value.clone(),
    }
}

/// The first `limit` documents of a scan (`limit` clamped to
/// `1..=MAX_SCAN_LIMIT`), and whether more matched: the entries `doc` makes
/// documents of, from `entries` up to the first key not below `end`. An empty
/// page allocates nothing, and a short one little: most polls find a handful
/// of pending tasks or none, and reserving the whole page up front (16
/// documents per poll, 1.1 KiB, past mimalloc's small sizes) made it the
/// run's costliest allocation. A page that finds documents is one of
/// `spare`'s, if it has any (see [`SparePages`]).
///
/// `entries` runs from the scan's start to the end of the map (see
/// [`entries_from`]), and the walk stops at `end` itself: `BTreeMap::range(start..end)`
/// descends the tree a second time to find `end`, which cost a poll's scan of
/// a few documents as much again.
///
/// `most`: at most how many entries the walk holds below `end`, when that
/// is known (see [`most_of`]): the page then has room for all of its
/// documents from the start (exactly, for a walk from the tree's first
/// entry), where growing it (a reclaimer's sweep of the running tasks or of
/// the heartbeats, a few dozen documents or a full page) reallocated it two
/// to four times.
fn page<'a, K: Ord + 'a, T: 'a, V>(
    mut entries: impl Iterator<Item = (&'a K, &'a T)>,
    end: &K,
    limit: u32,
    most: Option<usize>,
    spare: &mut SparePages<K, V>,
    doc: impl Fn(&'a K, &'a T) -> Document<K, V>,
) -> (Vec<Document<K, V>>, bool) {
    let limit = limit.clamp(1, MAX_SCAN_LIMIT) as usize;
    let Some((key, entry)) = entries.next().filter(|(k, _)| *k < end) else {
        return (Vec::new(), false);
    };
    let mut page = spare.take();
    // Exactly, not doubled: a spare page grows only to what this scan reads.
    page.reserve_exact(most.map_or(limit.min(8), |most| most.min(limit)));
    page.push(doc(key, entry));
    // Bounded by `limit`.
    for (key, entry) in entries {
        if key >= end {
            break;
        }
        if page.len() == limit {
            return (page, true);
        }
        page.push(doc(key, entry));
    }
    (page, false)
}

/// How many keys `tree` holds, if every one is below `end`: at most what a
/// scan up to `end` reads.
fn most_of<T: Ord + Borrow<K>, K: Ord>(tree: &BTreeSet<T>, end: &K) -> Option<usize> {
    let last = tree.last()?;
    (last.borrow() < end).then_some(tree.len())
}

/// The documents of `docs` whose keys `order` holds from `start` on, in key
/// order: what [`page`] walks for a document scan within one class.
fn documents_from<'a, K: Ord + Hash, V>(
    docs: &'a DocumentMap<K, V>,
    order: &'a BTreeSet<K>,
    start: &K,
) -> impl Iterator<Item = (&'a K, &'a Entry<K, V>)> {
    let keys: btree_set::Range<'a, K> = order.range((Bound::Included(start), Bound::Unbounded));
    with_documents(docs, keys)
}

/// [`documents_from`] through the classes `order` (in class order, each
/// ordered), for a scan across classes.
fn documents_across<'a, K: Ord + Hash, V>(
    docs: &'a DocumentMap<K, V>,
    order: &'a [ClassKeys<K>],
    start: &'a K,
) -> impl Iterator<Item = (&'a K, &'a Entry<K, V>)> {
    let keys = order.iter().flat_map(move |class| {
        let keys: btree_set::Range<'a, K> = class
            .as_ordered()
            .range((Bound::Included(start), Bound::Unbounded));
        keys
    });
    with_documents(docs, keys)
}

/// Each of `keys` (from `order`) with its document.
fn with_documents<'a, K: Ord + Hash, V>(
    docs: &'a DocumentMap<K, V>,
    keys: impl Iterator<Item = &'a K>,
) -> impl Iterator<Item = (&'a K, &'a Entry<K, V>)> {
    keys.map(|k| (k, docs.get(k).expect("an ordered key without its document")))
}

/// A new document, unindexed, at `vacant`'s key, and the key in its class
/// of `order`.
///
/// Inlined: left to itself the compiler called it, some 30 instructions
/// a create in arguments and saved registers (friday-rush 158.34 M ->
/// 158.19 M instructions with it inlined).
#[inline(always)]
fn create<'a, K: Ord + Clone + KeyClasses, V: Clone>(
    order: &mut [ClassKeys<K>],
    vacant: hash_map::VacantEntry<'a, K, Entry<K, V>>,
    version: Version,
    value: &V,
) -> &'a mut Entry<K, V> {
    order[vacant.key().class()].insert(vacant.key().clone());
    vacant.insert(Entry {
        version,
        value: value.clone(),
        index: None,
    })
}

impl<K: Ord + Clone + KeyClasses, V: Clone> SecondaryIndex<K, V> {
    /// Move the index entry of document `doc`, at `key`, from the index key
    /// it has to `new` (either may be absent), and refresh the copy it shows
    /// to the document's version and value, just written.
    ///
    /// Inlined for the writes that search no index (an unindexed document, or
    /// one that keeps its index key: half the writes), the rest out of line.
    #[inline(always)]
    fn update(&mut self, key: &K, doc: &mut Entry<K, V>, new: Option<&K>) {
        match (&doc.index, new) {
            (None, None) => {}
            (Some((old, at)), Some(new)) if old == new => {
                // The index entry under `new` names slot `at`: inserted under
                // `new` naming `key` (an entry is never moved, only removed
                // with its document's slot, which frees the copy).
                let copy = &self.copies.slots[*at as usize];
                assert!(copy.indexed, "index entry missing for a live document");
                debug_assert!(
                    self.entries[new.class()].get(new).map(|e| e.at) == Some(*at)
                        && copy.key == *key,
                    "index entry names another document"
                );
                self.copies.refresh(*at, doc.version, &doc.value);
            }
            _ => self.reindex(key, doc, new),
        }
    }

    /// [`Self::update`] when the index key changes: the entry under the old
    /// key (if any) removed, one under `new` (if any) inserted.
    #[inline(never)]
    fn reindex(&mut self, key: &K, doc: &mut Entry<K, V>, new: Option<&K>) {
        let Entry {
            version,
            value,
            index: slot,
        } = doc;
        let kept = slot.take().map(|(old, at)| {
            let removed = self.entries[old.class()].take(&old).map(|e| e.at);
            assert!(
                removed == Some(at) && self.copies.slots[at as usize].key == *key,
                "index entry missing for a live document"
            );
            at
        });
        match (new, kept) {
            (Some(new), kept) => {
                let at = match kept {
                    Some(at) => {
                        self.copies.refresh(at, *version, value);
                        at
                    }
                    None => self.copies.add(Shown {
                        key: key.clone(),
                        version: *version,
                        value: value.clone(),
                        indexed: true,
                    }),
                };
                let fresh = self.entries[new.class()].insert(IndexEntry {
                    key: new.clone(),
                    at,
                });
                assert!(fresh, "unique index key used by two documents");
                *slot = Some((new.clone(), at));
            }
            (None, Some(at)) => self.copies.release(at),
            (None, None) => {}
        }
    }
}

/// [`page`] over the entries of `index` in `start..end` (empty unless
/// `start < end`). A scan whose end is at or before the index's first key
/// (a poll when no task is pending, most polls) is empty after that one
/// comparison, whatever its start, with no iterator to build and no second
/// walk down to the first leaf. A scan that starts at or before the first
/// key (every poll: the pending range starts at task 0, and nothing sorts
/// before pending index keys) walks from the first leaf without a search: a
/// range's descent compared keys at every level to find that same place.
fn scan_from<'a, K: Ord, V>(
    index: &'a BTreeSet<IndexEntry<K>>,
    start: &K,
    end: &K,
    limit: u32,
    spare: &mut SparePages<K, V>,
    doc: impl Fn(&'a K, &'a u32) -> Document<K, V>,
) -> (Vec<Document<K, V>>, bool) {
    let pair = |e: &'a IndexEntry<K>| (&e.key, &e.at);
    match index.first() {
        // Every key is at or past the first, so at or past `end`.
        Some(first) if *end <= first.key => (Vec::new(), false),
        None => (Vec::new(), false),
        Some(_) if start >= end => (Vec::new(), false),
        Some(first) if *start <= first.key => {
            let most = most_of(index, end);
            page(index.iter().map(pair), end, limit, most, spare, doc)
        }
        Some(_) => {
            let most = most_of(index, end);
            page(
                entries_from(index, start).map(pair),
                end,
                limit,
                most,
                spare,
                doc,
            )
        }
    }
}

/// [`page`] over the entries of the index's trees by class, `entries`, in
/// `start..end`: [`scan_from`] on the one class holding the range (every
/// scan the protocol makes), or a walk through the classes it spans.
#[inline(always)]
fn scan_index<'a, K: Ord + KeyClasses, V>(
    entries: &'a [BTreeSet<IndexEntry<K>>],
    start: &K,
    end: &K,
    limit: u32,
    spare: &mut SparePages<K, V>,
    doc: impl Fn(&'a K, &'a u32) -> Document<K, V>,
) -> (Vec<Document<K, V>>, bool) {
    let class = start.class();
    if class == end.class() {
        return scan_from(&entries[class], start, end, limit, spare, doc);
    }
    if start >= end {
        return (Vec::new(), false);
    }
    // Up to `end`'s class, if some key of it sorts before `end`: walked
    // through, not by `scan_from`, whose one call is then inlined.
    let classes = class..end.class() + usize::from(!end.starts_class());
    let pair = |e: &'a IndexEntry<K>| (&e.key, &e.at);
    let walk = entries[classes]
        .iter()
        .flat_map(|index| entries_from(index, start));
    page(walk.map(pair), end, limit, None, spare, doc)
}

/// The entries of `index` from `start` on, in key order.
fn entries_from<'a, K: Ord>(
    index: &'a BTreeSet<IndexEntry<K>>,
    start: &K,
) -> btree_set::Range<'a, IndexEntry<K>> {
    index.range::<K, _>((Bound::Included(start), Bound::Unbounded))
}

impl<K: Ord + Hash + Clone + KeyClasses, V: Clone> VersionedStore<K, V> {
    pub fn new() -> Self {
        VersionedStore {
            docs: DocumentMap::new(),
            order: (0..K::CLASSES)
                .map(|_| ClassKeys::Unordered(Vec::new()))
                .collect(),
            index: SecondaryIndex {
                entries: (0..K::CLASSES).map(|_| BTreeSet::new()).collect(),
                copies: Copies {
                    slots: Vec::new(),
                    free: Vec::new(),
                },
            },
            revision: 0,
            stats: StoreStats::default(),
            pages: SparePages::new(),
        }
    }

    pub fn stats(&self) -> &StoreStats {
        &self.stats
    }

    /// Make room for `documents` more documents, so the documents' map does
    /// not grow (and rehash every key, ~10 times for a thousand tasks) as
    /// they arrive. Capacity only: nothing a run sees changes.
    pub fn reserve(&mut self, documents: usize) {
        self.docs.reserve(documents);
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    pub fn get(&self, key: &K) -> Option<Document<K, V>> {
        self.docs.get(key).map(|e| document(key, e))
    }

    /// Every document in key order (for end-of-run inspection).
    pub fn documents(&self) -> impl Iterator<Item = Document<K, V>> + '_ {
        let mut keys: Vec<&K> = Vec::with_capacity(self.docs.len());
        for class in &self.order {
            match class {
                ClassKeys::Ordered(ordered) => keys.extend(ordered),
                ClassKeys::Unordered(unordered) => {
                    let from = keys.len();
                    keys.extend(unordered);
                    // Keys are distinct: an unstable sort is the one order.
                    keys[from..].sort_unstable();
                }
            }
        }
        with_documents(&self.docs, keys.into_iter()).map(|(k, e)| document(k, e))
    }

    fn next_version(&mut self) -> Version {
        self.revision += 1;
        self.revision
    }

    /// Write `value` over the document at `key` (present or not) and return
    /// its new version. One search for the document, whatever happens.
    fn write(&mut self, key: &K, value: &V, index: &Option<K>) -> Version {
        let version = self.next_version();
        let e = match self.docs.entry(key.clone()) {
            hash_map::Entry::Occupied(e) => {
                let e = e.into_mut();
                e.version = version;
                e.value = value.clone();
                e
            }
            hash_map::Entry::Vacant(e) => create(&mut self.order, e, version, value),
        };
        self.index.update(key, e, index.as_ref());
        version
    }

    /// Cold: a conflict answers about one conditional write in sixteen, so
    /// the paths to it (still inlined) are laid out away from the writes
    /// that hold (158.19 M -> 157.96 M instructions).
    #[cold]
    fn conflict(&mut self, current: Option<Document<K, V>>) -> StoreReply<K, V> {
        self.stats.conflicts += 1;
        StoreReply::Conflict { current }
    }

    /// Apply one request atomically. Returns the reply and, for writes, the
    /// document as it was before (what observers need to judge transitions).
    pub fn apply(
        &mut self,
        request: &StoreRequest<K, V>,
    ) -> (StoreReply<K, V>, Option<Document<K, V>>) {
        let mut reply = None;
        let mut before = None;
        self.answer(request, &mut before, |r| reply = Some(r));
        (reply.expect("every request is answered"), before)
    }

    /// [`Self::apply`], the reply handed to `answer` where each kind of
    /// request makes it: the simulator writes it straight into the input it
    /// sends, instead of into a reply gathered from every kind's pieces and
    /// then copied. The document before a write goes into `before` (`None`
    /// on entry, left so for reads): built there at once, where a returned
    /// one was built aside and copied to the caller past the write.
    #[inline(always)]
    pub fn answer(
        &mut self,
        request: &StoreRequest<K, V>,
        before: &mut Option<Document<K, V>>,
        answer: impl FnOnce(StoreReply<K, V>),
    ) {
        debug_assert!(
            before.is_none(),
            "a document before from an earlier request"
        );
        match request {
            StoreRequest::CreateIfAbsent { key, value, index } => {
                self.stats.creates += 1;
                let e = match self.docs.entry(key.clone()) {
                    hash_map::Entry::Occupied(e) => {
                        let doc = document(key, e.get());
                        answer(self.conflict(Some(doc.clone())));
                        *before = Some(doc);
                        return;
                    }
                    hash_map::Entry::Vacant(e) => {
                        self.revision += 1;
                        create(&mut self.order, e, self.revision, value)
                    }
                };
                let version = self.revision;
                self.index.update(key, e, index.as_ref());
                answer(StoreReply::Written { version });
            }
            StoreRequest::PutIfVersion {
                key,
                expected,
                value,
                index,
            } => {
                self.stats.conditional_puts += 1;
                // One search: compare, and write in place if the version holds.
                let Some(e) = self.docs.get_mut(key) else {
                    answer(self.conflict(None));
                    return;
                };
                let doc = before.insert(document(key, e));
                if e.version != *expected {
                    answer(self.conflict(Some(doc.clone())));
                    return;
                }
                self.revision += 1;
                let version = self.revision;
                e.version = version;
                e.value = value.clone();
                self.index.update(key, e, index.as_ref());
                answer(StoreReply::Written { version });
            }
            StoreRequest::ScanIndex { start, end, limit } => {
                self.stats.index_scans += 1;
                let (docs, more) = {
                    let copies = &self.index.copies.slots;
                    let spare = &mut self.pages;
                    scan_index(&self.index.entries, start, end, *limit, spare, |_, at| {
                        let e = &copies[*at as usize];
                        debug_assert!(
                            e.indexed
                                && self
                                    .docs
                                    .get(&e.key)
                                    .is_some_and(|d| d.version == e.version),
                            "index copy out of step"
                        );
                        Document {
                            key: e.key.clone(),
                            version: e.version,
                            value: e.value.clone(),
                        }
                    })
                };
                self.stats.docs_returned_by_scans += docs.len() as u64;
                answer(StoreReply::Scanned { docs, more });
            }
            _ => *before = self.answer_rare(request, answer),
        }
    }

    /// [`Self::answer`] for the kinds of request a run makes a few of
    /// (gets, unconditional puts, deletes, document scans), out of line and
    /// cold so that the common kinds (conditional puts, index scans,
    /// creates: friday-rush makes some 12,000 of them a seed, and some 170
    /// of these) are laid out together where the simulator calls `answer`
    /// (158.73 M -> 158.34 M instructions).
    #[cold]
    #[inline(never)]
    fn answer_rare(
        &mut self,
        request: &StoreRequest<K, V>,
        answer: impl FnOnce(StoreReply<K, V>),
    ) -> Option<Document<K, V>> {
        match request {
            StoreRequest::Get { key } => {
                self.stats.gets += 1;
                answer(StoreReply::Got { doc: self.get(key) });
                None
            }
            StoreRequest::PutUnconditional { key, value, index } => {
                self.stats.unconditional_puts += 1;
                let before = self.get(key);
                let version = self.write(key, value, index);
                answer(StoreReply::Written { version });
                before
            }
            StoreRequest::DeleteIfVersion { key, expected } => {
                self.stats.deletes += 1;
                let before = self.get(key);
                match &before {
                    Some(doc) if doc.version == *expected => {
                        let entry = self.docs.remove(key).expect("checked present");
                        let ordered = self.order[key.class()].ordered().remove(key);
                        assert!(ordered, "a document without its ordered key");
                        if let Some((index, at)) = entry.index {
                            let removed =
                                self.index.entries[index.class()].take(&index).map(|e| e.at);
                            assert!(
                                removed == Some(at)
                                    && self.index.copies.slots[at as usize].key == *key,
                                "index entry missing on delete"
                            );
                            self.index.copies.release(at);
                        }
                        self.revision += 1;
                        answer(StoreReply::Deleted);
                        before
                    }
                    _ => {
                        answer(self.conflict(before.clone()));
                        before
                    }
                }
            }
            StoreRequest::Scan { start, end, limit } => {
                self.stats.scans += 1;
                let (docs, more) = if start < end {
                    // The classes from `start`'s to `end`'s (that one only
                    // if some key of it sorts before `end`), ordered.
                    let classes = start.class()..end.class() + usize::from(!end.starts_class());
                    for class in &mut self.order[classes.clone()] {
                        class.ordered();
                    }
                    let order = &self.order[classes];
                    // Scans keep to one class (a heartbeat range), a walk
                    // of one tree; a scan across classes chains theirs.
                    match order {
                        [class] => page(
                            documents_from(&self.docs, class.as_ordered(), start),
                            end,
                            *limit,
                            most_of(class.as_ordered(), end),
                            &mut self.pages,
                            document,
                        ),
                        _ => page(
                            documents_across(&self.docs, order, start),
                            end,
                            *limit,
                            None,
                            &mut self.pages,
                            document,
                        ),
                    }
                } else {
                    (Vec::new(), false)
                };
                self.stats.docs_returned_by_scans += docs.len() as u64;
                answer(StoreReply::Scanned { docs, more });
                None
            }
            StoreRequest::CreateIfAbsent { .. }
            | StoreRequest::PutIfVersion { .. }
            | StoreRequest::ScanIndex { .. } => {
                unreachable!("answered inline by `answer`")
            }
        }
    }

    /// Take back a scan's page once its reader is done with it, for a later
    /// scan to fill (see [`SparePages`]).
    #[inline]
    pub fn recycle(&mut self, page: Vec<Document<K, V>>) {
        self.pages.put(page);
    }

    pub fn count_unavailable(&mut self) {
        self.stats.unavailable += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn put(
        s: &mut VersionedStore<u32, &'static str>,
        k: u32,
        exp: u64,
        v: &'static str,
        i: Option<u32>,
    ) -> StoreReply<u32, &'static str> {
        s.apply(&StoreRequest::PutIfVersion {
            key: k,
            expected: exp,
            value: v,
            index: i,
        })
        .0
    }

    #[test]
    fn conditional_writes_and_versions() {
        let mut s = VersionedStore::new();
        let r = s
            .apply(&StoreRequest::CreateIfAbsent {
                key: 1,
                value: "a",
                index: None,
            })
            .0;
        assert_eq!(r, StoreReply::Written { version: 1 });
        assert!(matches!(
            s.apply(&StoreRequest::CreateIfAbsent {
                key: 1,
                value: "b",
                index: None
            })
            .0,
            StoreReply::Conflict {
                current: Some(Document { version: 1, .. })
            }
        ));
        assert_eq!(
            put(&mut s, 1, 1, "c", None),
            StoreReply::Written { version: 2 }
        );
        assert!(matches!(
            put(&mut s, 1, 1, "d", None),
            StoreReply::Conflict { .. }
        ));
        assert_eq!(
            s.apply(&StoreRequest::DeleteIfVersion {
                key: 1,
                expected: 2
            })
            .0,
            StoreReply::Deleted
        );
        // Re-created documents never reuse a version.
        let r = s
            .apply(&StoreRequest::CreateIfAbsent {
                key: 1,
                value: "e",
                index: None,
            })
            .0;
        assert_eq!(r, StoreReply::Written { version: 4 });
        assert_eq!(s.stats().conflicts, 2);
    }

    /// A store of `count` documents, keys `0..count`, value "p", each
    /// indexed under 100 plus its key.
    fn indexed_store(count: u32) -> VersionedStore<u32, &'static str> {
        let mut s = VersionedStore::new();
        for k in 0..count {
            s.apply(&StoreRequest::CreateIfAbsent {
                key: k,
                value: "p",
                index: Some(100 + k),
            });
        }
        s
    }

    #[test]
    fn index_follows_documents() {
        let mut s = indexed_store(5);
        put(&mut s, 2, 3, "r", Some(200));
        let scan = |s: &mut VersionedStore<u32, &'static str>, a, b, l| match s
            .apply(&StoreRequest::ScanIndex {
                start: a,
                end: b,
                limit: l,
            })
            .0
        {
            StoreReply::Scanned { docs, more } => {
                (docs.iter().map(|d| d.key).collect::<Vec<_>>(), more)
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(scan(&mut s, 100, 200, 10), (vec![0, 1, 3, 4], false));
        assert_eq!(scan(&mut s, 100, 200, 2), (vec![0, 1], true));
        assert_eq!(scan(&mut s, 200, 201, 10), (vec![2], false));
        match s
            .apply(&StoreRequest::Scan {
                start: 1,
                end: 4,
                limit: 10,
            })
            .0
        {
            StoreReply::Scanned { docs, more } => {
                assert_eq!(docs.len(), 3);
                assert!(!more);
            }
            other => panic!("{other:?}"),
        }
    }

    /// A scan's keys and `more`, by document key (`Scan`) or index key
    /// (`ScanIndex`).
    fn scan_keys(
        s: &mut VersionedStore<u32, &'static str>,
        by_index: bool,
        start: u32,
        end: u32,
        limit: u32,
    ) -> (Vec<u32>, bool) {
        let request = if by_index {
            StoreRequest::ScanIndex { start, end, limit }
        } else {
            StoreRequest::Scan { start, end, limit }
        };
        match s.apply(&request).0 {
            StoreReply::Scanned { docs, more } => {
                (docs.iter().map(|d| d.key).collect::<Vec<_>>(), more)
            }
            other => panic!("{other:?}"),
        }
    }

    /// The walk stops at the first key not below `end`: a full page whose
    /// next key is `end` or past it has no more, and a first key at or past
    /// `end` gives an empty page.
    #[test]
    fn scans_stop_at_their_end() {
        let mut s = VersionedStore::new();
        // Keys 0..6 and 10; index keys 100 above them.
        for k in (0..6u32).chain([10]) {
            s.apply(&StoreRequest::CreateIfAbsent {
                key: k,
                value: "p",
                index: Some(100 + k),
            });
        }
        for (by_index, base) in [(false, 0u32), (true, 100)] {
            let scan = |s: &mut VersionedStore<u32, &'static str>, a: u32, b: u32, l| {
                scan_keys(s, by_index, base + a, base + b, l)
            };
            // Exactly a page in range, the next key at `end`: no more.
            assert_eq!(scan(&mut s, 2, 4, 2), (vec![2, 3], false));
            assert_eq!(scan(&mut s, 4, 5, 1), (vec![4], false));
            // The next key past `end` (5 is the last below 10): no more.
            assert_eq!(scan(&mut s, 4, 8, 2), (vec![4, 5], false));
            // One more in range: more.
            assert_eq!(scan(&mut s, 2, 5, 2), (vec![2, 3], true));
            // The first key from `start` is at `end`, or past it.
            assert_eq!(scan(&mut s, 3, 3, 5), (vec![], false));
            assert_eq!(scan(&mut s, 6, 10, 5), (vec![], false));
            assert_eq!(scan(&mut s, 6, 9, 5), (vec![], false));
            // Past the last key.
            assert_eq!(scan(&mut s, 11, 20, 5), (vec![], false));
            // `end` past every key: up to the map's end.
            assert_eq!(scan(&mut s, 5, 20, 5), (vec![5, 10], false));
        }
        // From before the first index key (walked from the first leaf, no
        // search): the same pages.
        assert_eq!(scan_keys(&mut s, true, 50, 103, 10), (vec![0, 1, 2], false));
        assert_eq!(scan_keys(&mut s, true, 50, 103, 2), (vec![0, 1], true));
        assert_eq!(scan_keys(&mut s, true, 0, 100, 5), (vec![], false));
    }

    /// A key of three classes (its first field), so scans and index scans
    /// can start and end in different classes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
    struct ClassedKey(u8, u16);

    impl KeyClasses for ClassedKey {
        const CLASSES: usize = 3;
        fn class(&self) -> usize {
            usize::from(self.0)
        }
        fn starts_class(&self) -> bool {
            self.1 == 0
        }
    }

    /// Keys kept by class (a class unordered until a scan or a delete
    /// reaches it) and the index's tree per class answer every scan as one
    /// ordered map would: random creates, conditional puts that move a
    /// document's index key between classes, deletes, and scans of both
    /// kinds over ranges within and across classes, against a `BTreeMap`.
    #[test]
    fn scans_across_key_classes_match_an_ordered_model() {
        type Model = BTreeMap<ClassedKey, (Version, Option<ClassedKey>)>;
        let mut s: VersionedStore<ClassedKey, u8> = VersionedStore::new();
        let mut model = Model::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut draw = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        // Unique per document: its index key's class, then the document.
        let index_of =
            |k: ClassedKey, class: u64| ClassedKey(class as u8, u16::from(k.0) * 100 + k.1);
        let in_range = |k: &ClassedKey, start: &ClassedKey, end: &ClassedKey| start <= k && k < end;
        let (mut scans, mut found) = (0, 0);
        for _ in 0..5_000 {
            let key = ClassedKey(draw(3) as u8, draw(6) as u16);
            let index = (draw(4) > 0).then(|| index_of(key, draw(3)));
            match draw(5) {
                0 => {
                    let reply = s
                        .apply(&StoreRequest::CreateIfAbsent {
                            key,
                            value: 1,
                            index,
                        })
                        .0;
                    match reply {
                        StoreReply::Written { version } => {
                            assert!(model.insert(key, (version, index)).is_none());
                        }
                        other => {
                            assert!(model.contains_key(&key), "{other:?}");
                        }
                    }
                }
                1 => {
                    let expected = model.get(&key).map_or(0, |(v, _)| *v);
                    let reply = s
                        .apply(&StoreRequest::PutIfVersion {
                            key,
                            expected,
                            value: 2,
                            index,
                        })
                        .0;
                    match reply {
                        StoreReply::Written { version } => {
                            assert!(model.insert(key, (version, index)).is_some());
                        }
                        other => assert!(!model.contains_key(&key), "{other:?}"),
                    }
                }
                2 => {
                    let expected = model.get(&key).map_or(0, |(v, _)| *v);
                    let reply = s.apply(&StoreRequest::DeleteIfVersion { key, expected }).0;
                    match reply {
                        StoreReply::Deleted => assert!(model.remove(&key).is_some()),
                        other => assert!(!model.contains_key(&key), "{other:?}"),
                    }
                }
                by_index => {
                    let start = ClassedKey(draw(3) as u8, draw(8) as u16);
                    let end = ClassedKey(draw(3) as u8, draw(8) as u16);
                    let limit = 1 + draw(6) as u32;
                    let by_index = by_index == 4;
                    // What an ordered map holds in range, in scan order.
                    let mut want: Vec<(ClassedKey, ClassedKey, Version)> = model
                        .iter()
                        .filter_map(|(k, (v, i))| {
                            let order = if by_index { (*i)? } else { *k };
                            in_range(&order, &start, &end).then_some((order, *k, *v))
                        })
                        .collect();
                    want.sort();
                    let more = want.len() > limit as usize;
                    want.truncate(limit as usize);
                    let request = if by_index {
                        StoreRequest::ScanIndex { start, end, limit }
                    } else {
                        StoreRequest::Scan { start, end, limit }
                    };
                    let StoreReply::Scanned {
                        docs,
                        more: got_more,
                    } = s.apply(&request).0
                    else {
                        panic!("a scan is answered with a page");
                    };
                    let got: Vec<(ClassedKey, Version)> =
                        docs.iter().map(|d| (d.key, d.version)).collect();
                    let want: Vec<(ClassedKey, Version)> =
                        want.iter().map(|(_, k, v)| (*k, *v)).collect();
                    assert_eq!(got, want, "{request:?}");
                    assert_eq!(got_more, more, "{request:?}");
                    scans += 1;
                    found += usize::from(!got.is_empty());
                    s.recycle(docs);
                }
            }
        }
        // The walk did what it is for: scans found documents, and the end
        // state's documents come out in key order.
        assert!(scans > 1_000 && found > 300, "{scans} scans, {found} found");
        let keys: Vec<ClassedKey> = s.documents().map(|d| d.key).collect();
        assert_eq!(keys, model.keys().copied().collect::<Vec<_>>());
    }

    /// A page given back is the next scan's, emptied and refilled; the
    /// spares keep no more than `SPARE_PAGES` pages, none too large.
    #[test]
    fn recycled_pages_are_refilled() {
        let mut s = indexed_store(4);
        let scan = |s: &mut VersionedStore<u32, &'static str>, limit| {
            let request = StoreRequest::ScanIndex {
                start: 100,
                end: 200,
                limit,
            };
            match s.apply(&request).0 {
                StoreReply::Scanned { docs, .. } => docs,
                other => panic!("{other:?}"),
            }
        };
        let page = scan(&mut s, 4);
        let at = page.as_ptr();
        s.recycle(page);
        let page = scan(&mut s, 2);
        assert_eq!(page.as_ptr(), at);
        assert_eq!(page.iter().map(|d| d.key).collect::<Vec<_>>(), [0, 1]);
        s.recycle(page);
        for _ in 0..SPARE_PAGES + 1 {
            s.recycle(Vec::with_capacity(1));
        }
        s.recycle(Vec::with_capacity(SPARE_PAGE_DOCS + 1));
        assert_eq!(s.pages.pages.len(), SPARE_PAGES);
        assert!(
            s.pages
                .pages
                .iter()
                .all(|p| p.capacity() <= SPARE_PAGE_DOCS)
        );
    }
}
