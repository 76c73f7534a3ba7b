//! Requests to, and replies from, a linearizable versioned document store.
//!
//! The store is generic: keys `K` are totally ordered (so prefix scans are key
//! ranges) and values `V` are opaque. A write may name one secondary index key;
//! the store keeps the index entry in step with the document atomically, as
//! real stores do for indexed fields (a SQL index, a DynamoDB GSI).

use serde::{Deserialize, Serialize};

/// The store's revision at which a document was last written. Versions come
/// from one global counter (like etcd's `mod_revision`), so a deleted and
/// re-created document never repeats a version: no ABA.
pub type Version = u64;

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Document<K, V> {
    pub key: K,
    pub version: Version,
    pub value: V,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum StoreRequest<K, V> {
    Get {
        key: K,
    },
    /// Fails with `Conflict` if the key exists.
    CreateIfAbsent {
        key: K,
        value: V,
        index: Option<K>,
    },
    /// Fails with `Conflict` unless the document exists at `expected`.
    PutIfVersion {
        key: K,
        expected: Version,
        value: V,
        index: Option<K>,
    },
    /// Writes whatever is there. Correct protocols never send it; planted bugs do.
    PutUnconditional {
        key: K,
        value: V,
        index: Option<K>,
    },
    DeleteIfVersion {
        key: K,
        expected: Version,
    },
    /// Documents with `start <= key < end`, in key order, at most `limit`.
    Scan {
        start: K,
        end: K,
        limit: u32,
    },
    /// Documents whose index key lies in `[start, end)`, in index-key order.
    ScanIndex {
        start: K,
        end: K,
        limit: u32,
    },
}

impl<K, V> StoreRequest<K, V> {
    pub fn key(&self) -> Option<&K> {
        match self {
            StoreRequest::Get { key }
            | StoreRequest::CreateIfAbsent { key, .. }
            | StoreRequest::PutIfVersion { key, .. }
            | StoreRequest::PutUnconditional { key, .. }
            | StoreRequest::DeleteIfVersion { key, .. } => Some(key),
            StoreRequest::Scan { .. } | StoreRequest::ScanIndex { .. } => None,
        }
    }

    /// The value a write carries (`None` for reads, scans and deletes).
    pub fn value(&self) -> Option<&V> {
        match self {
            StoreRequest::CreateIfAbsent { value, .. }
            | StoreRequest::PutIfVersion { value, .. }
            | StoreRequest::PutUnconditional { value, .. } => Some(value),
            StoreRequest::Get { .. }
            | StoreRequest::DeleteIfVersion { .. }
            | StoreRequest::Scan { .. }
            | StoreRequest::ScanIndex { .. } => None,
        }
    }

    pub fn is_write(&self) -> bool {
        matches!(
            self,
            StoreRequest::CreateIfAbsent { .. }
                | StoreRequest::PutIfVersion { .. }
                | StoreRequest::PutUnconditional { .. }
                | StoreRequest::DeleteIfVersion { .. }
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum StoreReply<K, V> {
    Got {
        doc: Option<Document<K, V>>,
    },
    Written {
        version: Version,
    },
    Deleted,
    /// The condition failed; `current` is the document as it is now, so the
    /// caller can tell "someone else moved it" from "my own earlier write won".
    Conflict {
        current: Option<Document<K, V>>,
    },
    Scanned {
        docs: Vec<Document<K, V>>,
        /// More matching documents exist past the last one returned.
        more: bool,
    },
    /// The store refused the request (outage); nothing was applied.
    Unavailable,
}

/// The classes a store's keys fall into: consecutive ranges of the key
/// order, numbered in that order (`a < b` implies `a.class() <= b.class()`).
///
/// A store keeps a class's keys in order only once a scan or a delete
/// reaches it: a class no scan reads (the protocol's task documents, a
/// create each) then costs no ordered insert per create.
pub trait KeyClasses {
    /// How many classes there are: every key's class is below this.
    const CLASSES: usize;

    /// This key's class.
    fn class(&self) -> usize;

    /// Whether no key of this key's class sorts before it, so that a scan
    /// ending here reads nothing of its class.
    fn starts_class(&self) -> bool;
}

/// One class: every scan may read any key.
impl KeyClasses for u32 {
    const CLASSES: usize = 1;

    #[inline(always)]
    fn class(&self) -> usize {
        0
    }

    #[inline(always)]
    fn starts_class(&self) -> bool {
        *self == 0
    }
}
