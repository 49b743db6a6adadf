//! Support for the library's own unit tests (compiled only for them):
//! [`alone`], which runs a test in a process of its own.

/// Runs the test `name` (its path in this test binary) in a process of its
/// own, and returns `true` there: for tests of process-wide allocator
/// state, which other tests running beside them would disturb (a heap left
/// with free chunks, kept blocks unmapped by an engine run). In the shared
/// process it starts the other one, asserts that the test passed there,
/// and returns `false`.
pub(crate) fn alone(name: &str) -> bool {
    if std::env::var_os("MESHCHECK_TEST_ALONE").is_some() {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([name, "--exact", "--test-threads=1", "--nocapture"])
        .env("MESHCHECK_TEST_ALONE", "1")
        .output()
        .expect("run the test binary");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("1 passed"), "{text}{}", String::from_utf8_lossy(&out.stderr));
    false
}
