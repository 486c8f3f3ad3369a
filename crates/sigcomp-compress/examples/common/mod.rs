//! Shared by the examples.

/// The first `n` messages of a flow directory (`NN-<ue|pcscf>-<name>.sip`,
/// in file order), each with whether the UE sends it.
pub fn first_messages(dir: &str, n: usize) -> Vec<(bool, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("flow directory")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sip"))
        .collect();
    files.sort();
    files
        .iter()
        .take(n)
        .map(|p| {
            (
                p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.contains("-ue-")),
                std::fs::read(p).expect("message"),
            )
        })
        .collect()
}
