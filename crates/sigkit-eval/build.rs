//! corpus.rs builds the repository's corpus/ into the library
//! (include_dir): rebuild when a flow changes.
fn main() {
    println!("cargo:rerun-if-changed=../../corpus");
}
