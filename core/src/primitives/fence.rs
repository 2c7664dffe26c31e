//! The fence: the resource's side of fencing tokens, where the resource is the lock server's own
//! store (Redis). A write carries the token of the hold it is made under; the fence runs it only
//! if no larger token was accepted for the name before, atomically with the write, so a holder
//! whose lease ended (a pause, a partition) cannot write after the next holder did.

use std::sync::Arc;

use crate::backend::FenceOps;
use crate::hold::ClientCore;
use crate::model::error::{Error, Result};
use crate::model::outcome::Reply;

/// Most commands in one fenced write.
pub const MAX_COMMANDS: usize = 1_000;
/// Most arguments of one command of a fenced write (its name included).
pub const MAX_ARGUMENTS: usize = 4_096;
/// Most bytes in all the arguments of one fenced write.
pub const MAX_WRITE_BYTES: usize = 64 << 20;

/// A fence handle: fenced writes to one name's data. Cheap to clone.
#[derive(Clone)]
pub struct Fence {
    core: Arc<ClientCore>,
    name: Arc<str>,
    ops: Arc<dyn FenceOps>,
}

impl std::fmt::Debug for Fence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fence").field("name", &self.name).finish()
    }
}

/// A fencing token as a resource accepts it: at least 1 (0 is what a lock without tokens
/// reports) and within a signed 64-bit integer (a SQL `BIGINT`).
pub fn checked_token(token: u64) -> Result<u64> {
    if token == 0 {
        return Err(Error::invalid(
            "fencing token 0 is no token (a hold without fencing tokens reports 0): pass the \
             token of the hold the write is made under",
        ));
    }
    if token > i64::MAX as u64 {
        return Err(Error::invalid(format!(
            "fencing token {token} is larger than any token polylock gives out (at most {})",
            i64::MAX
        )));
    }
    Ok(token)
}

fn checked_commands(commands: &[Vec<Vec<u8>>]) -> Result<()> {
    if commands.is_empty() {
        return Err(Error::invalid(
            "a fenced write needs at least one command (each a list: the command's name, then \
             its arguments)",
        ));
    }
    if commands.len() > MAX_COMMANDS {
        return Err(Error::invalid(format!(
            "a fenced write runs at most {MAX_COMMANDS} commands, got {}",
            commands.len()
        )));
    }
    let mut bytes = 0usize;
    for (i, c) in commands.iter().enumerate() {
        if c.is_empty() || c[0].is_empty() {
            return Err(Error::invalid(format!(
                "command {i} of the fenced write is empty: give the command's name, then its \
                 arguments"
            )));
        }
        if c.len() > MAX_ARGUMENTS {
            return Err(Error::invalid(format!(
                "command {i} of the fenced write has {} arguments; the limit is {MAX_ARGUMENTS}",
                c.len()
            )));
        }
        bytes = bytes.saturating_add(c.iter().map(Vec::len).sum());
    }
    if bytes > MAX_WRITE_BYTES {
        return Err(Error::invalid(format!(
            "a fenced write's arguments are {bytes} bytes; the limit is {MAX_WRITE_BYTES}"
        )));
    }
    Ok(())
}

impl Fence {
    pub(crate) fn new(core: Arc<ClientCore>, name: &str) -> Result<Fence> {
        let ops = core.backend.fence_ops()?;
        Ok(Fence {
            core,
            name: Arc::from(name),
            ops,
        })
    }

    /// The fence's name: the lock's whose tokens it compares.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Run `commands` (each the command's name and its arguments, e.g. `["DECR", "stock"]`) in
    /// one atomic step if `token` is not smaller than the largest token this fence accepted,
    /// recording `token` as accepted; their replies, in order. A smaller token fails with
    /// `StaleToken` and nothing runs. The same token may write any number of times.
    ///
    /// The commands run in a Lua script on the server that holds the fence's key
    /// (`polylock_fence:{<name>}`): in a Redis Cluster their keys must be in its slot (give
    /// them the hash tag `{<name>}`); a key elsewhere fails with `InvalidArgument`. As in a
    /// `MULTI`/`EXEC` transaction, a command that fails (a wrong type, an unknown command)
    /// fails the call with `Backend` after the commands before it ran.
    pub async fn write(&self, token: u64, commands: &[Vec<Vec<u8>>]) -> Result<Vec<Reply>> {
        self.core.check_usable()?;
        let token = checked_token(token)?;
        checked_commands(commands)?;
        self.ops.write(&self.name, token, commands).await
    }

    /// The largest token this fence accepted, if any.
    pub async fn accepted(&self) -> Result<Option<u64>> {
        self.core.check_usable()?;
        self.ops.accepted(&self.name).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(args: &[&str]) -> Vec<Vec<u8>> {
        args.iter().map(|a| a.as_bytes().to_vec()).collect()
    }

    #[test]
    fn tokens_outside_what_a_lock_gives_out_are_refused() {
        assert!(checked_token(0).is_err());
        assert_eq!(checked_token(1).unwrap(), 1);
        assert_eq!(checked_token(i64::MAX as u64).unwrap(), i64::MAX as u64);
        assert!(checked_token(i64::MAX as u64 + 1).is_err());
    }

    #[test]
    fn empty_or_oversized_writes_are_refused() {
        assert!(checked_commands(&[]).is_err());
        assert!(checked_commands(&[vec![]]).is_err());
        assert!(checked_commands(&[cmd(&["", "k"])]).is_err());
        assert!(checked_commands(&[cmd(&["DECR", "stock"])]).is_ok());
        let many = vec![cmd(&["PING"]); MAX_COMMANDS + 1];
        assert!(checked_commands(&many).is_err());
        let wide = vec![vec![b"x".to_vec(); MAX_ARGUMENTS + 1]];
        assert!(checked_commands(&wide).is_err());
        let big = vec![vec![
            b"SET".to_vec(),
            b"k".to_vec(),
            vec![0; MAX_WRITE_BYTES],
        ]];
        assert!(checked_commands(&big).is_err());
    }
}
