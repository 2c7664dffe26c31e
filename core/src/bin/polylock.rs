//! `polylock`: run a command under a distributed lock, inspect a lock, or force it open (see
//! `polylock --help`, and the library's `cli` module, which is the whole command).

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(polylock::cli::main(std::env::args_os()))
}
