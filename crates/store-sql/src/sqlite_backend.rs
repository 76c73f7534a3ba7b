//! The store on SQLite (the crate's bundled copy): one file, WAL journal,
//! writers serialised by `BEGIN IMMEDIATE` (SQLite's one write lock), each
//! read one statement on one snapshot.

use crate::{
    Backend, LogLine, OpenError, Row, STORE_FORMAT, ScanBy, Setup, SqlError, SqlResult, WriteTag,
};
use rusqlite::{Connection, OptionalExtension, params};
use std::path::Path;
use std::time::Duration;

/// How long a client waits for another's write lock before its request is
/// refused (`Unavailable`): far past any one transaction's length.
const BUSY_WAIT: Duration = Duration::from_secs(5);

const META: &str = "leasehold_meta";
const DOCS: &str = "leasehold_docs";
const WRITES: &str = "leasehold_writes";

pub(crate) struct Sqlite {
    conn: Connection,
}

fn err(e: rusqlite::Error) -> SqlError {
    SqlError::new(e.to_string())
}

impl Sqlite {
    pub(crate) fn open(path: &Path, setup: Setup) -> Result<Sqlite, OpenError> {
        let shown = format!("sqlite:{}", path.display());
        let fail = |e: String| OpenError(format!("{shown}: {e}"));
        if setup == Setup::Existing && !path.exists() {
            return Err(fail("no such database file".into()));
        }
        let conn = Connection::open(path).map_err(|e| fail(e.to_string()))?;
        conn.busy_timeout(BUSY_WAIT)
            .map_err(|e| fail(e.to_string()))?;
        // WAL: readers never wait for the writer, and a commit appends to
        // the log. synchronous=NORMAL: a commit is durable once the log is
        // checkpointed, atomic always; a run's store is a test store.
        let mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(|e| fail(format!("cannot use it as a database: {e}")))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(fail(format!("journal mode {mode}, not WAL")));
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| fail(e.to_string()))?;
        let mut store = Sqlite { conn };
        store.set_up(setup).map_err(fail)?;
        Ok(store)
    }

    fn table_exists(&self, name: &str) -> Result<bool, String> {
        self.conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [name],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n > 0)
            .map_err(|e| e.to_string())
    }

    /// Our tables, created if missing (`Fresh`, `Reset`); a table of one
    /// of their names that is not ours is refused, never changed.
    fn set_up(&mut self, setup: Setup) -> Result<(), String> {
        let (meta, docs, writes) = (
            self.table_exists(META)?,
            self.table_exists(DOCS)?,
            self.table_exists(WRITES)?,
        );
        if !meta {
            if setup == Setup::Existing {
                return Err(format!("no table {META}: the store was not set up"));
            }
            if docs || writes {
                return Err(format!(
                    "a table {} exists without {META}: not leasehold's; leasehold touches no table it did not create",
                    if docs { DOCS } else { WRITES }
                ));
            }
            self.conn
                .execute_batch(&format!(
                    "BEGIN IMMEDIATE;
                     CREATE TABLE {META} (one INTEGER PRIMARY KEY CHECK (one = 1), format TEXT NOT NULL, revision INTEGER NOT NULL);
                     INSERT INTO {META} VALUES (1, '{STORE_FORMAT}', 0);
                     CREATE TABLE {DOCS} (key BLOB PRIMARY KEY, version INTEGER NOT NULL, value TEXT NOT NULL, idx BLOB UNIQUE) WITHOUT ROWID;
                     CREATE TABLE {WRITES} (revision INTEGER PRIMARY KEY, client INTEGER NOT NULL, request INTEGER NOT NULL, before_version INTEGER, before_value TEXT);
                     CREATE INDEX {WRITES}_by_request ON {WRITES} (client, request);
                     COMMIT;"
                ))
                .map_err(|e| format!("cannot create the store's tables: {e}"))?;
            return Ok(());
        }
        let format: Option<String> = self
            .conn
            .query_row(
                &format!("SELECT format FROM {META} WHERE one = 1"),
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| format!("table {META} is not leasehold's ({e})"))?;
        if format.as_deref() != Some(STORE_FORMAT) {
            return Err(format!(
                "table {META} is not leasehold's (format {format:?}, not \"{STORE_FORMAT}\")"
            ));
        }
        if !docs || !writes {
            return Err(format!(
                "table {} is missing: the store is damaged",
                if docs { WRITES } else { DOCS }
            ));
        }
        let (revision, count): (i64, i64) = self
            .conn
            .query_row(
                &format!("SELECT (SELECT revision FROM {META}), (SELECT count(*) FROM {DOCS})"),
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| e.to_string())?;
        let used = revision > 0 || count > 0;
        match setup {
            Setup::Fresh if used => Err(format!(
                "the store is not empty ({count} documents, revision {revision}); give --reset to empty it"
            )),
            Setup::Reset if used => self
                .reset()
                .map_err(|e| format!("cannot reset the store: {}", e.message)),
            _ => Ok(()),
        }
    }
}

fn row(r: &rusqlite::Row<'_>, from: usize) -> rusqlite::Result<Row> {
    Ok(Row {
        key: r.get(from)?,
        version: r.get(from + 1)?,
        value: r.get(from + 2)?,
        idx: r.get(from + 3)?,
    })
}

impl Backend for Sqlite {
    fn begin_write(&mut self) -> SqlResult<i64> {
        self.conn.execute_batch("BEGIN IMMEDIATE").map_err(err)?;
        let revision = self
            .conn
            .prepare_cached(&format!("SELECT revision FROM {META} WHERE one = 1"))
            .and_then(|mut s| s.query_row([], |r| r.get(0)));
        match revision {
            Ok(r) => Ok(r),
            Err(e) => {
                self.rollback();
                Err(err(e))
            }
        }
    }

    fn commit(&mut self) -> SqlResult<()> {
        self.conn.execute_batch("COMMIT").map_err(err)
    }

    fn rollback(&mut self) {
        // Fails only with no transaction open, which leaves nothing to undo.
        let _ = self.conn.execute_batch("ROLLBACK");
    }

    fn row(&mut self, key: &[u8]) -> SqlResult<Option<Row>> {
        self.conn
            .prepare_cached(&format!(
                "SELECT key, version, value, idx FROM {DOCS} WHERE key = ?1"
            ))
            .and_then(|mut s| s.query_row([key], |r| row(r, 0)).optional())
            .map_err(err)
    }

    fn insert(&mut self, r: &Row) -> SqlResult<()> {
        self.conn
            .prepare_cached(&format!(
                "INSERT INTO {DOCS} (key, version, value, idx) VALUES (?1, ?2, ?3, ?4)"
            ))
            .and_then(|mut s| s.execute(params![r.key, r.version, r.value, r.idx]))
            .map(drop)
            .map_err(err)
    }

    fn update(&mut self, r: &Row) -> SqlResult<()> {
        let changed = self
            .conn
            .prepare_cached(&format!(
                "UPDATE {DOCS} SET version = ?2, value = ?3, idx = ?4 WHERE key = ?1"
            ))
            .and_then(|mut s| s.execute(params![r.key, r.version, r.value, r.idx]))
            .map_err(err)?;
        if changed != 1 {
            return Err(SqlError::new(format!("an update changed {changed} rows")));
        }
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> SqlResult<()> {
        let changed = self
            .conn
            .prepare_cached(&format!("DELETE FROM {DOCS} WHERE key = ?1"))
            .and_then(|mut s| s.execute([key]))
            .map_err(err)?;
        if changed != 1 {
            return Err(SqlError::new(format!("a delete removed {changed} rows")));
        }
        Ok(())
    }

    fn advance(
        &mut self,
        revision: i64,
        tag: Option<WriteTag>,
        before: Option<&Row>,
    ) -> SqlResult<()> {
        self.conn
            .prepare_cached(&format!("UPDATE {META} SET revision = ?1 WHERE one = 1"))
            .and_then(|mut s| s.execute([revision]))
            .map_err(err)?;
        if let Some(tag) = tag {
            self.conn
                .prepare_cached(&format!(
                    "INSERT INTO {WRITES} (revision, client, request, before_version, before_value) VALUES (?1, ?2, ?3, ?4, ?5)"
                ))
                .and_then(|mut s| {
                    s.execute(params![
                        revision,
                        tag.client,
                        tag.request,
                        before.map(|b| b.version),
                        before.map(|b| b.value.as_str())
                    ])
                })
                .map_err(err)?;
        }
        Ok(())
    }

    fn read(
        &mut self,
        by: ScanBy,
        start: &[u8],
        end: Option<&[u8]>,
        limit: i64,
    ) -> SqlResult<(i64, Vec<Row>)> {
        // The revision as one more row of the same statement: one snapshot.
        let column = match by {
            ScanBy::Key => "key",
            ScanBy::Index => "idx",
        };
        let range = match end {
            Some(_) => format!("{column} >= ?1 AND {column} < ?2"),
            None => format!("{column} = ?1 AND ?2 IS NULL"),
        };
        let sql = format!(
            "SELECT revision, NULL, NULL, NULL, NULL FROM {META} WHERE one = 1
             UNION ALL
             SELECT * FROM (SELECT NULL, key, version, value, idx FROM {DOCS} WHERE {range} ORDER BY {column} LIMIT ?3)"
        );
        let mut statement = self.conn.prepare_cached(&sql).map_err(err)?;
        let mut rows = statement.query(params![start, end, limit]).map_err(err)?;
        let mut revision = None;
        let mut docs = Vec::new();
        // Bounded: the limit's rows and the revision's.
        while let Some(r) = rows.next().map_err(err)? {
            match r.get::<_, Option<i64>>(0).map_err(err)? {
                Some(rev) => revision = Some(rev),
                None => docs.push(row(r, 1).map_err(err)?),
            }
        }
        let revision = revision.ok_or_else(|| SqlError::new("the store's revision is missing"))?;
        // A compound's order is not promised: sorted here as the scan's.
        match by {
            ScanBy::Key => docs.sort_by(|a, b| a.key.cmp(&b.key)),
            ScanBy::Index => docs.sort_by(|a, b| a.idx.cmp(&b.idx)),
        }
        Ok((revision, docs))
    }

    fn logged(&mut self, tag: WriteTag) -> SqlResult<Option<LogLine>> {
        self.conn
            .prepare_cached(&format!(
                "SELECT revision, before_version, before_value FROM {WRITES} WHERE client = ?1 AND request = ?2 ORDER BY revision DESC LIMIT 1"
            ))
            .and_then(|mut s| {
                s.query_row([tag.client, tag.request], |r| {
                    let before = match (r.get::<_, Option<i64>>(1)?, r.get::<_, Option<String>>(2)?) {
                        (Some(v), Some(text)) => Some((v, text)),
                        _ => None,
                    };
                    Ok((r.get(0)?, before))
                })
                .optional()
            })
            .map_err(err)
    }

    fn is_closed(&self) -> bool {
        false
    }

    fn reset(&mut self) -> SqlResult<()> {
        self.conn
            .execute_batch(&format!(
                "BEGIN IMMEDIATE; DELETE FROM {DOCS}; DELETE FROM {WRITES}; UPDATE {META} SET revision = 0; COMMIT;"
            ))
            .map_err(err)
    }
}
