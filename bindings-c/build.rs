//! Writes include/polylock.h from the Rust sources with cbindgen (pinned in Cargo.toml).
//! The header is committed; CI rebuilds and runs `git diff --exit-code include/polylock.h`.

fn main() {
    let crate_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let version = std::env::var("CARGO_PKG_VERSION").unwrap();
    let mut parts = version.split(['.', '-']);
    let mut next = || parts.next().unwrap_or("0").to_string();
    let (major, minor, patch) = (next(), next(), next());
    let mut config = cbindgen::Config::from_file(format!("{crate_dir}/cbindgen.toml"))
        .expect("bindings-c/cbindgen.toml");
    config.after_includes = Some(format!(
        "\n/* The version of polylock this header belongs to (it matches polylock_version()). */\n\
         #define POLYLOCK_VERSION \"{version}\"\n\
         #define POLYLOCK_VERSION_MAJOR {major}\n\
         #define POLYLOCK_VERSION_MINOR {minor}\n\
         #define POLYLOCK_VERSION_PATCH {patch}\n"
    ));
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    match cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
    {
        Ok(bindings) => {
            bindings.write_to_file(format!("{crate_dir}/../include/polylock.h"));
        }
        Err(e) => panic!("cbindgen failed: {e}"),
    }
}
