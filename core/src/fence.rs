//! Fencing at the resource: the write of a holder whose lease ended is refused by the data store
//! itself, not only handed a token.
//!
//! A hold's fencing token ([`Acquired::fencing_token`](crate::Acquired)) grows with every new
//! owner of a lock. A resource that remembers the largest token it accepted for the name, and
//! refuses a smaller one atomically with the write, turns "the old holder believed it still
//! held" into a refused write (`ErrorKind::StaleToken`) instead of a lost update.
//!
//! - Data in Redis: [`Client::fenced_write`](crate::Client::fenced_write) (or
//!   [`Fence::write`]) runs the resource's own commands in one script with the check.
//! - Data in PostgreSQL or MySQL/MariaDB, written through the application's own connection:
//!   [`postgres`] and [`mysql`] take the guard row of the name in the caller's transaction;
//!   `StaleToken` tells the caller to roll back, so the stale write never commits. The table is
//!   made once by [`postgres_setup`] or [`mysql_setup`] (outside a transaction on MySQL, whose
//!   DDL commits).
//!
//! The statements are public ([`SQL`] lists them): the Python, Node and Java guards send the same
//! text, and a
//! shell job under `polylock run` sends it with `$POLYLOCK_FENCING_TOKEN` in its own `psql` or
//! `mysql` transaction.

pub use crate::model::outcome::Reply;
pub use crate::primitives::fence::{
    checked_token, Fence, MAX_ARGUMENTS, MAX_COMMANDS, MAX_WRITE_BYTES,
};

use crate::model::error::{Error, ErrorKind, Result};
use crate::model::names::validate_name;
use crate::model::shown::escape;

/// Longest name a SQL fence row holds (its `VARCHAR(255)` key, in characters).
pub const MAX_SQL_NAME_CHARS: usize = 255;

/// The fence table on PostgreSQL.
pub const POSTGRES_TABLE: &str = "CREATE TABLE IF NOT EXISTS polylock_fence (name VARCHAR(255) \
     PRIMARY KEY, token BIGINT NOT NULL)";

/// The guard on PostgreSQL (`$1` the name, `$2` the token): one row affected when the token is
/// not older than the stored one (the row stays locked until the transaction ends, so a stale
/// writer waits, then finds the newer token), none when it is older.
pub const POSTGRES_GUARD: &str = "INSERT INTO polylock_fence (name, token) VALUES ($1, $2) \
     ON CONFLICT (name) DO UPDATE SET token = EXCLUDED.token \
     WHERE polylock_fence.token <= EXCLUDED.token";

/// The stored token on PostgreSQL (`$1` the name), read after a guard that affected no row.
pub const POSTGRES_READ: &str = "SELECT token FROM polylock_fence WHERE name = $1";

/// The fence table on MySQL/MariaDB.
pub const MYSQL_TABLE: &str = "CREATE TABLE IF NOT EXISTS polylock_fence (name VARCHAR(255) \
     NOT NULL PRIMARY KEY, token BIGINT NOT NULL) ENGINE=InnoDB";

/// The guard on MySQL/MariaDB, first statement (`?` the name, then the token): the row, locked
/// for the transaction, raised to the larger of the stored token and this one.
pub const MYSQL_GUARD: &str = "INSERT INTO polylock_fence (name, token) VALUES (?, ?) \
     ON DUPLICATE KEY UPDATE token = GREATEST(token, VALUES(token))";

/// The guard on MySQL/MariaDB, second statement (`?` the name): the stored token, read locking
/// (the latest committed value, not the transaction's snapshot). Larger than this token: stale.
pub const MYSQL_READ: &str = "SELECT token FROM polylock_fence WHERE name = ? FOR UPDATE";

/// Every statement of the SQL fences by name (the bindings hand them to Python's, Node's and
/// Java's guards, which send them through the application's own driver).
pub const SQL: [(&str, &str); 6] = [
    ("postgres_table", POSTGRES_TABLE),
    ("postgres_guard", POSTGRES_GUARD),
    ("postgres_read", POSTGRES_READ),
    ("mysql_table", MYSQL_TABLE),
    ("mysql_guard", MYSQL_GUARD),
    ("mysql_read", MYSQL_READ),
];

/// A name and token as a SQL fence takes them.
pub fn checked_sql(name: &str, token: u64) -> Result<(&str, i64)> {
    validate_name(name)?;
    if name.chars().count() > MAX_SQL_NAME_CHARS {
        return Err(Error::invalid(format!(
            "a SQL fence's name is at most {MAX_SQL_NAME_CHARS} characters (its table's key), \
             got {}",
            name.chars().count()
        )));
    }
    Ok((name, checked_token(token)? as i64))
}

/// The error of a guard that found a larger token.
pub fn stale(name: &str, token: u64, accepted: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::StaleToken,
        format!(
            "the fence of '{}' already accepted token {accepted}; token {token} is older: its \
             holder's lease had ended. Roll the transaction back: its writes must not commit",
            escape(name)
        ),
    )
}

#[cfg(feature = "postgres")]
fn pg_error(doing: &str, e: tokio_postgres::Error) -> Error {
    // The driver's own text of a server error is "db error": the server's words are below it.
    match e.as_db_error() {
        Some(db) => Error::new(
            ErrorKind::Backend,
            format!(
                "PostgreSQL: could not {doing}: {}: {}",
                db.severity(),
                db.message()
            ),
        ),
        None => Error::new(
            ErrorKind::Connection,
            format!("PostgreSQL: could not {doing}: {e}"),
        ),
    }
}

#[cfg(feature = "mysql")]
fn mysql_error(doing: &str, e: mysql_async::Error) -> Error {
    let kind = match &e {
        mysql_async::Error::Io(_) | mysql_async::Error::Driver(_) => ErrorKind::Connection,
        _ => ErrorKind::Backend,
    };
    Error::new(kind, format!("MySQL: could not {doing}: {e}"))
}

/// Make the fence table on PostgreSQL (once; it may run inside a transaction there).
///
/// Two sessions that make it at the same moment can collide in PostgreSQL's catalog (a unique
/// violation on `pg_type`, though `IF NOT EXISTS`); the one that lost finds the table there and
/// succeeds too.
#[cfg(feature = "postgres")]
pub async fn postgres_setup(client: &impl tokio_postgres::GenericClient) -> Result<()> {
    use tokio_postgres::error::SqlState;
    let Err(e) = client.batch_execute(POSTGRES_TABLE).await else {
        return Ok(());
    };
    let collided = matches!(e.code(), Some(c) if *c == SqlState::UNIQUE_VIOLATION || *c == SqlState::DUPLICATE_TABLE);
    if collided {
        let there = client
            .query_one("SELECT to_regclass('polylock_fence') IS NOT NULL", &[])
            .await
            .is_ok_and(|row| row.get::<_, bool>(0));
        if there {
            return Ok(());
        }
    }
    Err(pg_error("make the fence table", e))
}

/// Take the guard row of `name` with `token` in the transaction `client` runs (a
/// `tokio_postgres::Transaction`): `StaleToken` when a larger token was accepted, and then the
/// caller rolls back.
///
/// ```no_run
/// # async fn demo(pg: &mut tokio_postgres::Client, token: u64) -> polylock::Result<()> {
/// let tx = pg.transaction().await.unwrap();
/// polylock::fence::postgres(&tx, "sale", token).await?; // dropping tx rolls it back
/// tx.execute("UPDATE stock SET left_ = left_ - 1", &[]).await.unwrap();
/// tx.commit().await.unwrap();
/// # Ok(()) }
/// ```
#[cfg(feature = "postgres")]
pub async fn postgres(
    client: &impl tokio_postgres::GenericClient,
    name: &str,
    token: u64,
) -> Result<()> {
    let (name, value) = checked_sql(name, token)?;
    let rows = client
        .execute(POSTGRES_GUARD, &[&name, &value])
        .await
        .map_err(|e| pg_error("take the fence's row", e))?;
    if rows == 1 {
        return Ok(());
    }
    let row = client
        .query_one(POSTGRES_READ, &[&name])
        .await
        .map_err(|e| pg_error("read the fence's token", e))?;
    Err(stale(name, token, row.get::<_, i64>(0)))
}

/// Make the fence table on MySQL/MariaDB. DDL commits there: call it outside the transaction
/// the guard is used in (once, at setup).
#[cfg(feature = "mysql")]
pub async fn mysql_setup(conn: &mut impl mysql_async::prelude::Queryable) -> Result<()> {
    conn.query_drop(MYSQL_TABLE)
        .await
        .map_err(|e| mysql_error("make the fence table", e))
}

/// Take the guard row of `name` with `token` in the transaction `conn` runs (a
/// `mysql_async::Transaction`): `StaleToken` when a larger token was accepted, and then the
/// caller rolls back.
#[cfg(feature = "mysql")]
pub async fn mysql(
    conn: &mut impl mysql_async::prelude::Queryable,
    name: &str,
    token: u64,
) -> Result<()> {
    let (name, value) = checked_sql(name, token)?;
    conn.exec_drop(MYSQL_GUARD, (name, value))
        .await
        .map_err(|e| mysql_error("take the fence's row", e))?;
    let stored: Option<i64> = conn
        .exec_first(MYSQL_READ, (name,))
        .await
        .map_err(|e| mysql_error("read the fence's token", e))?;
    match stored {
        Some(t) if t > value => Err(stale(name, token, t)),
        Some(_) => Ok(()),
        None => Err(Error::internal(
            "the fence's row is gone within its transaction",
        )),
    }
}
