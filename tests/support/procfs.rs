//! Processes as Linux's /proc shows them, for the benchmarks that watch
//! memory and file descriptors (benches/engine.rs, benches/render.rs,
//! benches/soak.rs): a process and its descendants ([`tree`]), the fields
//! of its status file ([`status`]), its open descriptors ([`fd_count`]).

/// `pid` and every process below it, parents before children. Children
/// are listed per thread that started them (`/proc/PID/task/TID/children`).
pub fn tree(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", out[i])) else {
            i += 1;
            continue;
        };
        for task in tasks.flatten() {
            let kids = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            out.extend(kids.split_whitespace().filter_map(|k| k.parse::<u32>().ok()));
        }
        i += 1;
    }
    out
}

/// The processes below `pid`, in pid order.
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut out = tree(pid).split_off(1);
    out.sort_unstable();
    out.dedup();
    out
}

/// The text of `/proc/PID/status`; `None` once the process is gone.
pub fn status(pid: u32) -> Option<Status> {
    std::fs::read_to_string(format!("/proc/{pid}/status")).ok().map(Status)
}

/// The open file descriptors of `pid` (entries of `/proc/PID/fd`).
pub fn fd_count(pid: u32) -> Option<i64> {
    std::fs::read_dir(format!("/proc/{pid}/fd")).ok().map(|d| d.count() as i64)
}

/// A process's status file.
#[derive(Debug, Clone)]
pub struct Status(String);

impl Status {
    /// The value of `key` (`Name`, `VmRSS`, ...), trimmed.
    pub fn field(&self, key: &str) -> Option<&str> {
        self.0.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':')).map(str::trim)
    }

    /// A field in kB (`VmRSS`, `VmHWM`) as a number of kB.
    pub fn kb(&self, key: &str) -> Option<u64> {
        self.field(key)?.split_whitespace().next()?.parse().ok()
    }
}
