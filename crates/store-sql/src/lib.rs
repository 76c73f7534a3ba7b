//! The interface's versioned-store requests ([`StoreRequest`] and
//! [`StoreReply`]) on real databases: SQLite (bundled, nothing to install)
//! and PostgreSQL.
//!
//! One job: answer each request as the simulator's `VersionedStore` does,
//! with the same atomicity, on a database other programs may share. The
//! store keeps to tables of its own (SQLite: `leasehold_meta`,
//! `leasehold_docs`, `leasehold_writes`; PostgreSQL: the same three in a
//! `leasehold` schema), never touches another, and refuses to start on a
//! store that holds documents unless asked to reset it.
//!
//! How each request maps to SQL, the isolation it runs under and where a
//! real store's guarantees differ from the model's: `docs/stores.md`.
//!
//! Every reply comes with the revision it observed (see [`Applied`]): a
//! write's own, or for a read or a refused write the last write it saw.
//! Writes take revisions one by one under a store-wide lock, so a host that
//! runs many clients at once can put their replies back in one order the
//! store could have answered them in (writes by revision, each reply after
//! the write it saw), which is what its observers must see.

mod postgres_backend;
mod sqlite_backend;

use leasehold_interface::{Document, StoreReply, StoreRequest, Version};
use std::path::PathBuf;

/// A scan never returns more than this, whatever the caller asked for (the
/// simulated store's bound).
pub const MAX_SCAN_LIMIT: u32 = 10_000;

/// What the store's tables say about themselves (in `meta.format`): a table
/// of that name without it was not made by leasehold and is never touched.
pub const STORE_FORMAT: &str = "leasehold-store/1";

/// How keys and values are kept in SQL: a key as bytes whose order (byte by
/// byte, a shorter prefix first: SQLite's `BLOB` and PostgreSQL's `bytea`
/// order) is the keys' own, so that a scan's key range is a SQL range; a
/// value as text.
pub trait Codec<K, V>: Send {
    fn key_bytes(&self, key: &K) -> Vec<u8>;
    fn key_from(&self, bytes: &[u8]) -> Result<K, String>;
    fn value_text(&self, value: &V) -> String;
    fn value_from(&self, text: &str) -> Result<V, String>;
}

/// Where the store is: `sqlite:PATH` or `postgres://...` (`postgresql://`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreUrl {
    Sqlite(PathBuf),
    Postgres(String),
}

impl StoreUrl {
    /// Parse a `--store` argument; the error says which forms are known.
    pub fn parse(text: &str) -> Result<StoreUrl, String> {
        if let Some(path) = text.strip_prefix("sqlite:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err("sqlite: needs a file path (sqlite:lh.db)".into());
            }
            return Ok(StoreUrl::Sqlite(PathBuf::from(path)));
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Ok(StoreUrl::Postgres(text.to_string()));
        }
        Err(format!(
            "\"{}\" is not a store this knows; give sqlite:PATH or postgres://USER@HOST/DB",
            redact(text)
        ))
    }

    /// The URL as it may be shown: without its password.
    pub fn shown(&self) -> String {
        match self {
            StoreUrl::Sqlite(path) => format!("sqlite:{}", path.display()),
            StoreUrl::Postgres(url) => redact(url),
        }
    }

    pub fn backend(&self) -> &'static str {
        match self {
            StoreUrl::Sqlite(_) => "sqlite",
            StoreUrl::Postgres(_) => "postgres",
        }
    }
}

/// `url` without a password: the `:password` of its user part and a
/// `password=` parameter are left out.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => {
            let user = user.split_once(':').map_or(user, |(u, _)| u);
            format!("{user}@{host}")
        }
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|p| !p.to_ascii_lowercase().starts_with("password="))
                .collect();
            if kept.is_empty() {
                path.to_string()
            } else {
                format!("{path}?{}", kept.join("&"))
            }
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// A request the store did not answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestError {
    /// Nothing was applied (the store was busy past its wait, refused the
    /// transaction, or the connection was already gone before the commit):
    /// the model's `Unavailable`.
    NotApplied(String),
    /// The connection broke during the commit: the request may or may not
    /// have been applied. [`SqlStore::resolve`] on a new connection tells.
    Unknown(String),
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::NotApplied(e) => write!(f, "not applied: {e}"),
            RequestError::Unknown(e) => write!(f, "outcome unknown: {e}"),
        }
    }
}

/// A request answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied<K, V> {
    pub reply: StoreReply<K, V>,
    /// For writes, the document as it was just before (as the model's
    /// `VersionedStore::apply` gives it).
    pub before: Option<Document<K, V>>,
    /// The store's revision this reply observed: a write's own, or the last
    /// write a read or a refused write saw.
    pub revision: Version,
    /// Whether the request changed the store (then `revision` is its own).
    pub wrote: bool,
    /// When the request took effect, as a host can place it: a write once
    /// it held the store's write lock (so writes' times follow their
    /// revisions, and come before anyone can see them), a read once its
    /// statement returned (after every write it saw).
    pub at: std::time::Instant,
}

/// Who sent a write, kept with it in the store's write log so that a write
/// whose commit went unanswered can be looked up ([`SqlStore::resolve`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteTag {
    pub client: i64,
    pub request: i64,
}

/// A write found in the log: it was applied at `revision`, over `before`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved<K, V> {
    pub revision: Version,
    pub before: Option<Document<K, V>>,
}

/// A document as a row: encoded key, version, value text, encoded index key.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    pub key: Vec<u8>,
    pub version: i64,
    pub value: String,
    pub idx: Option<Vec<u8>>,
}

/// A failed statement.
#[derive(Debug)]
pub(crate) struct SqlError {
    pub message: String,
}

impl SqlError {
    pub fn new(message: impl Into<String>) -> SqlError {
        SqlError {
            message: message.into(),
        }
    }
}

type SqlResult<T> = Result<T, SqlError>;

/// A write log line: the write's revision and, if a document was there,
/// its version and value before.
pub(crate) type LogLine = (i64, Option<(i64, String)>);

/// What a scan ranges over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScanBy {
    Key,
    Index,
}

/// The SQL a backend runs; the requests' meaning is written once, on top
/// (in [`SqlStore::apply`]).
pub(crate) trait Backend: Send {
    /// Start a write: the store-wide write lock taken, and the revision
    /// read under it.
    fn begin_write(&mut self) -> SqlResult<i64>;
    fn commit(&mut self) -> SqlResult<()>;
    fn rollback(&mut self);
    /// Inside a write: the document at `key`.
    fn row(&mut self, key: &[u8]) -> SqlResult<Option<Row>>;
    fn insert(&mut self, row: &Row) -> SqlResult<()>;
    fn update(&mut self, row: &Row) -> SqlResult<()>;
    fn delete(&mut self, key: &[u8]) -> SqlResult<()>;
    /// Inside a write: the new revision, and the write's log line.
    fn advance(
        &mut self,
        revision: i64,
        tag: Option<WriteTag>,
        before: Option<&Row>,
    ) -> SqlResult<()>;
    /// One statement, one snapshot: the revision and the rows of a key
    /// (`get`) or a range, at most `limit` of them in order.
    fn read(
        &mut self,
        by: ScanBy,
        start: &[u8],
        end: Option<&[u8]>,
        limit: i64,
    ) -> SqlResult<(i64, Vec<Row>)>;
    /// The log line of the latest write sent with `tag`, if any.
    fn logged(&mut self, tag: WriteTag) -> SqlResult<Option<LogLine>>;
    /// Whether the connection is known to be gone.
    fn is_closed(&self) -> bool;
    /// Empty the store's tables (documents, write log; revision 0).
    fn reset(&mut self) -> SqlResult<()>;
}

/// One client's connection to the store, answering requests as the model
/// does.
pub struct SqlStore<K, V, C> {
    backend: Box<dyn Backend>,
    codec: C,
    url: StoreUrl,
    _types: std::marker::PhantomData<fn() -> (K, V)>,
}

/// How a store is opened for a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setup {
    /// The store's tables must exist already (a client of a run).
    Existing,
    /// Create the tables if missing; refuse a store holding documents.
    Fresh,
    /// Create the tables if missing; empty them if they hold documents.
    Reset,
}

/// Why a store could not be opened: one line, naming the URL without its
/// password.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenError(pub String);

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<K: Clone, V: Clone, C: Codec<K, V>> SqlStore<K, V, C> {
    /// Connect to `url`, and set its tables up as `setup` says.
    pub fn open(url: &StoreUrl, setup: Setup, codec: C) -> Result<SqlStore<K, V, C>, OpenError> {
        let backend: Box<dyn Backend> = match url {
            StoreUrl::Sqlite(path) => Box::new(sqlite_backend::Sqlite::open(path, setup)?),
            StoreUrl::Postgres(text) => Box::new(postgres_backend::Postgres::open(text, setup)?),
        };
        Ok(SqlStore {
            backend,
            codec,
            url: url.clone(),
            _types: std::marker::PhantomData,
        })
    }

    pub fn url(&self) -> &StoreUrl {
        &self.url
    }

    /// Whether the connection is known to be gone (reconnect with
    /// [`SqlStore::open`]).
    pub fn is_closed(&self) -> bool {
        self.backend.is_closed()
    }

    fn document(&self, row: &Row) -> Result<Document<K, V>, SqlError> {
        let key = self
            .codec
            .key_from(&row.key)
            .map_err(|e| SqlError::new(format!("a stored key does not decode: {e}")))?;
        let value = self
            .codec
            .value_from(&row.value)
            .map_err(|e| SqlError::new(format!("a stored value does not decode: {e}")))?;
        Ok(Document {
            key,
            version: version_of(row.version)?,
            value,
        })
    }

    /// Answer one request, in one statement (reads) or one transaction
    /// (writes). `tag` goes into the write log with a write that lands.
    pub fn apply(
        &mut self,
        request: &StoreRequest<K, V>,
        tag: Option<WriteTag>,
    ) -> Result<Applied<K, V>, RequestError> {
        if !request.is_write() {
            return self.read(request).map_err(|e| {
                // A read changes nothing: whatever broke, nothing applied.
                RequestError::NotApplied(e.message)
            });
        }
        let revision = self
            .backend
            .begin_write()
            .map_err(|e| RequestError::NotApplied(e.message))?;
        let at = std::time::Instant::now();
        match self.write(request, revision, tag, at) {
            Ok(applied) => {
                if applied.wrote {
                    if let Err(e) = self.backend.commit() {
                        return Err(RequestError::Unknown(e.message));
                    }
                } else {
                    // Nothing written: end the transaction, lock released.
                    self.backend.rollback();
                }
                Ok(applied)
            }
            Err(e) => {
                self.backend.rollback();
                Err(RequestError::NotApplied(e.message))
            }
        }
    }

    fn read(&mut self, request: &StoreRequest<K, V>) -> SqlResult<Applied<K, V>> {
        let (reply, revision) = match request {
            StoreRequest::Get { key } => {
                let key = self.codec.key_bytes(key);
                let (revision, rows) = self.backend.read(ScanBy::Key, &key, None, 1)?;
                let doc = rows.first().map(|r| self.document(r)).transpose()?;
                (StoreReply::Got { doc }, revision)
            }
            StoreRequest::Scan { start, end, limit }
            | StoreRequest::ScanIndex { start, end, limit } => {
                let by = if matches!(request, StoreRequest::Scan { .. }) {
                    ScanBy::Key
                } else {
                    ScanBy::Index
                };
                let limit = (*limit).clamp(1, MAX_SCAN_LIMIT);
                let (start, end) = (self.codec.key_bytes(start), self.codec.key_bytes(end));
                let (revision, mut rows) =
                    self.backend
                        .read(by, &start, Some(&end), i64::from(limit) + 1)?;
                // One past the page says whether more match.
                let more = rows.len() > limit as usize;
                rows.truncate(limit as usize);
                let docs = rows
                    .iter()
                    .map(|r| self.document(r))
                    .collect::<SqlResult<Vec<_>>>()?;
                (StoreReply::Scanned { docs, more }, revision)
            }
            _ => unreachable!("a write is not read"),
        };
        Ok(Applied {
            reply,
            before: None,
            revision: version_of(revision)?,
            wrote: false,
            at: std::time::Instant::now(),
        })
    }

    /// A write's statements, inside the transaction `begin_write` opened
    /// at `revision`.
    fn write(
        &mut self,
        request: &StoreRequest<K, V>,
        revision: i64,
        tag: Option<WriteTag>,
        at: std::time::Instant,
    ) -> SqlResult<Applied<K, V>> {
        let key = request.key().expect("a write has a key");
        let key_bytes = self.codec.key_bytes(key);
        let current = self.backend.row(&key_bytes)?;
        let before = current.as_ref().map(|r| self.document(r)).transpose()?;
        let seen = version_of(revision)?;
        let refused = |before: Option<Document<K, V>>| Applied {
            reply: StoreReply::Conflict {
                current: before.clone(),
            },
            before,
            revision: seen,
            wrote: false,
            at,
        };
        let next = revision + 1;
        let row_of = |value: &V, index: &Option<K>| Row {
            key: key_bytes.clone(),
            version: next,
            value: self.codec.value_text(value),
            idx: index.as_ref().map(|i| self.codec.key_bytes(i)),
        };
        let reply = match request {
            StoreRequest::CreateIfAbsent { value, index, .. } => {
                if current.is_some() {
                    return Ok(refused(before));
                }
                self.backend.insert(&row_of(value, index))?;
                StoreReply::Written {
                    version: version_of(next)?,
                }
            }
            StoreRequest::PutIfVersion {
                expected,
                value,
                index,
                ..
            } => {
                match &before {
                    Some(doc) if doc.version == *expected => {}
                    _ => return Ok(refused(before)),
                }
                self.backend.update(&row_of(value, index))?;
                StoreReply::Written {
                    version: version_of(next)?,
                }
            }
            StoreRequest::PutUnconditional { value, index, .. } => {
                let row = row_of(value, index);
                if current.is_some() {
                    self.backend.update(&row)?;
                } else {
                    self.backend.insert(&row)?;
                }
                StoreReply::Written {
                    version: version_of(next)?,
                }
            }
            StoreRequest::DeleteIfVersion { expected, .. } => {
                match &before {
                    Some(doc) if doc.version == *expected => {}
                    _ => return Ok(refused(before)),
                }
                self.backend.delete(&key_bytes)?;
                StoreReply::Deleted
            }
            StoreRequest::Get { .. }
            | StoreRequest::Scan { .. }
            | StoreRequest::ScanIndex { .. } => {
                unreachable!("a read is not written")
            }
        };
        self.backend.advance(next, tag, current.as_ref())?;
        Ok(Applied {
            reply,
            before,
            revision: version_of(next)?,
            wrote: true,
            at,
        })
    }

    /// Empty the store: no documents, an empty write log, revision 0. Only
    /// the store's own tables are touched.
    pub fn reset(&mut self) -> Result<(), String> {
        self.backend.reset().map_err(|e| e.message)
    }

    /// Whether the write sent with `tag` landed (looked up in the store's
    /// write log): its revision and the document before it, or `None` if it
    /// was never applied. For a write whose commit went unanswered.
    pub fn resolve(&mut self, tag: WriteTag, key: &K) -> Result<Option<Resolved<K, V>>, String> {
        let Some((revision, before)) = self.backend.logged(tag).map_err(|e| e.message)? else {
            return Ok(None);
        };
        let before = match before {
            Some((version, value)) => Some(Document {
                key: key.clone(),
                version: version_of(version).map_err(|e| e.message)?,
                value: self.codec.value_from(&value)?,
            }),
            None => None,
        };
        Ok(Some(Resolved {
            revision: version_of(revision).map_err(|e| e.message)?,
            before,
        }))
    }
}

/// A stored version (SQL integers are signed) as the interface's.
fn version_of(stored: i64) -> SqlResult<Version> {
    Version::try_from(stored).map_err(|_| SqlError::new(format!("a negative version {stored}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_their_password() {
        assert_eq!(
            redact("postgres://alice:s3cret@db.local:5432/leases?sslmode=disable"),
            "postgres://alice@db.local:5432/leases?sslmode=disable"
        );
        assert_eq!(
            redact("postgresql://bob@127.0.0.1/x?password=hunter2&application_name=lh"),
            "postgresql://bob@127.0.0.1/x?application_name=lh"
        );
        assert_eq!(redact("postgres://h/db?password=p"), "postgres://h/db");
        assert_eq!(redact("postgres://u:p@h"), "postgres://u@h");
        let shown = StoreUrl::parse("postgres://u:pw@h/db").unwrap().shown();
        assert!(!shown.contains("pw"), "{shown}");
        let e = StoreUrl::parse("mysql://u:pw@h/db").unwrap_err();
        assert!(!e.contains("pw") && e.contains("sqlite:PATH"), "{e}");
        assert_eq!(
            StoreUrl::parse("sqlite:lh.db").unwrap(),
            StoreUrl::Sqlite(PathBuf::from("lh.db"))
        );
        assert!(StoreUrl::parse("sqlite:").is_err());
    }
}
