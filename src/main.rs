//! The `tidemark` binary: everything lives in the library; this maps the
//! command line to an exit code.

fn main() {
    let code = tidemark::cli::main_with_args(std::env::args().collect());
    std::process::exit(code);
}
