//! Fenced writes on Redis: the resource's own commands run in one script with the token check.
//!
//! | key                          | content |
//! |------------------------------|---------|
//! | `polylock_fence:{<name>}`    | string integer: the largest fencing token accepted for `<name>` |
//!
//! The key has the name's hash tag (or the name's own tag), so in a Cluster it is in the lock's
//! slot, and the commands' keys must be too.

use std::sync::Arc;

use async_trait::async_trait;
use redis::{Script, Value};

use super::{map_err, prefixed, RedisConn};
use crate::backend::FenceOps;
use crate::model::error::{Error, ErrorKind, Result};
use crate::model::outcome::Reply;
use crate::model::shown::escape;

fn fence_key(name: &str) -> String {
    prefixed("polylock_fence", name)
}

/// A reply of a command the script ran, as polylock gives it back.
fn reply(v: Value) -> Reply {
    match v {
        Value::Nil => Reply::Nil,
        Value::Int(n) => Reply::Int(n),
        Value::BulkString(b) => Reply::Bytes(b),
        Value::SimpleString(s) => Reply::Status(s),
        Value::Okay => Reply::Status("OK".into()),
        Value::Array(items) | Value::Set(items) => {
            Reply::Array(items.into_iter().map(reply).collect())
        }
        Value::Map(pairs) => Reply::Array(
            pairs
                .into_iter()
                .flat_map(|(k, v)| [reply(k), reply(v)])
                .collect(),
        ),
        Value::Boolean(b) => Reply::Int(b.into()),
        Value::Double(d) => Reply::Bytes(d.to_string().into_bytes()),
        Value::VerbatimString { text, .. } => Reply::Bytes(text.into_bytes()),
        other => Reply::Bytes(format!("{other:?}").into_bytes()),
    }
}

/// The fence of one client.
pub(crate) struct RedisFence {
    conn: Arc<RedisConn>,
    write: Script,
}

impl RedisFence {
    pub(crate) fn new(conn: Arc<RedisConn>) -> RedisFence {
        RedisFence {
            conn,
            write: Script::new(include_str!("lua/fence/write.lua")),
        }
    }
}

#[async_trait]
impl FenceOps for RedisFence {
    /// Not retried after an error: the commands may have run.
    async fn write(&self, name: &str, token: u64, commands: &[Vec<Vec<u8>>]) -> Result<Vec<Reply>> {
        let mut inv = self.write.key(fence_key(name));
        inv.arg(token.to_string()).arg(commands.len());
        for c in commands {
            inv.arg(c.len());
            for a in c {
                inv.arg(a.as_slice());
            }
        }
        let answer: Value = self.conn.invoke(&inv).await.map_err(|e| {
            let text = e.to_string();
            if text.contains("non local key") || text.contains("hash to the same slot") {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "Redis Cluster: a fenced write's keys must be in its fence's slot: give \
                         them the name's hash tag ({{{}}}) ({text})",
                        escape(name)
                    ),
                )
            } else {
                map_err(e, "run the fenced write")
            }
        })?;
        let Value::Array(mut parts) = answer else {
            return Err(Error::internal(format!(
                "the fenced write answered {answer:?}"
            )));
        };
        let (Some(second), Some(first)) = (parts.pop(), parts.pop()) else {
            return Err(Error::internal("the fenced write answered too little"));
        };
        match (first, second) {
            (Value::Int(1), Value::Array(replies)) => Ok(replies.into_iter().map(reply).collect()),
            (Value::Int(0), Value::BulkString(top)) => Err(Error::new(
                ErrorKind::StaleToken,
                format!(
                    "the fence of '{}' already accepted token {}; token {token} is older: its \
                     holder's lease had ended, and nothing of the write ran",
                    escape(name),
                    String::from_utf8_lossy(&top)
                ),
            )),
            (a, b) => Err(Error::internal(format!(
                "the fenced write answered {a:?}, {b:?}"
            ))),
        }
    }

    async fn accepted(&self, name: &str) -> Result<Option<u64>> {
        let v: Option<String> = self
            .conn
            .query(
                redis::cmd("GET").arg(fence_key(name)).clone(),
                "read the fence's token",
            )
            .await?;
        v.map(|t| {
            t.parse::<u64>().map_err(|_| {
                Error::new(
                    ErrorKind::Backend,
                    format!("the fence's key holds {t:?}, not a token"),
                )
            })
        })
        .transpose()
    }
}
