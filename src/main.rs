//! The `neurotex` binary: the command line of [`cli`] over the library.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
