//! Links the addon the way Node expects.

fn main() {
    napi_build::setup();
}
