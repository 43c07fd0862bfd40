//! `lab`: the lab's commands; `cargo xtask demo|sim|calibrate|experiment|testbed|peers` runs it.

fn main() -> std::process::ExitCode {
    mpquic_lab::main()
}
