//! The store on PostgreSQL: tables in a `leasehold` schema, READ COMMITTED
//! transactions, writers serialised by a row lock on the one `meta` row
//! (`SELECT ... FOR UPDATE`), each read one statement on one snapshot.

use crate::{
    Backend, LogLine, OpenError, Row, STORE_FORMAT, ScanBy, Setup, SqlError, SqlResult, WriteTag,
};
use postgres::error::SqlState;
use postgres::{Client, NoTls, Statement};

const SCHEMA: &str = "leasehold";

/// How long a connection attempt may take before the store is called
/// unreachable.
const CONNECT_TIMEOUT_S: u64 = 5;

/// The statements a client runs, prepared once per connection.
struct Statements {
    lock: Statement,
    row: Statement,
    insert: Statement,
    update: Statement,
    delete: Statement,
    advance: Statement,
    log: Statement,
    get: Statement,
    scan_key: Statement,
    scan_index: Statement,
    logged: Statement,
}

pub(crate) struct Postgres {
    client: Client,
    statements: Statements,
}

fn err(e: postgres::Error) -> SqlError {
    let message = match e.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => e.to_string(),
    };
    SqlError { message }
}

/// Why a connection or the set-up failed, in words that say what to fix.
fn open_error(shown: &str, e: &postgres::Error) -> OpenError {
    let what = match e.code() {
        Some(c) if *c == SqlState::INVALID_PASSWORD => "wrong password".to_string(),
        Some(c) if *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION => {
            "authentication refused".to_string()
        }
        Some(c) if *c == SqlState::INSUFFICIENT_PRIVILEGE => format!(
            "permission denied ({}); the user needs CREATE on the database, or the schema {SCHEMA} made for it",
            e.as_db_error().map_or("", |d| d.message())
        ),
        Some(c) if *c == SqlState::INVALID_CATALOG_NAME => "no such database".to_string(),
        Some(_) => e
            .as_db_error()
            .map_or_else(|| e.to_string(), |d| d.message().to_string()),
        None => format!("cannot reach the database ({})", one_line(&e.to_string())),
    };
    OpenError(format!("{shown}: {what}"))
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Postgres {
    pub(crate) fn open(url: &str, setup: Setup) -> Result<Postgres, OpenError> {
        let shown = crate::redact(url);
        let mut config: postgres::Config = url
            .parse()
            .map_err(|e| OpenError(format!("{shown}: not a PostgreSQL URL ({e})")))?;
        config.connect_timeout(std::time::Duration::from_secs(CONNECT_TIMEOUT_S));
        config.application_name("leasehold");
        let mut client = config.connect(NoTls).map_err(|e| open_error(&shown, &e))?;
        set_up(&mut client, setup).map_err(|e| match e {
            SetUpError::Sql(e) => open_error(&shown, &e),
            SetUpError::Refused(why) => OpenError(format!("{shown}: {why}")),
        })?;
        let statements = prepare(&mut client).map_err(|e| open_error(&shown, &e))?;
        Ok(Postgres { client, statements })
    }
}

enum SetUpError {
    Sql(postgres::Error),
    Refused(String),
}

impl From<postgres::Error> for SetUpError {
    fn from(e: postgres::Error) -> SetUpError {
        SetUpError::Sql(e)
    }
}

fn set_up(client: &mut Client, setup: Setup) -> Result<(), SetUpError> {
    let exists = |client: &mut Client, table: &str| -> Result<bool, postgres::Error> {
        let row = client.query_one(
            "SELECT to_regclass($1)::text",
            &[&format!("{SCHEMA}.{table}")],
        )?;
        Ok(row.get::<_, Option<String>>(0).is_some())
    };
    let (meta, docs, writes) = (
        exists(client, "meta")?,
        exists(client, "docs")?,
        exists(client, "writes")?,
    );
    if !meta {
        if setup == Setup::Existing {
            return Err(SetUpError::Refused(format!(
                "no table {SCHEMA}.meta: the store was not set up"
            )));
        }
        if docs || writes {
            return Err(SetUpError::Refused(format!(
                "a table {SCHEMA}.{} exists without {SCHEMA}.meta: not leasehold's; leasehold touches no table it did not create",
                if docs { "docs" } else { "writes" }
            )));
        }
        client.batch_execute(&format!(
            "BEGIN;
             CREATE SCHEMA IF NOT EXISTS {SCHEMA};
             CREATE TABLE {SCHEMA}.meta (one integer PRIMARY KEY CHECK (one = 1), format text NOT NULL, revision bigint NOT NULL);
             INSERT INTO {SCHEMA}.meta VALUES (1, '{STORE_FORMAT}', 0);
             CREATE TABLE {SCHEMA}.docs (key bytea PRIMARY KEY, version bigint NOT NULL, value text NOT NULL, idx bytea UNIQUE);
             CREATE TABLE {SCHEMA}.writes (revision bigint PRIMARY KEY, client bigint NOT NULL, request bigint NOT NULL, before_version bigint, before_value text);
             CREATE INDEX writes_by_request ON {SCHEMA}.writes (client, request);
             COMMIT;"
        ))?;
        return Ok(());
    }
    let format: Option<String> = client
        .query_opt(
            &format!("SELECT format FROM {SCHEMA}.meta WHERE one = 1"),
            &[],
        )
        .map_err(|e| {
            SetUpError::Refused(format!(
                "table {SCHEMA}.meta is not leasehold's ({})",
                err(e).message
            ))
        })?
        .map(|r| r.get(0));
    if format.as_deref() != Some(STORE_FORMAT) {
        return Err(SetUpError::Refused(format!(
            "table {SCHEMA}.meta is not leasehold's (format {format:?}, not \"{STORE_FORMAT}\")"
        )));
    }
    if !docs || !writes {
        return Err(SetUpError::Refused(format!(
            "table {SCHEMA}.{} is missing: the store is damaged",
            if docs { "writes" } else { "docs" }
        )));
    }
    let row = client.query_one(
        &format!(
            "SELECT (SELECT revision FROM {SCHEMA}.meta), (SELECT count(*) FROM {SCHEMA}.docs)"
        ),
        &[],
    )?;
    let (revision, count): (i64, i64) = (row.get(0), row.get(1));
    let used = revision > 0 || count > 0;
    match setup {
        Setup::Fresh if used => Err(SetUpError::Refused(format!(
            "the store is not empty ({count} documents, revision {revision}); give --reset to empty it"
        ))),
        Setup::Reset if used => {
            client.batch_execute(&reset_sql())?;
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Empty the tables under the write lock.
fn reset_sql() -> String {
    format!(
        "BEGIN; SELECT revision FROM {SCHEMA}.meta FOR UPDATE; DELETE FROM {SCHEMA}.docs; DELETE FROM {SCHEMA}.writes; UPDATE {SCHEMA}.meta SET revision = 0; COMMIT;"
    )
}

fn prepare(client: &mut Client) -> Result<Statements, postgres::Error> {
    let s = SCHEMA;
    // A read: the revision as one more row of the same statement, so one
    // snapshot answers both.
    let read = |column: &str, range: &str| {
        format!(
            "SELECT revision, NULL::bytea, NULL::bigint, NULL::text, NULL::bytea FROM {s}.meta WHERE one = 1
             UNION ALL
             SELECT * FROM (SELECT NULL::bigint, key, version, value, idx FROM {s}.docs WHERE {range} ORDER BY {column} LIMIT $3) d"
        )
    };
    Ok(Statements {
        lock: client.prepare(&format!("SELECT revision FROM {s}.meta WHERE one = 1 FOR UPDATE"))?,
        row: client.prepare(&format!("SELECT key, version, value, idx FROM {s}.docs WHERE key = $1"))?,
        insert: client.prepare(&format!(
            "INSERT INTO {s}.docs (key, version, value, idx) VALUES ($1, $2, $3, $4)"
        ))?,
        update: client.prepare(&format!(
            "UPDATE {s}.docs SET version = $2, value = $3, idx = $4 WHERE key = $1"
        ))?,
        delete: client.prepare(&format!("DELETE FROM {s}.docs WHERE key = $1"))?,
        advance: client.prepare(&format!("UPDATE {s}.meta SET revision = $1 WHERE one = 1"))?,
        log: client.prepare(&format!(
            "INSERT INTO {s}.writes (revision, client, request, before_version, before_value) VALUES ($1, $2, $3, $4, $5)"
        ))?,
        get: client.prepare(&read("key", "key = $1 AND $2::bytea IS NULL"))?,
        scan_key: client.prepare(&read("key", "key >= $1 AND key < $2"))?,
        scan_index: client.prepare(&read("idx", "idx >= $1 AND idx < $2"))?,
        logged: client.prepare(&format!(
            "SELECT revision, before_version, before_value FROM {s}.writes WHERE client = $1 AND request = $2 ORDER BY revision DESC LIMIT 1"
        ))?,
    })
}

fn row(r: &postgres::Row, from: usize) -> Row {
    Row {
        key: r.get(from),
        version: r.get(from + 1),
        value: r.get(from + 2),
        idx: r.get(from + 3),
    }
}

impl Backend for Postgres {
    fn begin_write(&mut self) -> SqlResult<i64> {
        self.client.batch_execute("BEGIN").map_err(err)?;
        match self.client.query_one(&self.statements.lock, &[]) {
            Ok(r) => Ok(r.get(0)),
            Err(e) => {
                self.rollback();
                Err(err(e))
            }
        }
    }

    fn commit(&mut self) -> SqlResult<()> {
        self.client.batch_execute("COMMIT").map_err(err)
    }

    fn rollback(&mut self) {
        // Fails only with the connection gone, which rolls back anyway.
        let _ = self.client.batch_execute("ROLLBACK");
    }

    fn row(&mut self, key: &[u8]) -> SqlResult<Option<Row>> {
        self.client
            .query_opt(&self.statements.row, &[&key])
            .map(|r| r.map(|r| row(&r, 0)))
            .map_err(err)
    }

    fn insert(&mut self, r: &Row) -> SqlResult<()> {
        self.client
            .execute(
                &self.statements.insert,
                &[&r.key, &r.version, &r.value, &r.idx],
            )
            .map(drop)
            .map_err(err)
    }

    fn update(&mut self, r: &Row) -> SqlResult<()> {
        let changed = self
            .client
            .execute(
                &self.statements.update,
                &[&r.key, &r.version, &r.value, &r.idx],
            )
            .map_err(err)?;
        if changed != 1 {
            return Err(SqlError::new(format!("an update changed {changed} rows")));
        }
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> SqlResult<()> {
        let changed = self
            .client
            .execute(&self.statements.delete, &[&key])
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
        self.client
            .execute(&self.statements.advance, &[&revision])
            .map_err(err)?;
        if let Some(tag) = tag {
            let (version, value) = (before.map(|b| b.version), before.map(|b| b.value.as_str()));
            self.client
                .execute(
                    &self.statements.log,
                    &[&revision, &tag.client, &tag.request, &version, &value],
                )
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
        let statement = match (by, end) {
            (_, None) => &self.statements.get,
            (ScanBy::Key, Some(_)) => &self.statements.scan_key,
            (ScanBy::Index, Some(_)) => &self.statements.scan_index,
        };
        let rows = self
            .client
            .query(statement, &[&start, &end, &limit])
            .map_err(err)?;
        let mut revision = None;
        let mut docs = Vec::with_capacity(rows.len());
        for r in &rows {
            match r.get::<_, Option<i64>>(0) {
                Some(rev) => revision = Some(rev),
                None => docs.push(row(r, 1)),
            }
        }
        let revision = revision.ok_or_else(|| SqlError::new("the store's revision is missing"))?;
        // A union's order is not promised: sorted here as the scan's.
        match by {
            ScanBy::Key => docs.sort_by(|a, b| a.key.cmp(&b.key)),
            ScanBy::Index => docs.sort_by(|a, b| a.idx.cmp(&b.idx)),
        }
        Ok((revision, docs))
    }

    fn logged(&mut self, tag: WriteTag) -> SqlResult<Option<LogLine>> {
        self.client
            .query_opt(&self.statements.logged, &[&tag.client, &tag.request])
            .map(|r| {
                r.map(|r| {
                    let before = match (r.get::<_, Option<i64>>(1), r.get::<_, Option<String>>(2)) {
                        (Some(v), Some(text)) => Some((v, text)),
                        _ => None,
                    };
                    (r.get(0), before)
                })
            })
            .map_err(err)
    }

    fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    fn reset(&mut self) -> SqlResult<()> {
        self.client.batch_execute(&reset_sql()).map_err(err)
    }
}
