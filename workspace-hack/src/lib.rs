//! No code: this crate only unifies dependency features across the workspace (see Cargo.toml).
