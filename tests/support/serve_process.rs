//! `meshcheck serve` as a child process, the way an operator runs it: the
//! command on a data folder ([`serve_command`]), started and its address
//! read from its "meshcheck serve listening" log line ([`start`]), the admin
//! listener's from "meshcheck metrics listening" when it has one
//! ([`Served::metrics_addr`]), its log
//! lines on a channel, stopped with SIGTERM ([`Served::stop`]); and accounts
//! made with `meshcheck accounts create --json` ([`create_account`]). Used by
//! the tests that drive the binary (tests/faults.rs, tests/serve.rs,
//! tests/serve_media.rs) and by the soak benchmark.

use super::util::bin;
use serde_json::Value;
use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// An account made through the CLI.
#[derive(Debug, Clone)]
pub struct Account {
    /// `acct_...`.
    pub id: String,
    /// Its live key, shown once.
    pub key: String,
}

/// `meshcheck accounts create --plan PLAN --json` on `data_dir`, with
/// `extra` arguments (`--email`, ...).
pub fn create_account(data_dir: &Path, plan: &str, extra: &[&str]) -> Result<Account, String> {
    let out = bin()
        .args(["accounts", "create", "--plan", plan, "--json"])
        .args(extra)
        .arg("--data-dir")
        .arg(data_dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run meshcheck accounts create: {e}"))?;
    if !out.status.success() {
        return Err(format!("meshcheck accounts create: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let v: Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("meshcheck accounts create --json: {e}"))?;
    match (v["account_id"].as_str(), v["api_key"].as_str()) {
        (Some(id), Some(key)) => Ok(Account { id: id.into(), key: key.into() }),
        _ => Err(format!("meshcheck accounts create --json printed no account_id or api_key: {v}")),
    }
}

/// `meshcheck serve` on `data_dir`: a free port on 127.0.0.1, JSON logs on
/// stderr (piped), standard input and output closed. Add arguments and
/// environment, then [`start`] it.
pub fn serve_command(data_dir: &Path) -> Command {
    let mut cmd = bin();
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--log-format", "json", "--data-dir"])
        .arg(data_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

/// A started `meshcheck serve`.
#[derive(Debug)]
pub struct Served {
    /// The process.
    pub child: Child,
    /// Where it listens: `127.0.0.1:PORT`.
    pub addr: String,
    /// Its log lines up to the address, that line included.
    pub early: Vec<String>,
    /// Its later log lines, until it closes its standard error.
    pub logs: Receiver<String>,
}

/// Spawns `cmd` (a [`serve_command`]) and waits up to `wait` for its
/// address. When the address does not come the process is killed and the
/// error holds the log lines seen.
pub fn start(mut cmd: Command, wait: Duration) -> Result<Served, String> {
    let mut child = cmd.spawn().map_err(|e| format!("cannot start meshcheck serve: {e}"))?;
    let Some(stderr) = child.stderr.take() else {
        let _ = child.kill();
        let _ = child.wait();
        return Err("meshcheck serve's standard error is not piped".into());
    };
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        // Read to the end even when nobody listens, so the server never
        // blocks on a full pipe.
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + wait;
    let mut early = Vec::new();
    while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        let addr = listening(&line, "meshcheck serve listening");
        early.push(line);
        if let Some(addr) = addr {
            return Ok(Served { child, addr, early, logs: rx });
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    Err(format!("meshcheck serve did not announce its address within {} s; its log: {early:?}", wait.as_secs()))
}

/// The address of a JSON log line whose message is `message` ("meshcheck
/// serve listening", "meshcheck metrics listening").
fn listening(line: &str, message: &str) -> Option<String> {
    let v: Value = serde_json::from_str(line).ok()?;
    let fields = &v["fields"];
    (fields["message"] == message).then(|| fields["addr"].as_str().map(String::from))?
}

impl Served {
    /// Where the admin listener (`--metrics-addr`) serves, from its
    /// "meshcheck metrics listening" line, logged before the main
    /// listener's; `None` without one (or once the logs were taken).
    pub fn metrics_addr(&self) -> Option<String> {
        self.early.iter().find_map(|l| listening(l, "meshcheck metrics listening"))
    }

    /// The process id.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Its log lines, the early ones first, until it closes its standard
    /// error (after it exits); taken: a second call yields none.
    pub fn take_logs(&mut self) -> impl Iterator<Item = String> + Send + 'static {
        let (_, closed) = mpsc::channel();
        let later = std::mem::replace(&mut self.logs, closed);
        std::mem::take(&mut self.early).into_iter().chain(later)
    }

    /// SIGTERM, then waits up to `within` for the exit; past that it is
    /// killed and the answer is an error.
    pub fn stop(&mut self, within: Duration) -> Result<ExitStatus, String> {
        // SAFETY: signalling the child process this helper started.
        unsafe { libc::kill(self.pid(), libc::SIGTERM) };
        let deadline = Instant::now() + within;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(format!("did not stop within {} s of SIGTERM (killed)", within.as_secs()));
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// SIGKILL (a crash: nothing is drained), then reaps it.
    pub fn kill9(&mut self) {
        // SAFETY: signalling the child process this helper started.
        unsafe { libc::kill(self.pid(), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}
