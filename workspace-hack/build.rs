//! Empty: a build script is what makes cargo resolve this crate's build-dependencies, through
//! which the host-side features (syn's `fold`) are unified.
fn main() {}
