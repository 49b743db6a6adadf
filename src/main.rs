//! The `meshcheck` binary: a thin front over the library's CLI.

fn main() {
    std::process::exit(meshcheck::cli::main());
}
