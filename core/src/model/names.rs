//! Names of locks and other primitives, checked the same way for every backend.

use super::error::{Error, Result};

/// Longest accepted lock name, in bytes.
pub const MAX_NAME_LEN: usize = 64 * 1024;

/// Validate a lock name (shared by every backend; a backend may add rules of its own, such as
/// ZooKeeper's path syntax).
pub fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid("lock name must not be empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(Error::invalid(format!(
            "lock name is {} bytes long; the limit is {MAX_NAME_LEN}",
            name.len()
        )));
    }
    if name.contains('\0') {
        return Err(Error::invalid("lock name must not contain NUL bytes"));
    }
    Ok(())
}
