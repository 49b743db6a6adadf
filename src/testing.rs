//! Support for the library's own unit tests (compiled only for them):
//! [`alone`], which runs a test in a process of its own, and [`resident`],
//! this process's resident memory.

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

/// Resident memory of this process, bytes (`/proc/self/statm`), for the
/// tests of what the allocator and the engine keep or hand back.
#[cfg(target_os = "linux")]
pub(crate) fn resident() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
    statm.split(' ').nth(1).and_then(|p| p.parse::<usize>().ok()).expect("resident pages") * 4096
}
